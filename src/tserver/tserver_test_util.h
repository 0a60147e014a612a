// Helpers for the tablet server's tests, integration test and benchmark: the seed
// schema, rows of it, and request builders. Header-only; not part of the library.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <glog/logging.h>

#include "common/common.pb.h"
#include "common/key_encoding.h"
#include "common/row_block.h"
#include "common/row_operations.h"
#include "nyala/partition.h"
#include "nyala/row.h"
#include "nyala/schema.h"
#include "tserver/tserver.pb.h"
#include "tserver/tserver_admin.pb.h"

namespace nyala::tserver::testing {

// (key INT64, a INT32, b STRING, c STRING, d INT32); with `nullable`, c and d are
// nullable (for IS NULL tests), otherwise the benchmark's seed schema.
inline Schema SeedSchema(bool nullable = true) {
  auto s = Schema::Create(
      {ColumnSchema("key", DataType::kInt64), ColumnSchema("a", DataType::kInt32),
       ColumnSchema("b", DataType::kString), ColumnSchema("c", DataType::kString, nullable),
       ColumnSchema("d", DataType::kInt32, nullable)},
      1);
  CHECK(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

inline CreateTabletRequestPB MakeCreateTablet(const std::string& tablet_id, const Schema& schema,
                                              const std::string& table = "test_table") {
  CreateTabletRequestPB req;
  req.set_tablet_id(tablet_id);
  req.set_table_id(table + "-id");
  req.set_table_name(table);
  schema.ToPB(req.mutable_schema());
  PartitionSchema().ToPB(req.mutable_partition_schema());
  Partition().ToPB(req.mutable_partition());
  return req;
}

// The deterministic content of row `k`: a = k*3 (mod 2^31), b and c ~32 bytes, c
// NULL when k % 7 == 3 (if the schema allows), d = k % 100 (NULL when k % 11 == 5).
struct SeedRow {
  int64_t key;
  int32_t a;
  std::string b;
  std::string c;
  bool c_null;
  int32_t d;
  bool d_null;
};

inline SeedRow MakeSeedRow(int64_t k, bool nullable = true) {
  SeedRow r;
  r.key = k;
  r.a = static_cast<int32_t>(k * 3);
  r.b = "b-value-" + std::to_string(k) + "-abcdefghijklmnopqrstuvw";
  r.b.resize(32, 'x');
  r.c = "c:" + std::to_string(k * 7919) + ":0123456789abcdefghijklmnop";
  r.c.resize(32, 'y');
  r.c_null = nullable && k % 7 == 3;
  r.d = static_cast<int32_t>(k % 100);
  r.d_null = nullable && k % 11 == 5;
  return r;
}

// Sets `row` from `r` (strings borrowed from `r`).
inline void FillRow(const SeedRow& r, Row* row) {
  CHECK(row->Set(0, Cell::Int64(r.key)).ok());
  CHECK(row->Set(1, Cell::Int32(r.a)).ok());
  CHECK(row->Set(2, Cell::String(r.b)).ok());
  CHECK((r.c_null ? row->SetNull(3) : row->Set(3, Cell::String(r.c))).ok());
  CHECK((r.d_null ? row->SetNull(4) : row->Set(4, Cell::Int32(r.d))).ok());
}

inline std::string EncodedKey(const Schema& schema, int64_t k) {
  Cell c = Cell::Int64(k);
  std::string out;
  EncodeKey(schema, &c, &out);
  return out;
}

// A Write of `ops` (each an op type and a row of `schema`).
inline WriteRequestPB MakeWrite(const std::string& tablet_id, const Schema& schema,
                                const std::vector<std::pair<RowOpType, const Row*>>& ops) {
  WriteRequestPB req;
  req.set_tablet_id(tablet_id);
  schema.ToPB(req.mutable_schema());
  RowOperationsEncoder enc(&schema);
  for (const auto& [type, row] : ops) CHECK(enc.Add(type, row->view()).ok());
  enc.Finish(req.mutable_row_operations());
  return req;
}

// A Write inserting (op `type`) seed rows [first, first + n).
inline WriteRequestPB MakeSeedWrite(const std::string& tablet_id, const Schema& schema,
                                    int64_t first, int64_t n, RowOpType type = RowOpType::kInsert,
                                    bool nullable = true) {
  WriteRequestPB req;
  req.set_tablet_id(tablet_id);
  schema.ToPB(req.mutable_schema());
  RowOperationsEncoder enc(&schema);
  Row row(&schema);
  for (int64_t k = first; k < first + n; k++) {
    SeedRow r = MakeSeedRow(k, nullable);
    FillRow(r, &row);
    CHECK(enc.Add(type, row.view()).ok());
  }
  enc.Finish(req.mutable_row_operations());
  return req;
}

// Whether `cells` (a full row of the seed schema, in schema order) holds seed row `k`.
inline bool MatchesSeedRow(const Cell* cells, int64_t k, bool nullable = true) {
  SeedRow r = MakeSeedRow(k, nullable);
  if (cells[0].int_value() != r.key || cells[1].int_value() != r.a) return false;
  if (cells[2].slice_value().ToString() != r.b) return false;
  if (r.c_null != cells[3].is_null()) return false;
  if (!r.c_null && cells[3].slice_value().ToString() != r.c) return false;
  if (r.d_null != cells[4].is_null()) return false;
  if (!r.d_null && cells[4].int_value() != r.d) return false;
  return true;
}

}  // namespace nyala::tserver::testing
