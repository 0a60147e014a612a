// Column data types and typed cell values.
//
//  - DataType mirrors DataTypePB (common.proto) number for number; TypeInfo gives
//    each type's name and fixed width.
//  - Cell is a borrowed, trivially copyable typed value (16 bytes): absent, NULL,
//    or a value. STRING and BINARY cells point at bytes they do not own; the bytes
//    must outlive the Cell. Decoders hand out Cells pointing into their input, so
//    decoding allocates nothing per cell.
//  - Value owns its bytes (schema defaults, predicate bounds).
//
// Order (Cell::Compare) is total within one type and is the order of the key
// encoding (key_encoding.h): integers numerically, BOOL false < true, STRING and
// BINARY bytewise unsigned, FLOAT/DOUBLE numerically with two rules: -0.0 equals
// +0.0, and every NaN equals every other NaN and sorts after +infinity.
//
// STRING and BINARY differ only in name and display; STRING bytes are not checked
// for UTF-8 validity.
//
// Cells and Values are values: thread-compatible, no shared state.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "nyala/export.h"
#include "nyala/result.h"
#include "nyala/slice.h"
#include "nyala/status.h"

namespace nyala {

NYALA_EXPORT_BEGIN

enum class DataType : uint8_t {
  kUnknown = 0,
  kBool = 1,
  kInt8 = 2,
  kInt16 = 3,
  kInt32 = 4,
  kInt64 = 5,
  kFloat = 6,
  kDouble = 7,
  kString = 8,
  kBinary = 9,
  kUnixtimeMicros = 10,  // int64 microseconds since the Unix epoch
};
constexpr int kMaxDataType = 10;

struct TypeInfo {
  DataType type;
  const char* name;  // as in DataTypePB: "INT32", "UNIXTIME_MICROS"
  // Bytes of the fixed-width little-endian form; 0 for STRING and BINARY.
  int fixed_size;
  bool is_integer;  // INT8..INT64 and UNIXTIME_MICROS (held as int64_t)
  bool is_floating;
  bool is_variable_length() const { return fixed_size == 0; }
};

namespace internal {
NYALA_NO_EXPORT inline constexpr TypeInfo kTypeInfos[kMaxDataType + 1] = {
    {DataType::kUnknown, "UNKNOWN", 0, false, false},
    {DataType::kBool, "BOOL", 1, false, false},
    {DataType::kInt8, "INT8", 1, true, false},
    {DataType::kInt16, "INT16", 2, true, false},
    {DataType::kInt32, "INT32", 4, true, false},
    {DataType::kInt64, "INT64", 8, true, false},
    {DataType::kFloat, "FLOAT", 4, false, true},
    {DataType::kDouble, "DOUBLE", 8, false, true},
    {DataType::kString, "STRING", 0, false, false},
    {DataType::kBinary, "BINARY", 0, false, false},
    {DataType::kUnixtimeMicros, "UNIXTIME_MICROS", 8, true, false},
};
}  // namespace internal

// REQUIRES: `type` is a DataType enumerator (kUnknown included).
inline const TypeInfo& GetTypeInfo(DataType type) {
  return internal::kTypeInfos[static_cast<int>(type)];
}
inline const char* DataTypeName(DataType type) { return GetTypeInfo(type).name; }
inline bool IsVariableLength(DataType type) {
  return type == DataType::kString || type == DataType::kBinary;
}
// A DataTypePB number as a DataType; InvalidArgument for UNKNOWN_DATA and unknown numbers.
NYALA_NO_EXPORT Result<DataType> DataTypeFromPB(int pb_type);
// The DataTypePB number of `type`.
inline int DataTypeToPB(DataType type) { return static_cast<int>(type); }

class Cell {
 public:
  // An absent cell: no type, no value (an unset column of a Row).
  constexpr Cell() = default;

  static Cell Null(DataType type) { return Cell(type, kNullState); }
  static Cell Bool(bool v) { return MakeInt(DataType::kBool, v ? 1 : 0); }
  static Cell Int8(int8_t v) { return MakeInt(DataType::kInt8, v); }
  static Cell Int16(int16_t v) { return MakeInt(DataType::kInt16, v); }
  static Cell Int32(int32_t v) { return MakeInt(DataType::kInt32, v); }
  static Cell Int64(int64_t v) { return MakeInt(DataType::kInt64, v); }
  static Cell UnixtimeMicros(int64_t v) { return MakeInt(DataType::kUnixtimeMicros, v); }
  static Cell Float(float v) {
    Cell c(DataType::kFloat, kValueState);
    c.f_ = v;
    return c;
  }
  static Cell Double(double v) {
    Cell c(DataType::kDouble, kValueState);
    c.d_ = v;
    return c;
  }
  // `v` is borrowed. REQUIRES: v.size() < 4 GiB.
  static Cell String(Slice v) { return VarLen(DataType::kString, v); }
  static Cell Binary(Slice v) { return VarLen(DataType::kBinary, v); }
  // An integer of integer type `type` (see TypeInfo::is_integer) or BOOL.
  // REQUIRES: `v` fits the type.
  static Cell Integer(DataType type, int64_t v) { return MakeInt(type, v); }
  // REQUIRES: IsVariableLength(type).
  static Cell VarLen(DataType type, Slice v) {
    Cell c(type, kValueState);
    c.p_ = v.data();
    c.len_ = static_cast<uint32_t>(v.size());
    return c;
  }

  DataType type() const { return type_; }
  bool is_absent() const { return state_ == kAbsentState; }
  bool is_null() const { return state_ == kNullState; }
  bool has_value() const { return state_ == kValueState; }

  // Accessors. REQUIRES: has_value() and the matching type.
  bool bool_value() const { return i_ != 0; }
  int64_t int_value() const { return i_; }  // BOOL and every integer type
  float float_value() const { return f_; }
  double double_value() const { return d_; }
  Slice slice_value() const { return Slice(p_, len_); }  // STRING, BINARY

  // <0, 0, >0. Absent < NULL < any value; values by the order in the file comment.
  // REQUIRES: both cells have the same type, or one of them is absent.
  int Compare(const Cell& other) const;
  // Same type, same state and Compare() == 0.
  friend bool operator==(const Cell& a, const Cell& b) {
    return a.type_ == b.type_ && a.Compare(b) == 0;
  }

  // For messages: 42, -1.5, "abc" (non-printable bytes as \xNN), NULL, <absent>.
  std::string ToString() const;

 private:
  static constexpr uint8_t kAbsentState = 0;
  static constexpr uint8_t kNullState = 1;
  static constexpr uint8_t kValueState = 2;

  constexpr Cell(DataType type, uint8_t state) : type_(type), state_(state) {}
  static Cell MakeInt(DataType type, int64_t v) {
    Cell c(type, kValueState);
    c.i_ = v;
    return c;
  }

  union {
    int64_t i_ = 0;
    float f_;
    double d_;
    const uint8_t* p_;
  };
  uint32_t len_ = 0;
  DataType type_ = DataType::kUnknown;
  uint8_t state_ = kAbsentState;
};
static_assert(sizeof(Cell) == 16);

// A Cell that owns its bytes. Copyable and movable; cell() is valid until this
// Value is modified or destroyed.
class Value {
 public:
  Value() = default;  // absent
  explicit Value(const Cell& c) : cell_(c) {
    if (c.has_value() && IsVariableLength(c.type())) {
      bytes_.assign(c.slice_value().cdata(), c.slice_value().size());
    }
  }

  Cell cell() const {
    if (cell_.has_value() && IsVariableLength(cell_.type())) {
      return Cell::VarLen(cell_.type(), Slice(bytes_));
    }
    return cell_;
  }
  DataType type() const { return cell_.type(); }
  bool is_absent() const { return cell_.is_absent(); }
  bool is_null() const { return cell_.is_null(); }
  bool has_value() const { return cell_.has_value(); }
  std::string ToString() const { return cell().ToString(); }
  friend bool operator==(const Value& a, const Value& b) { return a.cell() == b.cell(); }

 private:
  Cell cell_;  // for STRING/BINARY only type and state are used
  std::string bytes_;
};

// Total order of the file comment for floating-point numbers.
inline int CompareFloating(double a, double b) {
  const bool a_nan = a != a, b_nan = b != b;
  if (a_nan || b_nan) return int(a_nan) - int(b_nan);
  return (a > b) - (a < b);
}

// ---- Cell value encoding: little-endian fixed width, or raw bytes for STRING and
// BINARY. Used by protobuf fields holding one value (defaults, predicates) and,
// fixed-width part, by the row-value and row-operation encodings.

// Writes the fixed-width form of `c` at `p` and returns one past its end.
// REQUIRES: c.has_value(), fixed-size type, `p` has GetTypeInfo(type).fixed_size bytes.
inline uint8_t* EncodeFixedCell(const Cell& c, uint8_t* p) {
  switch (c.type()) {
    case DataType::kBool:
    case DataType::kInt8:
      *p = static_cast<uint8_t>(c.int_value());
      return p + 1;
    case DataType::kInt16: {
      int16_t v = static_cast<int16_t>(c.int_value());
      memcpy(p, &v, 2);
      return p + 2;
    }
    case DataType::kInt32: {
      int32_t v = static_cast<int32_t>(c.int_value());
      memcpy(p, &v, 4);
      return p + 4;
    }
    case DataType::kInt64:
    case DataType::kUnixtimeMicros: {
      int64_t v = c.int_value();
      memcpy(p, &v, 8);
      return p + 8;
    }
    case DataType::kFloat: {
      float v = c.float_value();
      memcpy(p, &v, 4);
      return p + 4;
    }
    case DataType::kDouble: {
      double v = c.double_value();
      memcpy(p, &v, 8);
      return p + 8;
    }
    default:
      return p;
  }
}

// Reads a fixed-width value of `type` at `p`. A BOOL byte other than 0 and 1 is
// read as given; callers that take input from outside check it (IsValidBoolByte).
// REQUIRES: fixed-size type; GetTypeInfo(type).fixed_size readable bytes at `p`.
inline Cell DecodeFixedCell(DataType type, const uint8_t* p) {
  switch (type) {
    case DataType::kBool:
      return Cell::Integer(type, *p);
    case DataType::kInt8:
      return Cell::Integer(type, static_cast<int8_t>(*p));
    case DataType::kInt16: {
      int16_t v;
      memcpy(&v, p, 2);
      return Cell::Integer(type, v);
    }
    case DataType::kInt32: {
      int32_t v;
      memcpy(&v, p, 4);
      return Cell::Integer(type, v);
    }
    case DataType::kInt64:
    case DataType::kUnixtimeMicros: {
      int64_t v;
      memcpy(&v, p, 8);
      return Cell::Integer(type, v);
    }
    case DataType::kFloat: {
      float v;
      memcpy(&v, p, 4);
      return Cell::Float(v);
    }
    case DataType::kDouble: {
      double v;
      memcpy(&v, p, 8);
      return Cell::Double(v);
    }
    default:
      return Cell();
  }
}
inline bool IsValidBoolByte(uint8_t b) { return b <= 1; }

// Appends the cell value encoding of `c`. REQUIRES: c.has_value().
void EncodeCellValue(const Cell& c, std::string* dst);
inline std::string EncodeCellValue(const Cell& c) {
  std::string s;
  EncodeCellValue(c, &s);
  return s;
}
// Parses exactly `in` as a value of `type` into `out` (STRING/BINARY point into `in`).
// InvalidArgument on a wrong length ("value is 3 bytes, INT32 needs 4") or a BOOL
// byte other than 0 and 1.
Status DecodeCellValue(DataType type, Slice in, Cell* out);

NYALA_EXPORT_END

}  // namespace nyala
