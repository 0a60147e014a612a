#include "nyala/types.h"

#include <glog/logging.h>

#include <cstdio>

#include "common/common.pb.h"

namespace nyala {

#define NYALA_CHECK_TYPE_NUMBER(ours, pb) \
  static_assert(static_cast<int>(DataType::ours) == static_cast<int>(DataTypePB::pb))
NYALA_CHECK_TYPE_NUMBER(kUnknown, UNKNOWN_DATA);
NYALA_CHECK_TYPE_NUMBER(kBool, BOOL);
NYALA_CHECK_TYPE_NUMBER(kInt8, INT8);
NYALA_CHECK_TYPE_NUMBER(kInt16, INT16);
NYALA_CHECK_TYPE_NUMBER(kInt32, INT32);
NYALA_CHECK_TYPE_NUMBER(kInt64, INT64);
NYALA_CHECK_TYPE_NUMBER(kFloat, FLOAT);
NYALA_CHECK_TYPE_NUMBER(kDouble, DOUBLE);
NYALA_CHECK_TYPE_NUMBER(kString, STRING);
NYALA_CHECK_TYPE_NUMBER(kBinary, BINARY);
NYALA_CHECK_TYPE_NUMBER(kUnixtimeMicros, UNIXTIME_MICROS);
static_assert(kMaxDataType == DataTypePB_MAX);
#undef NYALA_CHECK_TYPE_NUMBER

Result<DataType> DataTypeFromPB(int pb_type) {
  if (pb_type <= 0 || pb_type > kMaxDataType) {
    return Status::InvalidArgument("unknown data type", std::to_string(pb_type));
  }
  return static_cast<DataType>(pb_type);
}

int Cell::Compare(const Cell& other) const {
  if (state_ != kValueState || other.state_ != kValueState) {
    return int(state_) - int(other.state_);
  }
  DCHECK(type_ == other.type_) << DataTypeName(type_) << " vs " << DataTypeName(other.type_);
  switch (type_) {
    case DataType::kFloat:
      return CompareFloating(f_, other.f_);
    case DataType::kDouble:
      return CompareFloating(d_, other.d_);
    case DataType::kString:
    case DataType::kBinary:
      return slice_value().compare(other.slice_value());
    default:
      return (i_ > other.i_) - (i_ < other.i_);
  }
}

namespace {

void AppendQuoted(Slice s, std::string* out) {
  out->push_back('"');
  for (size_t i = 0; i < s.size(); i++) {
    const uint8_t c = s[i];
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(char(c));
    } else if (c >= 0x20 && c < 0x7f) {
      out->push_back(char(c));
    } else {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\x%02x", c);
      out->append(buf);
    }
  }
  out->push_back('"');
}

}  // namespace

std::string Cell::ToString() const {
  if (state_ == kAbsentState) return "<absent>";
  if (state_ == kNullState) return "NULL";
  switch (type_) {
    case DataType::kBool:
      return i_ ? "true" : "false";
    case DataType::kFloat:
    case DataType::kDouble: {
      char buf[32];
      if (type_ == DataType::kFloat) {
        snprintf(buf, sizeof(buf), "%.9g", double(f_));
      } else {
        snprintf(buf, sizeof(buf), "%.17g", d_);
      }
      return buf;
    }
    case DataType::kString:
    case DataType::kBinary: {
      std::string out;
      AppendQuoted(slice_value(), &out);
      return out;
    }
    default:
      return std::to_string(i_);
  }
}

void EncodeCellValue(const Cell& c, std::string* dst) {
  DCHECK(c.has_value());
  if (IsVariableLength(c.type())) {
    dst->append(c.slice_value().cdata(), c.slice_value().size());
    return;
  }
  uint8_t buf[8];
  uint8_t* end = EncodeFixedCell(c, buf);
  dst->append(reinterpret_cast<const char*>(buf), end - buf);
}

Status DecodeCellValue(DataType type, Slice in, Cell* out) {
  if (type == DataType::kUnknown || static_cast<int>(type) > kMaxDataType) {
    return Status::InvalidArgument("unknown data type", std::to_string(static_cast<int>(type)));
  }
  if (IsVariableLength(type)) {
    if (in.size() > UINT32_MAX) return Status::InvalidArgument("value longer than 4 GiB");
    *out = Cell::VarLen(type, in);
    return Status::OK();
  }
  const TypeInfo& info = GetTypeInfo(type);
  if (in.size() != static_cast<size_t>(info.fixed_size)) {
    return Status::InvalidArgument("value is " + std::to_string(in.size()) + " bytes, " +
                                   info.name + " needs " + std::to_string(info.fixed_size));
  }
  if (type == DataType::kBool && !IsValidBoolByte(in[0])) {
    return Status::InvalidArgument("BOOL value byte is " + std::to_string(in[0]) +
                                   ", must be 0 or 1");
  }
  *out = DecodeFixedCell(type, in.data());
  return Status::OK();
}

}  // namespace nyala
