#include "tools/value_parse.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "common/time_format.h"

namespace nyala::tools {

using nlohmann::json;

const char kValueFormsHelp[] =
    "Values, the same on output (table, CSV, JSON) and input (CSV, JSON Lines):\n"
    "  UNIXTIME_MICROS  ISO-8601 UTC with microseconds, e.g. 2023-11-14T22:13:21.000000Z;\n"
    "                   --timestamp_format=micros prints the integer of microseconds\n"
    "                   since 1970-01-01 UTC instead (in JSON a number). Input takes\n"
    "                   both: an integer, or YYYY-MM-DDThh:mm:ss[.ffffff] with Z or an\n"
    "                   offset (+hh:mm, -hh:mm).\n"
    "  FLOAT, DOUBLE    the shortest decimal that reads back as the same value; NaN,\n"
    "                   Infinity and -Infinity as those words, and in JSON as the\n"
    "                   strings \"NaN\", \"Infinity\", \"-Infinity\" (JSON null is SQL\n"
    "                   NULL). Input out of the type's range (1e40 for a FLOAT) is a\n"
    "                   bad input line, not infinity.\n"
    "  BINARY           in CSV and on the command line the bytes as they are; in JSON\n"
    "                   standard base64 (RFC 4648, with = padding), so any bytes\n"
    "                   survive: \"AP8=\" is the two bytes 0x00 0xff.\n"
    "  STRING           as it is (in JSON escaped; bytes that are not UTF-8 print as\n"
    "                   U+FFFD there: keep bytes in BINARY columns).\n"
    "  NULL             NULL in the table format, an empty unquoted field in CSV (\"\"\n"
    "                   is the empty string; an empty unquoted field for a NOT NULL\n"
    "                   column is a bad input line), null in JSON.\n"
    "Integers out of their type's range are bad input lines too.";

namespace {

Status BadValue(const ColumnSchema& col, std::string_view text, const std::string& why = "") {
  std::string msg = "column '" + col.name() + "': '" + std::string(text) + "' is not a valid " +
                    DataTypeName(col.type());
  if (!why.empty()) msg += " (" + why + ")";
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
  if (v < lo || v > hi) {
    return BadValue(col, text, "out of range: " + std::to_string(lo) + " to " + std::to_string(hi));
  }
  return Cell::Integer(col.type(), v);
}

std::string Lower(std::string_view s) {
  std::string out;
  for (char c : s) out += char(tolower(static_cast<unsigned char>(c)));
  return out;
}

// A finite double `v` (read from `text`) as a cell of `col` (FLOAT or DOUBLE):
// InvalidArgument when it does not fit a FLOAT.
Result<Cell> FloatingCell(const ColumnSchema& col, double v, std::string_view text) {
  if (col.type() == DataType::kDouble) return Cell::Double(v);
  const float f = static_cast<float>(v);
  if (std::isinf(f) && std::isfinite(v)) {
    return BadValue(col, text, "out of range: a FLOAT's magnitude is at most 3.4028235e+38");
  }
  if (f == 0 && v != 0) {
    return BadValue(col, text,
                    "out of range: too close to zero for a FLOAT (1.4e-45 is the "
                    "smallest magnitude above 0)");
  }
  return Cell::Float(f);
}

Result<Cell> ParseFloating(const ColumnSchema& col, std::string_view text) {
  std::string lower = Lower(text);
  const bool neg = !lower.empty() && lower[0] == '-';
  std::string_view word(lower);
  if (!word.empty() && (word[0] == '-' || word[0] == '+')) word.remove_prefix(1);
  double special = 0;
  bool is_special = true;
  if (word == "nan") {
    special = std::numeric_limits<double>::quiet_NaN();
  } else if (word == "inf" || word == "infinity") {
    special =
        neg ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  } else {
    is_special = false;
  }
  if (is_special) {
    return col.type() == DataType::kFloat ? Cell::Float(static_cast<float>(special))
                                          : Cell::Double(special);
  }
  std::string s(text);
  if (s.empty() || isspace(static_cast<unsigned char>(s[0]))) return BadValue(col, text);
  char* end = nullptr;
  errno = 0;
  const double v = strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || std::isnan(v)) return BadValue(col, text);
  if (errno == ERANGE && std::isinf(v)) {
    return BadValue(col, text,
                    col.type() == DataType::kFloat
                        ? "out of range: a FLOAT's magnitude is at most 3.4028235e+38"
                        : "out of range: a DOUBLE's magnitude is at most 1.7976931348623157e+308");
  }
  if (errno == ERANGE && v == 0) {
    return BadValue(
        col, text,
        std::string("out of range: too close to zero for a ") + DataTypeName(col.type()));
  }
  return FloatingCell(col, v, text);
}

// Days since 1970-01-01 of a proleptic Gregorian date, and back (H. Hinnant's
// algorithms, exact for every int64 second count).
int64_t DaysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int DaysInMonth(int64_t y, int m) {
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

bool LooksLikeInteger(std::string_view t) {
  size_t i = (!t.empty() && (t[0] == '-' || t[0] == '+')) ? 1 : 0;
  if (i >= t.size()) return false;
  for (; i < t.size(); i++) {
    if (!isdigit(static_cast<unsigned char>(t[i]))) return false;
  }
  return true;
}

}  // namespace

Result<TimestampFormat> ParseTimestampFormat(const std::string& s) {
  if (s == "iso8601") return TimestampFormat::kIso8601;
  if (s == "micros") return TimestampFormat::kMicros;
  return Status::InvalidArgument("--timestamp_format must be iso8601 or micros, not '" + s + "'");
}

std::string FormatTimestampMicros(int64_t micros) { return FormatUnixtimeMicros(micros); }

Result<int64_t> ParseTimestampIso8601(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("'" + std::string(text) +
                                   "' is not an ISO-8601 time like 2023-11-14T22:13:21.000000Z (" +
                                   why + ")");
  };
  size_t i = 0;
  // Reads exactly `n` digits (or, with n == 0, one or more).
  auto digits = [&](size_t n, int64_t* out) {
    const size_t begin = i;
    int64_t v = 0;
    while (i < text.size() && isdigit(static_cast<unsigned char>(text[i])) &&
           (n == 0 || i - begin < n)) {
      if (i - begin >= 9) return false;
      v = v * 10 + (text[i] - '0');
      i++;
    }
    if (i == begin || (n != 0 && i - begin != n)) return false;
    *out = v;
    return true;
  };
  auto expect = [&](char c) {
    if (i < text.size() && text[i] == c) {
      i++;
      return true;
    }
    return false;
  };
  int64_t sign = 1;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) sign = text[i++] == '-' ? -1 : 1;
  const size_t year_begin = i;
  int64_t year, month, day, hour, minute, second;
  if (!digits(0, &year) || i - year_begin < 4) return bad("the year needs at least 4 digits");
  year *= sign;
  if (!expect('-') || !digits(2, &month) || !expect('-') || !digits(2, &day)) {
    return bad("expected the date as YYYY-MM-DD");
  }
  if (!expect('T') && !expect('t') && !expect(' ')) {
    return bad("expected T and the time of day after the date");
  }
  if (!digits(2, &hour) || !expect(':') || !digits(2, &minute) || !expect(':') ||
      !digits(2, &second)) {
    return bad("expected the time of day as hh:mm:ss");
  }
  int64_t frac = 0;
  if (expect('.')) {
    const size_t begin = i;
    while (i < text.size() && isdigit(static_cast<unsigned char>(text[i]))) {
      if (i - begin >= 6) return bad("at most 6 digits of fractional seconds (microseconds)");
      frac = frac * 10 + (text[i] - '0');
      i++;
    }
    if (i == begin) return bad("expected digits after the decimal point");
    for (size_t k = i - begin; k < 6; k++) frac *= 10;
  }
  int64_t offset_secs = 0;
  if (expect('Z') || expect('z')) {
  } else if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
    const int64_t osign = text[i++] == '-' ? -1 : 1;
    int64_t oh, om;
    if (!digits(2, &oh) || !expect(':') || !digits(2, &om) || oh > 23 || om > 59) {
      return bad("expected the offset as +hh:mm or -hh:mm");
    }
    offset_secs = osign * (oh * 3600 + om * 60);
  } else {
    return bad(i == text.size() ? "no time zone: end it with Z for UTC, or an offset like +01:00"
                                : "unexpected text after the seconds");
  }
  if (i != text.size()) return bad("unexpected text after the time zone");
  if (month < 1 || month > 12) return bad("month " + std::to_string(month) + " is not 01-12");
  if (day < 1 || day > DaysInMonth(year, int(month))) {
    return bad("day " + std::to_string(day) + " is not in that month");
  }
  if (hour > 23 || minute > 59 || second > 59) return bad("the time of day is out of range");
  const __int128 secs = __int128(DaysFromCivil(year, int(month), int(day))) * 86400 + hour * 3600 +
                        minute * 60 + second - offset_secs;
  const __int128 micros = secs * 1000000 + frac;
  if (micros < std::numeric_limits<int64_t>::min() ||
      micros > std::numeric_limits<int64_t>::max()) {
    return bad("out of the range of UNIXTIME_MICROS, about years -290308 to 294247");
  }
  return static_cast<int64_t>(micros);
}

namespace {
const char kBase64Chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}  // namespace

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t n = (uint32_t(uint8_t(bytes[i])) << 16) |
                       (uint32_t(uint8_t(bytes[i + 1])) << 8) | uint8_t(bytes[i + 2]);
    out += kBase64Chars[n >> 18];
    out += kBase64Chars[(n >> 12) & 63];
    out += kBase64Chars[(n >> 6) & 63];
    out += kBase64Chars[n & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t n = uint32_t(uint8_t(bytes[i])) << 16;
    if (rest == 2) n |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    out += kBase64Chars[n >> 18];
    out += kBase64Chars[(n >> 12) & 63];
    out += rest == 2 ? kBase64Chars[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

Result<std::string> Base64Decode(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (text.size() % 4 != 0) {
    return Status::InvalidArgument("not base64: the length is not a multiple of 4 (pad with =)");
  }
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const int pad = last ? (text[i + 3] == '=') + (text[i + 2] == '=' && text[i + 3] == '=') : 0;
    uint32_t n = 0;
    for (size_t k = 0; k < 4; k++) {
      const int v = k >= 4 - size_t(pad) ? 0 : value(text[i + k]);
      if (v < 0) {
        return Status::InvalidArgument("not base64: unexpected character at offset " +
                                       std::to_string(i + k));
      }
      n = (n << 6) | uint32_t(v);
    }
    out += char(n >> 16);
    if (pad < 2) out += char((n >> 8) & 0xff);
    if (pad < 1) out += char(n & 0xff);
    // Canonical form: the bits dropped by the padding are zero.
    if ((pad == 1 && (n & 0xff) != 0) || (pad == 2 && (n & 0xffff) != 0)) {
      return Status::InvalidArgument("not base64: nonzero bits before the padding");
    }
  }
  return out;
}

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
    case DataType::kUnixtimeMicros:
      if (!LooksLikeInteger(text)) {
        auto micros = ParseTimestampIso8601(text);
        if (!micros.ok()) {
          return Status::InvalidArgument("column '" + col.name() +
                                         "': " + micros.status().message() +
                                         "; or give the microseconds since 1970-01-01 UTC");
        }
        return Cell::UnixtimeMicros(*micros);
      }
      [[fallthrough]];
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64: {
      int64_t v = 0;
      std::string_view digits = text;
      if (!digits.empty() && digits[0] == '+') digits.remove_prefix(1);
      auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
      if (digits.empty() || ec != std::errc() || p != digits.data() + digits.size()) {
        return BadValue(col, text,
                        ec == std::errc::result_out_of_range
                            ? "out of range: -9223372036854775808 to 9223372036854775807"
                            : "");
      }
      return IntegerCell(col, v, text);
    }
    case DataType::kFloat:
    case DataType::kDouble:
      return ParseFloating(col, text);
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
          return BadValue(col, v.dump(),
                          "out of range: -9223372036854775808 to 9223372036854775807");
        }
        return IntegerCell(col, v.get<int64_t>(), v.dump());
      }
      if (v.is_number_float()) {
        const double d = v.get<double>();
        if (std::isfinite(d) && d == std::trunc(d)) {
          return BadValue(col, v.dump(),
                          "out of range: -9223372036854775808 to "
                          "9223372036854775807");
        }
        return BadValue(col, v.dump(), "not an integer");
      }
      if (v.is_string()) return ParseCellText(col, v.get_ref<const std::string&>(), arena);
      break;
    case DataType::kFloat:
    case DataType::kDouble:
      if (v.is_number()) {
        const double d = v.get<double>();
        if (!std::isfinite(d)) {
          return BadValue(col, "number",
                          std::string("out of range for a ") + DataTypeName(col.type()) +
                              " (write \"Infinity\" for infinity)");
        }
        return FloatingCell(col, d, v.dump());
      }
      if (v.is_string()) return ParseCellText(col, v.get_ref<const std::string&>(), arena);
      break;
    case DataType::kString:
      if (v.is_string()) return ParseCellText(col, v.get_ref<const std::string&>(), arena);
      break;
    case DataType::kBinary:
      if (v.is_string()) {
        const std::string& s = v.get_ref<const std::string&>();
        auto bytes = Base64Decode(s);
        if (!bytes.ok()) {
          return BadValue(col, s, bytes.status().message() + "; BINARY values in JSON are base64");
        }
        return Cell::Binary(arena->Copy(Slice(*bytes)));
      }
      break;
    default:
      break;
  }
  return BadValue(col, v.dump());
}

std::string CellToText(const Cell& c, TimestampFormat ts) {
  if (c.is_null() || c.is_absent()) return "NULL";
  switch (c.type()) {
    case DataType::kBool:
      return c.bool_value() ? "true" : "false";
    case DataType::kFloat:
    case DataType::kDouble: {
      // The shortest text that reads back as the same value.
      const double v = c.type() == DataType::kFloat ? double(c.float_value()) : c.double_value();
      if (std::isnan(v)) return "NaN";
      if (std::isinf(v)) return v < 0 ? "-Infinity" : "Infinity";
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
    case DataType::kUnixtimeMicros:
      if (ts == TimestampFormat::kIso8601) return FormatTimestampMicros(c.int_value());
      return std::to_string(c.int_value());
    default:
      return std::to_string(c.int_value());
  }
}

json CellToJson(const Cell& c, TimestampFormat ts) {
  if (c.is_null() || c.is_absent()) return nullptr;
  switch (c.type()) {
    case DataType::kBool:
      return c.bool_value();
    case DataType::kFloat:
    case DataType::kDouble: {
      const double v = c.type() == DataType::kFloat ? double(c.float_value()) : c.double_value();
      // JSON has no NaN or infinity (nlohmann would print null, which is SQL NULL).
      if (!std::isfinite(v)) return CellToText(c, ts);
      return v;
    }
    case DataType::kString:
      return c.slice_value().ToString();  // invalid UTF-8 is replaced by DumpJson
    case DataType::kBinary:
      return Base64Encode(std::string_view(c.slice_value().cdata(), c.slice_value().size()));
    case DataType::kUnixtimeMicros:
      if (ts == TimestampFormat::kIso8601) return FormatTimestampMicros(c.int_value());
      return c.int_value();
    default:
      return c.int_value();
  }
}

}  // namespace nyala::tools
