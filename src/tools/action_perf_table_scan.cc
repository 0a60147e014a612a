// nyala perf table_scan: scans a table with --num_threads threads, each taking the
// next tablet not yet scanned (one Scanner per tablet, restricted to the tablet's
// partition), and reports rows and bytes per second per tablet and in total, like
// Kudu's `kudu perf table_scan`.
#include <gflags/gflags.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>

#include "common/result.h"
#include "nyala/monotime.h"
#include "tools/predicates_json.h"
#include "tools/tool_action.h"

DECLARE_int32(num_threads);
DECLARE_string(predicates);
DECLARE_string(columns);
DECLARE_int64(timeout_ms);

namespace nyala::tools {

using nlohmann::json;

namespace {

struct TabletScanResult {
  std::string tablet_id;
  int thread = -1;
  int64_t rows = 0;
  int64_t bytes = 0;
  double seconds = 0;
  Status status;
};

Status ScanOneTablet(const std::shared_ptr<client::Table>& table, const client::TabletInfo& tablet,
                     TabletScanResult* out) {
  client::Scanner scanner(table);
  Arena arena;
  if (!FLAGS_columns.empty()) {
    RETURN_NOT_OK(scanner.SetProjectedColumnNames(SplitList(FLAGS_columns)));
  }
  if (!FLAGS_predicates.empty()) {
    ASSIGN_OR_RETURN(auto preds, ParsePredicates(*table, FLAGS_predicates, &arena));
    for (auto& p : preds) RETURN_NOT_OK(scanner.AddPredicate(std::move(p)));
  }
  RETURN_NOT_OK(scanner.SetPartitionKeyRange(tablet.partition.partition_key_start,
                                             tablet.partition.partition_key_end));
  RETURN_NOT_OK(scanner.SetTimeout(MonoDelta::FromMilliseconds(FLAGS_timeout_ms)));
  RETURN_NOT_OK(scanner.Open());
  while (scanner.HasMoreRows()) {
    client::ScanBatch batch;
    RETURN_NOT_OK(scanner.NextBatch(&batch));
    out->rows += batch.num_rows();
    out->bytes += int64_t(batch.data_size_bytes());
  }
  return Status::OK();
}

std::string Rate(double v) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%.0f", v);
  return buf;
}

Status TableScan(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(auto format, OutputFormatFlag());
  ASSIGN_OR_RETURN(auto client, ConnectToCluster(args[0]));
  ASSIGN_OR_RETURN(auto table, client->OpenTable(args[1]));
  if (!FLAGS_predicates.empty()) {  // a bad --predicates fails once, before any scan
    Arena arena;
    RETURN_NOT_OK(ParsePredicates(*table, FLAGS_predicates, &arena).status());
  }
  ASSIGN_OR_RETURN(std::vector<client::TabletInfo> tablets, client->ListTabletsOfTable(args[1]));
  std::vector<TabletScanResult> results(tablets.size());
  std::atomic<size_t> next{0};
  const int nthreads = std::max(1, std::min<int>(FLAGS_num_threads, int(tablets.size())));
  const MonoTime start = MonoTime::Now();
  std::vector<std::thread> threads;
  for (int th = 0; th < nthreads; th++) {
    threads.emplace_back([&, th] {
      for (size_t i = next++; i < tablets.size(); i = next++) {
        TabletScanResult& r = results[i];
        r.tablet_id = tablets[i].tablet_id;
        r.thread = th;
        const MonoTime t0 = MonoTime::Now();
        r.status = ScanOneTablet(table, tablets[i], &r);
        r.seconds = (MonoTime::Now() - t0).ToSeconds();
      }
    });
  }
  for (auto& t : threads) t.join();
  const double total_s = std::max((MonoTime::Now() - start).ToSeconds(), 1e-6);
  int64_t rows = 0, bytes = 0;
  Status first_error;
  TableOutput out({"tablet_id", "thread", "rows", "bytes", "seconds", "rows_per_s", "bytes_per_s"});
  for (const auto& r : results) {
    rows += r.rows;
    bytes += r.bytes;
    if (!r.status.ok() && first_error.ok()) {
      first_error = r.status.CloneAndPrepend("scan of tablet " + r.tablet_id);
    }
    const double s = std::max(r.seconds, 1e-6);
    char secs[32];
    snprintf(secs, sizeof(secs), "%.3f", r.seconds);
    out.AddRow({r.tablet_id, std::to_string(r.thread), std::to_string(r.rows),
                std::to_string(r.bytes), secs, Rate(r.rows / s), Rate(r.bytes / s)},
               {r.tablet_id, r.thread, r.rows, r.bytes, r.seconds, r.rows / s, r.bytes / s});
  }
  if (format == OutputFormat::kJson) {
    json j = {{"table_name", table->name()},
              {"num_threads", nthreads},
              {"num_tablets", int64_t(tablets.size())},
              {"total", {{"rows", rows},
                         {"bytes", bytes},
                         {"seconds", total_s},
                         {"rows_per_s", rows / total_s},
                         {"bytes_per_s", bytes / total_s}}},
              {"tablets", json::parse(out.Render(OutputFormat::kJson))}};
    printf("%s\n", DumpJson(j).c_str());
  } else {
    out.Print(format);
    if (format == OutputFormat::kTable) {
      printf("\nTotal: %s, %lld bytes in %.3f s with %d thread(s): %.0f rows/s, %.0f "
             "bytes/s (%.1f MiB/s)\n",
             Rows(rows).c_str(), static_cast<long long>(bytes), total_s, nthreads,
             rows / total_s, bytes / total_s, bytes / total_s / 1048576.0);
    }
  }
  return first_error;
}

const char kTableScanDetails[] =
    "Each thread takes the next tablet not yet scanned and reads it from its leader.\n"
    "bytes: the row data received (fixed-size cells plus the bytes of strings and\n"
    "binaries), not the RPC framing. rows_per_s and bytes_per_s of a tablet are over its\n"
    "own scan time; the total's over the wall time of the whole run.\n"
    "--format=json prints one object: table_name, num_threads, num_tablets, total (rows,\n"
    "bytes, seconds, rows_per_s, bytes_per_s) and tablets (the per-tablet rows).\n"
    "Exit code 1 when any tablet's scan failed (the figures of the others are printed).";

}  // namespace

void RegisterPerfTableScanActions() {
  AllActions().push_back({"perf",
                          "table_scan",
                          "Scan a table with --num_threads threads and report rows/s and "
                          "bytes/s per tablet and in total.",
                          "<master_addresses> <table>",
                          {"num_threads", "predicates", "columns", "format"},
                          2,
                          2,
                          TableScan,
                          kTableScanDetails});
}

}  // namespace nyala::tools
