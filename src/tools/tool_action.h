// The `nyala` CLI's command table: every action is a (noun, verb) pair with its
// positional arguments, the flags it reads, and a function; a non-OK Status from it is
// printed as "error: ..." and exits 1.
// Actions are registered explicitly by Register*Actions() (called from main).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "nyala/client.h"
#include "tools/output.h"

namespace nyala::tools {

struct Action {
  std::string noun;
  std::string verb;
  std::string summary;             // one line
  std::string args_usage;          // e.g. "<master_addresses> <table> <key>..."
  std::vector<std::string> flags;  // names of the gflags this action reads
  int min_args = 0;
  int max_args = -1;  // -1: no limit
  std::function<Status(const std::vector<std::string>& args)> run;
  std::string details = {};  // more text for `nyala <noun> <verb> --help` (optional)
  // Instead of `run`, for an action with exit codes of its own: it prints its own
  // errors and returns the exit code.
  std::function<int(const std::vector<std::string>& args)> run_with_exit_code = {};
};

std::vector<Action>& AllActions();
void RegisterClusterActions();
void RegisterTableActions();
void RegisterServerActions();
void RegisterPerfActions();
void RegisterTabletActions();
// nyala tserver|master get_flags|set_flag (action_flags.cc).
void RegisterFlagActions();
// nyala table statistics (action_table_stats.cc).
void RegisterTableStatisticsActions();
// nyala perf table_scan (action_perf_table_scan.cc).
void RegisterPerfTableScanActions();
// nyala table add_column, drop_column, rename_column, rename_table, column_set_default,
// column_remove_default, column_set_comment, set_comment, add_range_partition,
// drop_range_partition, alter (action_table_alter.cc).
void RegisterTableAlterActions();
// nyala table copy (action_table_copy.cc).
void RegisterTableCopyActions();
// nyala tablet change_config, table set_replication_factor, tserver decommission,
// cluster rebalance (action_replicas.cc).
void RegisterReplicaActions();

// Prints "error: <message>" to stderr; returns 1.
int PrintError(const Status& s);
// A client for `masters` (comma-separated host:port), using --timeout_ms.
Result<std::shared_ptr<client::Client>> ConnectToCluster(const std::string& masters);
// --format, parsed.
Result<OutputFormat> OutputFormatFlag();
// Splits "a,b,c".
std::vector<std::string> SplitList(const std::string& s);
// True when stderr is a terminal (progress bars go there).
bool StderrIsTerminal();

}  // namespace nyala::tools
