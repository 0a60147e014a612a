#include "nyala/schema.h"
#include "common/result.h"

#include <algorithm>
#include <unordered_set>

#include "common/common.pb.h"

namespace nyala {

namespace {

std::string Quote(std::string_view name) {
  std::string s = "'";
  s.append(name);
  s.push_back('\'');
  return s;
}

}  // namespace

std::string ColumnSchema::ToString() const {
  std::string s = name_ + " " + DataTypeName(type_) + (is_nullable_ ? " NULLABLE" : " NOT NULL");
  if (has_default()) s += " DEFAULT " + default_.ToString();
  return s;
}

Schema::Schema(std::vector<ColumnSchema> columns, int num_key_columns, uint32_t version)
    : columns_(std::move(columns)), num_key_columns_(num_key_columns), version_(version) {
  name_to_index_.reserve(columns_.size());
  for (int i = 0; i < num_columns(); i++) {
    has_nullable_ |= columns_[i].is_nullable();
    name_to_index_.emplace(columns_[i].name(), i);
  }
}

Result<Schema> Schema::Create(std::vector<ColumnSchema> columns, int num_key_columns,
                              uint32_t version) {
  if (num_key_columns < 1) {
    return Status::InvalidArgument("schema must have at least one primary key column");
  }
  if (num_key_columns > static_cast<int>(columns.size())) {
    return Status::InvalidArgument("schema has " + std::to_string(columns.size()) +
                                   " columns, fewer than its " + std::to_string(num_key_columns) +
                                   " key columns");
  }
  if (columns.size() > kMaxColumns) {
    return Status::InvalidArgument("schema has " + std::to_string(columns.size()) +
                                   " columns, more than the maximum " +
                                   std::to_string(kMaxColumns));
  }
  std::unordered_set<std::string_view> names;
  int with_id = 0;
  for (size_t i = 0; i < columns.size(); i++) {
    const ColumnSchema& c = columns[i];
    const bool is_key = static_cast<int>(i) < num_key_columns;
    if (c.name().empty()) {
      return Status::InvalidArgument("column " + std::to_string(i) + " has an empty name");
    }
    if (c.name().size() > kMaxColumnNameLength) {
      return Status::InvalidArgument("column " + Quote(c.name().substr(0, 32)) +
                                     "...: name longer than " +
                                     std::to_string(kMaxColumnNameLength) + " bytes");
    }
    if (!names.insert(c.name()).second) {
      return Status::InvalidArgument("duplicate column name " + Quote(c.name()));
    }
    if (c.type() == DataType::kUnknown || static_cast<int>(c.type()) > kMaxDataType) {
      return Status::InvalidArgument("column " + Quote(c.name()) + " has an unknown type");
    }
    if (is_key && c.is_nullable()) {
      return Status::InvalidArgument("key column " + Quote(c.name()) + " may not be nullable");
    }
    if (c.has_default()) {
      if (is_key) {
        return Status::InvalidArgument("key column " + Quote(c.name()) +
                                       " may not have a default value");
      }
      if (c.default_value().type() != c.type()) {
        return Status::InvalidArgument("column " + Quote(c.name()) + ": default value is " +
                                       DataTypeName(c.default_value().type()) + ", column is " +
                                       DataTypeName(c.type()));
      }
      if (c.default_value().is_null() && !c.is_nullable()) {
        return Status::InvalidArgument("column " + Quote(c.name()) +
                                       ": default is NULL but the column is not nullable");
      }
    }
    if (c.has_read_default()) {
      if (is_key) {
        return Status::InvalidArgument("key column " + Quote(c.name()) +
                                       " may not have a read default");
      }
      if (c.read_default().type() != c.type() ||
          (c.read_default().is_null() && !c.is_nullable())) {
        return Status::InvalidArgument("column " + Quote(c.name()) + ": bad read default");
      }
    }
    if (c.id() != kInvalidColumnId) {
      if (c.id() < 0) {
        return Status::InvalidArgument("column " + Quote(c.name()) + " has negative id " +
                                       std::to_string(c.id()));
      }
      with_id++;
    }
  }
  // A NULL default on a nullable column means no default.
  for (ColumnSchema& c : columns) {
    if (c.default_.is_null()) c.default_ = Value();
    if (c.read_default_.is_null()) c.read_default_ = Value();
  }
  if (with_id == 0) {
    for (size_t i = 0; i < columns.size(); i++) columns[i].id_ = static_cast<int32_t>(i);
  } else {
    std::unordered_map<int32_t, const ColumnSchema*> ids;
    for (const ColumnSchema& c : columns) {
      if (c.id() == kInvalidColumnId) {
        return Status::InvalidArgument("column " + Quote(c.name()) +
                                       " has no id while other columns do");
      }
      auto [it, inserted] = ids.emplace(c.id(), &c);
      if (!inserted) {
        return Status::InvalidArgument("duplicate column id " + std::to_string(c.id()) +
                                       " (columns " + Quote(it->second->name()) + " and " +
                                       Quote(c.name()) + ")");
      }
    }
  }
  return Schema(std::move(columns), num_key_columns, version);
}

Result<Schema> Schema::FromPB(const SchemaPB& pb) {
  std::vector<ColumnSchema> columns;
  columns.reserve(pb.columns_size());
  int num_keys = 0;
  for (int i = 0; i < pb.columns_size(); i++) {
    const ColumnSchemaPB& c = pb.columns(i);
    const std::string name = c.name().empty() ? "#" + std::to_string(i) : Quote(c.name());
    if (c.is_key()) {
      if (num_keys != i) {
        return Status::InvalidArgument("key column " + name + " follows non-key column " +
                                       Quote(pb.columns(i - 1).name()) +
                                       "; key columns must come first");
      }
      num_keys++;
    }
    Result<DataType> type = DataTypeFromPB(c.type());
    if (!type.ok()) {
      return type.status().CloneAndPrepend("column " + name);
    }
    Value def;
    if (c.has_default_value()) {
      Cell cell;
      RETURN_NOT_OK_PREPEND(DecodeCellValue(*type, Slice(c.default_value()), &cell),
                            "column " + name + ": default value");
      def = Value(cell);
    }
    columns.emplace_back(c.name(), *type, c.is_nullable(), std::move(def),
                         c.has_id() ? c.id() : kInvalidColumnId);
    columns.back().set_comment(c.comment());
    if (c.has_read_default_value()) {
      Cell cell;
      RETURN_NOT_OK_PREPEND(DecodeCellValue(*type, Slice(c.read_default_value()), &cell),
                            "column " + name + ": read default");
      columns.back().set_read_default(Value(cell));
    }
  }
  return Create(std::move(columns), num_keys, pb.version());
}

void Schema::ToPB(SchemaPB* pb) const {
  pb->Clear();
  pb->set_version(version_);
  for (int i = 0; i < num_columns(); i++) {
    const ColumnSchema& c = columns_[i];
    ColumnSchemaPB* cpb = pb->add_columns();
    cpb->set_name(c.name());
    cpb->set_type(static_cast<DataTypePB>(DataTypeToPB(c.type())));
    cpb->set_is_key(is_key_column(i));
    cpb->set_is_nullable(c.is_nullable());
    if (c.has_default()) {
      EncodeCellValue(c.default_value().cell(), cpb->mutable_default_value());
    }
    if (c.id() != kInvalidColumnId) cpb->set_id(c.id());
    if (!c.comment().empty()) cpb->set_comment(c.comment());
    if (c.has_read_default()) {
      EncodeCellValue(c.read_default().cell(), cpb->mutable_read_default_value());
    }
  }
}

int Schema::FindColumn(std::string_view name) const {
  auto it = name_to_index_.find(name);
  return it == name_to_index_.end() ? -1 : it->second;
}

Result<int> Schema::ColumnIndex(std::string_view name) const {
  int idx = FindColumn(name);
  if (idx < 0) return Status::NotFound("column " + Quote(name) + " not in schema");
  return idx;
}

int Schema::FindColumnById(int32_t id) const {
  for (int i = 0; i < num_columns(); i++) {
    if (columns_[i].id() == id) return i;
  }
  return -1;
}

int32_t Schema::MaxColumnId() const {
  int32_t m = -1;
  for (const ColumnSchema& c : columns_) m = std::max(m, c.id());
  return m;
}

Result<std::vector<int>> Schema::ColumnIndexes(const std::vector<std::string>& names) const {
  std::vector<int> idxs;
  idxs.reserve(names.size());
  std::vector<bool> seen(columns_.size());
  for (const std::string& name : names) {
    ASSIGN_OR_RETURN(int idx, ColumnIndex(name));
    if (seen[idx]) return Status::InvalidArgument("column " + Quote(name) + " given twice");
    seen[idx] = true;
    idxs.push_back(idx);
  }
  return idxs;
}

Result<Schema> Schema::Project(const std::vector<std::string>& names) const {
  ASSIGN_OR_RETURN(std::vector<int> idxs, ColumnIndexes(names));
  std::vector<ColumnSchema> cols;
  cols.reserve(idxs.size());
  for (int idx : idxs) cols.push_back(columns_[idx]);
  return Schema(std::move(cols), 0, version_);
}

std::string Schema::ToString() const {
  std::string s = "(";
  for (const ColumnSchema& c : columns_) {
    s += c.ToString();
    s += ", ";
  }
  s += "PRIMARY KEY (";
  for (int i = 0; i < num_key_columns_; i++) {
    if (i > 0) s += ", ";
    s += columns_[i].name();
  }
  s += ")) version " + std::to_string(version_);
  return s;
}

}  // namespace nyala
