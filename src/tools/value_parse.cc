#include "tools/value_parse.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

namespace nyala::tools {

using nlohmann::json;

namespace {

Status BadValue(const ColumnSchema& col, std::string_view text, const char* why = nullptr) {
  std::string msg = "column '" + col.name() + "': '" + std::string(text) + "' is not a valid " +
                    DataTypeName(col.type());
  if (why) msg += std::string(" (") + why + ")";
  return Status::InvalidArgument(msg);
}

Result<Cell> IntegerCell(const ColumnSchema& col, int64_t v, std::string_view text) {
  int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  switch (col.type()) {
    case DataType::kInt8:
      lo = INT8_MIN;
      hi = INT8_MAX;
      break;
    case DataType::kInt16:
      lo = INT16_MIN;
      hi = INT16_MAX;
      break;
    case DataType::kInt32:
      lo = INT32_MIN;
      hi = INT32_MAX;
      break;
    default:
      break;
  }
  if (v < lo || v > hi) return BadValue(col, text, "out of range");
  return Cell::Integer(col.type(), v);
}

}  // namespace

Result<DataType> ParseTypeName(std::string_view name) {
  std::string upper;
  for (char c : name) upper += char(toupper(static_cast<unsigned char>(c)));
  if (upper == "TIMESTAMP") upper = "UNIXTIME_MICROS";
  for (int t = 1; t <= static_cast<int>(DataType::kUnixtimeMicros); t++) {
    if (upper == DataTypeName(static_cast<DataType>(t))) return static_cast<DataType>(t);
  }
  return Status::InvalidArgument(
      "unknown type \"" + std::string(name) +
      "\" (expected one of BOOL, INT8, INT16, INT32, INT64, FLOAT, DOUBLE, STRING, BINARY, "
      "UNIXTIME_MICROS)");
}

Result<Cell> ParseCellText(const ColumnSchema& col, std::string_view text, Arena* arena) {
  switch (col.type()) {
    case DataType::kBool:
      if (text == "true" || text == "1" || text == "TRUE" || text == "True")
        return Cell::Bool(true);
      if (text == "false" || text == "0" || text == "FALSE" || text == "False") {
        return Cell::Bool(false);
      }
      return BadValue(col, text);
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kUnixtimeMicros: {
      int64_t v = 0;
      auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (text.empty() || ec != std::errc() || p != text.data() + text.size()) {
        return BadValue(col, text, ec == std::errc::result_out_of_range ? "out of range" : nullptr);
      }
      return IntegerCell(col, v, text);
    }
    case DataType::kFloat:
    case DataType::kDouble: {
      std::string s(text);
      char* end = nullptr;
      double v = strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size()) return BadValue(col, text);
      return col.type() == DataType::kFloat ? Cell::Float(float(v)) : Cell::Double(v);
    }
    case DataType::kString:
    case DataType::kBinary:
      return Cell::VarLen(col.type(), arena->Copy(Slice(text)));
    default:
      return Status::InvalidArgument("column '" + col.name() + "' has an unknown type");
  }
}

Result<Cell> ParseCellJson(const ColumnSchema& col, const json& v, Arena* arena) {
  if (v.is_null()) {
    if (!col.is_nullable()) {
      return Status::InvalidArgument("column '" + col.name() + "' is NOT NULL but got null");
    }
    return Cell::Null(col.type());
  }
  switch (col.type()) {
    case DataType::kBool:
      if (v.is_boolean()) return Cell::Bool(v.get<bool>());
      break;
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kUnixtimeMicros:
      if (v.is_number_integer()) {
        if (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)) {
          return BadValue(col, v.dump(), "out of range");
        }
        return IntegerCell(col, v.get<int64_t>(), v.dump());
      }
      if (v.is_string()) return ParseCellText(col, v.get_ref<const std::string&>(), arena);
      break;
    case DataType::kFloat:
    case DataType::kDouble:
      if (v.is_number()) {
        double d = v.get<double>();
        return col.type() == DataType::kFloat ? Cell::Float(float(d)) : Cell::Double(d);
      }
      if (v.is_string()) return ParseCellText(col, v.get_ref<const std::string&>(), arena);
      break;
    case DataType::kString:
    case DataType::kBinary:
      if (v.is_string()) return ParseCellText(col, v.get_ref<const std::string&>(), arena);
      break;
    default:
      break;
  }
  return BadValue(col, v.dump());
}

std::string CellToText(const Cell& c) {
  if (c.is_null() || c.is_absent()) return "NULL";
  switch (c.type()) {
    case DataType::kBool:
      return c.bool_value() ? "true" : "false";
    case DataType::kFloat:
    case DataType::kDouble: {
      // The shortest text that reads back as the same value.
      const double v = c.type() == DataType::kFloat ? double(c.float_value()) : c.double_value();
      char buf[64];
      for (int prec = c.type() == DataType::kFloat ? 6 : 15; prec <= 17; prec++) {
        snprintf(buf, sizeof(buf), "%.*g", prec, v);
        if (c.type() == DataType::kFloat ? strtof(buf, nullptr) == c.float_value()
                                         : strtod(buf, nullptr) == v) {
          break;
        }
      }
      return buf;
    }
    case DataType::kString:
    case DataType::kBinary:
      return c.slice_value().ToString();
    default:
      return std::to_string(c.int_value());
  }
}

json CellToJson(const Cell& c) {
  if (c.is_null() || c.is_absent()) return nullptr;
  switch (c.type()) {
    case DataType::kBool:
      return c.bool_value();
    case DataType::kFloat:
      return double(c.float_value());
    case DataType::kDouble:
      return c.double_value();
    case DataType::kString:
    case DataType::kBinary: {
      std::string s = c.slice_value().ToString();
      // nlohmann::json throws on invalid UTF-8 at dump time; replace bad bytes.
      return json(s);
    }
    default:
      return c.int_value();
  }
}

}  // namespace nyala::tools
