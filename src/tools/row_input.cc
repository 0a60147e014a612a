#include "tools/row_input.h"
#include "common/result.h"

#include <nlohmann/json.hpp>

#include "tools/output.h"
#include "tools/value_parse.h"

namespace nyala::tools {

using nlohmann::json;

Result<RowReader::Format> RowReader::FormatForPath(const std::string& path) {
  auto ends = [&](const std::string& s) {
    return path.size() >= s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0;
  };
  if (ends(".csv")) return Format::kCsv;
  if (ends(".jsonl") || ends(".json") || ends(".ndjson")) return Format::kJsonLines;
  return Status::InvalidArgument("cannot tell the format of " + path +
                                 ": name it *.csv or *.jsonl");
}

RowReader::Format RowReader::SniffFormat(FILE* in) {
  const int c = fgetc(in);
  if (c == EOF) return Format::kCsv;
  ungetc(c, in);
  return c == '[' || c == '{' ? Format::kJsonLines : Format::kCsv;
}

std::string RowReader::Where(int64_t n) const {
  return (in_array_ ? "element " : "line ") + std::to_string(n);
}

RowReader::RowReader(FILE* in, Format format, const Schema* schema)
    : in_(in), format_(format), schema_(schema) {}

int RowReader::GetChar() {
  const int c = fgetc(in_);
  if (c != EOF) {
    bytes_++;
    if (c == '\n') line_no_++;
  }
  return c;
}

Status RowReader::NextArrayElement(std::string* text) {
  text->clear();
  auto skip_space = [&] {
    int c;
    do {
      c = GetChar();
    } while (c == ' ' || c == '\t' || c == '\n' || c == '\r');
    return c;
  };
  auto fatal = [&](const std::string& why) {
    array_done_ = true;
    return Status::InvalidArgument(Where(element_no_) + ": " + why);
  };
  int c = skip_space();
  if (element_no_ > 0) {  // after an element: ',' or ']'
    if (c == ']') {
      array_done_ = true;
      c = skip_space();
      if (c != EOF) {
        element_no_++;
        return fatal("unexpected text after the end of the JSON array");
      }
      return Status::EndOfFile("end of input");
    }
    element_no_++;
    if (c == EOF) return fatal("the JSON array ends without ']' (the input is cut short)");
    if (c != ',') return fatal("expected ',' or ']' after an element of the JSON array");
    c = skip_space();
  } else {
    element_no_++;
    if (c == ']') {  // an empty array
      array_done_ = true;
      element_no_ = 0;
      return Status::EndOfFile("end of input");
    }
  }
  if (c == EOF) return fatal("the JSON array ends without ']' (the input is cut short)");
  // One value: up to the ',' or ']' at depth 0, outside strings.
  int depth = 0;
  bool in_string = false, escape = false;
  while (c != EOF) {
    if (in_string) {
      if (escape) {
        escape = false;
      } else if (c == '\\') {
        escape = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      depth++;
    } else if (c == '}' || c == ']') {
      if (depth == 0) break;  // the array's own ']'
      depth--;
    } else if (c == ',' && depth == 0) {
      break;
    }
    text->push_back(char(c));
    if (!in_string && depth == 0 && (c == '}' || c == ']')) {
      c = GetChar();
      break;
    }
    c = GetChar();
  }
  if (c == EOF && (depth > 0 || in_string)) {
    return fatal("the JSON array ends inside an element (the input is cut short)");
  }
  // Put back the character after the element for the next call.
  if (c != EOF) {
    if (c == '\n') line_no_--;
    bytes_--;
    ungetc(c, in_);
  }
  return Status::OK();
}

bool RowReader::ReadLine(std::string* line) {
  line->clear();
  int c;
  bool any = false;
  while ((c = fgetc(in_)) != EOF) {
    any = true;
    bytes_++;
    if (c == '\n') break;
    line->push_back(char(c));
  }
  if (!line->empty() && line->back() == '\r') line->pop_back();
  if (any) line_no_++;
  return any;
}

Status SplitCsvLine(const std::string& line, std::vector<std::string>* fields,
                    std::vector<bool>* quoted) {
  fields->clear();
  quoted->clear();
  size_t i = 0;
  while (true) {
    std::string f;
    bool q = false;
    if (i < line.size() && line[i] == '"') {
      q = true;
      i++;
      while (true) {
        if (i >= line.size()) return Status::InvalidArgument("unterminated quoted field");
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            f += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        f += line[i++];
      }
      if (i < line.size() && line[i] != ',') {
        return Status::InvalidArgument("unexpected text after a closing quote");
      }
    } else {
      while (i < line.size() && line[i] != ',') f += line[i++];
    }
    fields->push_back(std::move(f));
    quoted->push_back(q);
    if (i >= line.size()) break;
    i++;  // the comma
  }
  return Status::OK();
}

Status RowReader::ReadHeader() {
  std::string line;
  if (!ReadLine(&line)) return Status::EndOfFile("empty input");
  std::vector<std::string> names;
  std::vector<bool> quoted;
  Status s = SplitCsvLine(line, &names, &quoted);
  if (!s.ok()) return s.CloneAndPrepend("line 1 (header)");
  for (const auto& n : names) {
    auto idx = schema_->ColumnIndex(n);
    if (!idx.ok()) {
      return Status::InvalidArgument("line 1 (header): unknown column '" + n + "'");
    }
    csv_columns_.push_back(*idx);
  }
  header_done_ = true;
  return Status::OK();
}

Status RowReader::Next(Row* row) {
  if (format_ == Format::kCsv && !header_done_) RETURN_NOT_OK(ReadHeader());
  if (format_ == Format::kJsonLines && !sniffed_) {
    sniffed_ = true;
    int c;
    std::string space;
    while ((c = fgetc(in_)) == ' ' || c == '\t' || c == '\n' || c == '\r') space += char(c);
    if (c == '[') {
      in_array_ = true;
      bytes_ += int64_t(space.size()) + 1;
      for (char s : space) line_no_ += s == '\n';
    } else {
      // JSON Lines: give back what was read (blank lines are skipped below anyway).
      if (c != EOF) ungetc(c, in_);
      for (char s : space) line_no_ += s == '\n';
      bytes_ += int64_t(space.size());
    }
  }
  if (in_array_) {
    if (array_done_) return Status::EndOfFile("end of input");
    std::string text;
    RETURN_NOT_OK(NextArrayElement(&text));
    row->Clear();
    Status s = ParseJsonLine(text, row);
    if (!s.ok()) return Status::InvalidArgument(Where(element_no_) + ": " + s.message());
    return Status::OK();
  }
  std::string line;
  while (true) {
    if (!ReadLine(&line)) return Status::EndOfFile("end of input");
    if (line.find_first_not_of(" \t") != std::string::npos) break;  // skip blank lines
  }
  row->Clear();
  Status s = format_ == Format::kCsv ? ParseCsv(line, row) : ParseJsonLine(line, row);
  if (!s.ok())
    return Status::InvalidArgument("line " + std::to_string(line_no_) + ": " + s.message());
  return Status::OK();
}

Status RowReader::ParseCsv(const std::string& line, Row* row) {
  std::vector<std::string> fields;
  std::vector<bool> quoted;
  RETURN_NOT_OK(SplitCsvLine(line, &fields, &quoted));
  if (fields.size() != csv_columns_.size()) {
    return Status::InvalidArgument("expected " + std::to_string(csv_columns_.size()) +
                                   " fields, found " + std::to_string(fields.size()));
  }
  for (size_t i = 0; i < fields.size(); i++) {
    const int idx = csv_columns_[i];
    const ColumnSchema& col = schema_->column(idx);
    // An empty unquoted field is NULL whatever the column's type (a quoted "" is the
    // empty string): for a NOT NULL column that makes the line bad, rather than an
    // empty string or a zero quietly stored.
    if (fields[i].empty() && !quoted[i]) {
      if (!col.is_nullable()) {
        return Status::InvalidArgument("column '" + col.name() +
                                       "' is NOT NULL, and an empty unquoted field is NULL "
                                       "(\"\" is the empty string)");
      }
      RETURN_NOT_OK(row->SetNull(idx));
      continue;
    }
    ASSIGN_OR_RETURN(Cell c, ParseCellText(col, fields[i], row->arena()));
    RETURN_NOT_OK(row->Set(idx, c));
  }
  return Status::OK();
}

Status RowReader::ParseJsonLine(const std::string& line, Row* row) {
  ASSIGN_OR_RETURN(json j, ParseJson(line, in_array_ ? "the element" : "the line"));
  if (!j.is_object()) return Status::InvalidArgument("expected a JSON object");
  for (auto it = j.begin(); it != j.end(); ++it) {
    auto idx = schema_->ColumnIndex(it.key());
    if (!idx.ok()) return Status::InvalidArgument("unknown column '" + it.key() + "'");
    ASSIGN_OR_RETURN(Cell c, ParseCellJson(schema_->column(*idx), it.value(), row->arena()));
    if (c.is_null()) {
      RETURN_NOT_OK(row->SetNull(*idx));
    } else {
      RETURN_NOT_OK(row->Set(*idx, c));
    }
  }
  return Status::OK();
}

}  // namespace nyala::tools
