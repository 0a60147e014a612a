#include "common/key_encoding.h"

#include <glog/logging.h>

#include <bit>
#include <cstring>

#include "common/coding.h"

namespace nyala {

namespace {

constexpr uint32_t kSign32 = 0x80000000u;
constexpr uint64_t kSign64 = 0x8000000000000000ull;
constexpr uint32_t kCanonicalFloatNaN = 0x7fc00000u;
constexpr uint64_t kCanonicalDoubleNaN = 0x7ff8000000000000ull;

uint32_t FloatKeyBits(float v) {
  if (v != v) return kCanonicalFloatNaN ^ kSign32;
  if (v == 0) return kSign32;  // -0.0 and +0.0 alike
  uint32_t bits = std::bit_cast<uint32_t>(v);
  return (bits & kSign32) ? ~bits : bits ^ kSign32;
}
float FloatFromKeyBits(uint32_t u) {
  return std::bit_cast<float>((u & kSign32) ? u ^ kSign32 : ~u);
}
uint64_t DoubleKeyBits(double v) {
  if (v != v) return kCanonicalDoubleNaN ^ kSign64;
  if (v == 0) return kSign64;
  uint64_t bits = std::bit_cast<uint64_t>(v);
  return (bits & kSign64) ? ~bits : bits ^ kSign64;
}
double DoubleFromKeyBits(uint64_t u) {
  return std::bit_cast<double>((u & kSign64) ? u ^ kSign64 : ~u);
}

void EncodeEscaped(Slice s, std::string* dst) {
  const uint8_t* p = s.data();
  const uint8_t* end = p + s.size();
  while (p < end) {
    const void* z = memchr(p, 0, end - p);
    if (z == nullptr) {
      dst->append(reinterpret_cast<const char*>(p), end - p);
      break;
    }
    const uint8_t* zp = static_cast<const uint8_t*>(z);
    dst->append(reinterpret_cast<const char*>(p), zp - p);
    dst->append("\0\1", 2);
    p = zp + 1;
  }
  dst->append("\0\0", 2);
}

Status Truncated(DataType type) {
  return Status::Corruption(std::string("truncated key: incomplete ") + DataTypeName(type) +
                            " column");
}

Status DecodeEscaped(DataType type, Slice* in, Cell* out, Arena* arena) {
  const uint8_t* p = in->data();
  const uint8_t* end = p + in->size();
  const uint8_t* z = static_cast<const uint8_t*>(memchr(p, 0, end - p));
  if (z == nullptr || z + 1 >= end) return Truncated(type);
  if (z[1] == 0) {  // common case: no escaped zero
    *out = Cell::VarLen(type, Slice(p, z - p));
    in->remove_prefix(z + 2 - p);
    return Status::OK();
  }
  std::string buf;
  while (true) {
    if (z == nullptr || z + 1 >= end) return Truncated(type);
    buf.append(reinterpret_cast<const char*>(p), z - p);
    if (z[1] == 0) break;
    if (z[1] != 1) {
      return Status::Corruption("bad escape in key: 0x00 followed by " + std::to_string(z[1]));
    }
    buf.push_back('\0');
    p = z + 2;
    z = static_cast<const uint8_t*>(memchr(p, 0, end - p));
  }
  in->remove_prefix(z + 2 - in->data());
  *out = Cell::VarLen(type, arena->Copy(Slice(buf)));
  return Status::OK();
}

}  // namespace

void EncodeKeyCell(const Cell& c, bool is_last, std::string* dst) {
  DCHECK(c.has_value());
  switch (c.type()) {
    case DataType::kBool:
      dst->push_back(c.int_value() ? 1 : 0);
      return;
    case DataType::kInt8:
      dst->push_back(static_cast<char>(static_cast<uint8_t>(c.int_value()) ^ 0x80));
      return;
    case DataType::kInt16: {
      uint16_t u = static_cast<uint16_t>(c.int_value()) ^ 0x8000;
      char b[2] = {char(u >> 8), char(u)};
      dst->append(b, 2);
      return;
    }
    case DataType::kInt32:
      PutFixed32BE(dst, static_cast<uint32_t>(c.int_value()) ^ kSign32);
      return;
    case DataType::kInt64:
    case DataType::kUnixtimeMicros:
      PutFixed64BE(dst, static_cast<uint64_t>(c.int_value()) ^ kSign64);
      return;
    case DataType::kFloat:
      PutFixed32BE(dst, FloatKeyBits(c.float_value()));
      return;
    case DataType::kDouble:
      PutFixed64BE(dst, DoubleKeyBits(c.double_value()));
      return;
    case DataType::kString:
    case DataType::kBinary:
      if (is_last) {
        dst->append(c.slice_value().cdata(), c.slice_value().size());
      } else {
        EncodeEscaped(c.slice_value(), dst);
      }
      return;
    case DataType::kUnknown:
      break;
  }
  LOG(DFATAL) << "EncodeKeyCell on type " << static_cast<int>(c.type());
}

Status DecodeKeyCell(DataType type, bool is_last, Slice* in, Cell* out, Arena* arena) {
  if (IsVariableLength(type)) {
    if (is_last) {
      *out = Cell::VarLen(type, *in);
      in->remove_prefix(in->size());
      return Status::OK();
    }
    return DecodeEscaped(type, in, out, arena);
  }
  const int size = GetTypeInfo(type).fixed_size;
  if (size == 0) return Status::Corruption("key column of unknown type");
  if (in->size() < static_cast<size_t>(size)) return Truncated(type);
  const uint8_t* p = in->data();
  switch (type) {
    case DataType::kBool:
      if (!IsValidBoolByte(p[0])) {
        return Status::Corruption("bad BOOL byte in key: " + std::to_string(p[0]));
      }
      *out = Cell::Bool(p[0] != 0);
      break;
    case DataType::kInt8:
      *out = Cell::Int8(static_cast<int8_t>(p[0] ^ 0x80));
      break;
    case DataType::kInt16:
      *out = Cell::Int16(static_cast<int16_t>(((uint16_t(p[0]) << 8) | p[1]) ^ 0x8000));
      break;
    case DataType::kInt32:
      *out = Cell::Int32(static_cast<int32_t>(DecodeFixed32BE(p) ^ kSign32));
      break;
    case DataType::kInt64:
    case DataType::kUnixtimeMicros:
      *out = Cell::Integer(type, static_cast<int64_t>(DecodeFixed64BE(p) ^ kSign64));
      break;
    case DataType::kFloat:
      *out = Cell::Float(FloatFromKeyBits(DecodeFixed32BE(p)));
      break;
    case DataType::kDouble:
      *out = Cell::Double(DoubleFromKeyBits(DecodeFixed64BE(p)));
      break;
    default:
      return Status::Corruption("key column of unknown type");
  }
  in->remove_prefix(size);
  return Status::OK();
}

void EncodeKey(const Schema& schema, const Cell* cells, std::string* dst) {
  const int n = schema.num_key_columns();
  for (int i = 0; i < n; i++) EncodeKeyCell(cells[i], i == n - 1, dst);
}

Status DecodeKey(const Schema& schema, Slice key, Cell* cells, Arena* arena) {
  const int n = schema.num_key_columns();
  for (int i = 0; i < n; i++) {
    const ColumnSchema& col = schema.column(i);
    Status s = DecodeKeyCell(col.type(), i == n - 1, &key, &cells[i], arena);
    if (!s.ok()) [[unlikely]] {
      return s.CloneAndPrepend("key column '" + col.name() + "'");
    }
  }
  if (!key.empty()) {
    return Status::Corruption(std::to_string(key.size()) + " bytes after the last key column");
  }
  return Status::OK();
}

std::string PrefixSuccessor(Slice prefix) {
  std::string s = prefix.ToString();
  while (!s.empty() && static_cast<uint8_t>(s.back()) == 0xff) s.pop_back();
  if (!s.empty()) s.back() = static_cast<char>(static_cast<uint8_t>(s.back()) + 1);
  return s;
}

}  // namespace nyala
