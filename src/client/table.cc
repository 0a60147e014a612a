// Table: operations and predicates; WriteOperation.
#include "common/result.h"
#include "nyala/client.h"

namespace nyala::client {

Table::Table(std::shared_ptr<Client> client, std::string name, std::string id, Schema schema,
             PartitionSchema partition_schema, int num_replicas)
    : client_(std::move(client)),
      name_(std::move(name)),
      id_(std::move(id)),
      schema_(std::move(schema)),
      partition_schema_(std::move(partition_schema)),
      num_replicas_(num_replicas) {
  std::vector<std::string> names;
  for (const ColumnSchema& c : schema_.columns()) names.push_back(c.name());
  Result<Schema> all = schema_.Project(names);
  CHECK(all.ok()) << all.status().ToString();
  full_projection_ = std::make_shared<const Schema>(std::move(all).value());
}

Table::~Table() = default;

std::unique_ptr<WriteOperation> Table::NewOp(RowOpType type) const {
  return std::unique_ptr<WriteOperation>(new WriteOperation(shared_from_this(), type));
}

Result<ColumnPredicate> Table::NewComparisonPredicate(std::string_view column,
                                                      ColumnPredicate::CompareOp op,
                                                      const Cell& value) const {
  ASSIGN_OR_RETURN(int idx, schema_.ColumnIndex(column));
  return ColumnPredicate::Comparison(schema_, idx, op, value);
}

Result<ColumnPredicate> Table::NewInListPredicate(std::string_view column,
                                                  const std::vector<Cell>& values) const {
  ASSIGN_OR_RETURN(int idx, schema_.ColumnIndex(column));
  return ColumnPredicate::InList(schema_, idx, values);
}

Result<ColumnPredicate> Table::NewIsNullPredicate(std::string_view column) const {
  ASSIGN_OR_RETURN(int idx, schema_.ColumnIndex(column));
  return ColumnPredicate::IsNull(schema_, idx);
}

Result<ColumnPredicate> Table::NewIsNotNullPredicate(std::string_view column) const {
  ASSIGN_OR_RETURN(int idx, schema_.ColumnIndex(column));
  return ColumnPredicate::IsNotNull(schema_, idx);
}

WriteOperation::WriteOperation(std::shared_ptr<const Table> table, RowOpType type)
    : table_(std::move(table)), type_(type), row_(&table_->schema()) {}

WriteOperation::~WriteOperation() = default;

std::string WriteOperation::ToString() const {
  return std::string(RowOpTypeName(type_)) + " " + row_.ToString();
}

}  // namespace nyala::client
