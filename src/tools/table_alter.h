// The JSON form of an alteration taken by `nyala table alter` and the Python client's
// alter_table(): an array of steps (or {"steps": [...]}), each an object with one key,
// the step's verb; kAlterStepsHelp documents them. Errors name the step by its path
// ("steps[2].add_column.type: ...").
//
// Thread-compatible functions of their arguments.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "common/result.h"
#include "nyala/client.h"

namespace nyala::tools {

// Adds the steps of `steps` to `alterer`, reading column types and range columns from
// `table` (the table as it is now). `*new_name` gets the name a rename_table step sets.
Status AddAlterSteps(const client::Table& table, const nlohmann::json& steps,
                     client::TableAlterer* alterer, std::string* new_name);

// The column `name` of `table` (NotFound naming it otherwise).
Result<ColumnSchema> ColumnOf(const client::Table& table, const std::string& name);
// A range bound: a row of `table` with its range columns from `values`, a JSON array
// of their values ([] = unbounded). Errors name `what`.
Result<Row> BoundRow(const client::Table& table, const nlohmann::json& values,
                     const std::string& what);

// Every step, its fields and the rules, for people (`nyala table alter --help`).
extern const char kAlterStepsHelp[];

}  // namespace nyala::tools
