// PlanAlterTable: what an AlterTable request does to a table, decided from the
// table's catalog entry and the request alone (no I/O, no locks): the entry after
// the alteration (schema with a new version, name, comment, next column id) and the
// range partitions it adds and drops. The catalog manager writes the plan to the sys
// catalog and carries the new schema to the tablets (catalog_manager_alter.cc).
//
// Rules (Kudu's): the primary key and column types never change; an added column is
// nullable or has a default, which rows already stored read as its value (its read
// default); a dropped column's id is never reused, so a column added again under its
// name starts empty; key columns cannot be dropped or renamed (the partitioning names
// them); a range added must not overlap one the table has, a range dropped must be one
// exactly. Steps apply in order, each to what the ones before it left, and the request
// applies as a whole or not at all.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "master/master.pb.h"
#include "nyala/partition.h"

namespace nyala::master {

// InvalidArgument unless `name` is a usable table name (not empty, at most 256 bytes,
// no control characters).
Status ValidateTableName(const std::string& name);

struct AlterPlan {
  SysTableEntryPB table;        // the table's entry after the alteration
  bool schema_changed = false;  // a new schema version (or name) for the tablets
  std::vector<Partition> add_partitions;  // the partitions of the ranges added
  // The ranges dropped, as encoded range keys [start, end) ("" = unbounded).
  std::vector<std::pair<std::string, std::string>> drop_ranges;
};

// `ranges` are the table's current range partitions ([range_key_start,
// range_key_end), each once). On failure `*code` says which MasterErrorPB code the
// error is, and the message names the step and what to do.
Result<AlterPlan> PlanAlterTable(const SysTableEntryPB& table, const AlterTableRequestPB& req,
                                 std::vector<std::pair<std::string, std::string>> ranges,
                                 MasterErrorPB::Code* code);

}  // namespace nyala::master
