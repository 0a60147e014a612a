// nyala perf loadgen: inserts generated rows with AUTO_FLUSH_BACKGROUND sessions from
// several threads and reports the time per row (the shape of Kudu's loadgen).
#include <gflags/gflags.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <random>
#include <thread>

#include "common/result.h"
#include "nyala/monotime.h"
#include "tools/tool_action.h"

DECLARE_int64(timeout_ms);

DEFINE_int64(num_rows_per_thread, 100000, "loadgen: rows each thread inserts.");
DEFINE_int32(num_threads, 2,
             "loadgen: writer threads, each with its own session; table_scan: scanner "
             "threads, the tablets split among them.");
DEFINE_validator(num_threads, [](const char*, int32_t v) { return v >= 1 && v <= 1024; });
DEFINE_int64(buffer_size_bytes, 7 * 1024 * 1024, "loadgen: session mutation buffer space.");
DEFINE_double(buffer_flush_watermark_pct, 0.5,
              "loadgen: fraction of the buffer that triggers a background flush.");
DEFINE_string(table_name, "",
              "loadgen: write into this existing table (key INT64, a INT32, b STRING, c STRING, "
              "d INT32 or compatible); empty: create a table and delete it afterwards.");
DEFINE_bool(keep_auto_table, false, "loadgen: keep the auto-created table.");
DEFINE_int32(table_num_hash_buckets, 8, "loadgen: hash buckets of the auto-created table.");
DEFINE_int32(num_replicas, 0,
             "loadgen: replicas of each tablet of the auto-created table; 0: the master's "
             "--default_num_replicas.");
DEFINE_validator(num_replicas, [](const char*, int32_t v) { return v >= 0; });
DEFINE_int32(string_len, 32, "loadgen: length of the generated strings.");
DEFINE_int64(key_offset, 0,
             "loadgen: the first key written; thread t writes the --num_rows_per_thread keys "
             "from key_offset + t * num_rows_per_thread. When not given: 0 for the table "
             "loadgen creates, and for an existing table (--table_name) one past its largest "
             "key (found by a scan of the key column), so that every run writes new rows.");
DEFINE_validator(key_offset, [](const char*, int64_t v) { return v >= 0; });

namespace nyala::tools {

namespace {

// One past the largest value of `table`'s first key column ("key"), or 0 for an empty
// table, from a scan of that column alone.
Result<int64_t> KeyAfterLargest(const std::shared_ptr<client::Table>& table) {
  const ColumnSchema& key = table->schema().column(0);
  client::Scanner scanner(table);
  RETURN_NOT_OK(scanner.SetProjectedColumnNames({key.name()}));
  RETURN_NOT_OK(scanner.SetTimeout(MonoDelta::FromMilliseconds(FLAGS_timeout_ms)));
  RETURN_NOT_OK(scanner.Open());
  int64_t largest = -1;
  bool any = false;
  while (scanner.HasMoreRows()) {
    client::ScanBatch batch;
    RETURN_NOT_OK(scanner.NextBatch(&batch));
    for (int i = 0; i < batch.num_rows(); i++) {
      const Cell c = batch.row(i).cell(0);
      if (c.is_null()) continue;
      largest = any ? std::max(largest, c.int_value()) : c.int_value();
      any = true;
    }
  }
  if (!any || largest < 0) return 0;
  if (largest == std::numeric_limits<int64_t>::max()) {
    return Status::InvalidArgument("the largest key of the table is the largest INT64; give "
                                   "--key_offset");
  }
  return largest + 1;
}

Status LoadGen(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(auto client, ConnectToCluster(args[0]));
  std::string table_name = FLAGS_table_name;
  const bool auto_table = table_name.empty();
  if (auto_table) {
    std::random_device rd;
    table_name = "loadgen_auto_" + std::to_string(rd() % 1000000);
    auto creator = client->NewTableCreator();
    client::SchemaBuilder sb;
    sb.AddKeyColumn("key", DataType::kInt64)
        .AddColumn("a", DataType::kInt32)
        .AddColumn("b", DataType::kString)
        .AddColumn("c", DataType::kString)
        .AddColumn("d", DataType::kInt32);
    ASSIGN_OR_RETURN(Schema schema, sb.Build());
    creator->table_name(table_name).schema(schema).wait(true);
    creator->add_hash_partitions({"key"}, FLAGS_table_num_hash_buckets);
    if (FLAGS_num_replicas > 0) creator->num_replicas(FLAGS_num_replicas);
    RETURN_NOT_OK(creator->Create());
  }
  ASSIGN_OR_RETURN(auto table, client->OpenTable(table_name));
  if (auto_table) {
    printf("Created table %s (%d replicas of each tablet)\n", table_name.c_str(),
           table->num_replicas());
  }
  int64_t key_offset = FLAGS_key_offset;
  if (!auto_table && gflags::GetCommandLineFlagInfoOrDie("key_offset").is_default) {
    ASSIGN_OR_RETURN(key_offset, KeyAfterLargest(table));
    printf("Writing keys from %lld, after the largest key in %s (--key_offset to choose)\n",
           static_cast<long long>(key_offset), table_name.c_str());
  }
  const int64_t total_rows = FLAGS_num_rows_per_thread * FLAGS_num_threads;
  if (key_offset > std::numeric_limits<int64_t>::max() - total_rows) {
    return Status::InvalidArgument("--key_offset " + std::to_string(key_offset) + " plus " +
                                   Rows(total_rows) + " goes past the largest INT64");
  }
  // From each session's per-operation outcomes (its kept errors stop at 10000).
  std::atomic<int64_t> written{0}, rejected{0}, timed_out{0};
  std::vector<Status> thread_status(FLAGS_num_threads);
  const MonoTime start = MonoTime::Now();
  std::vector<std::thread> threads;
  for (int t = 0; t < FLAGS_num_threads; t++) {
    threads.emplace_back([&, t] {
      auto session = client->NewSession();
      Status s = session->SetFlushMode(client::Session::FlushMode::kAutoFlushBackground);
      if (s.ok()) s = session->SetMutationBufferSpace(size_t(FLAGS_buffer_size_bytes));
      if (s.ok()) s = session->SetMutationBufferFlushWatermark(FLAGS_buffer_flush_watermark_pct);
      std::mt19937_64 rng(t * 7919 + 1);
      std::string str(size_t(FLAGS_string_len), 'x');
      for (int64_t i = 0; i < FLAGS_num_rows_per_thread && s.ok(); i++) {
        const int64_t key = key_offset + int64_t(t) * FLAGS_num_rows_per_thread + i;
        for (char& ch : str) ch = char('a' + rng() % 26);
        auto op = table->NewInsert();
        s = op->Set("key", Cell::Int64(key));
        if (s.ok()) s = op->Set("a", Cell::Int32(int32_t(key)));
        if (s.ok()) s = op->Set("b", Cell::String(str));
        if (s.ok()) s = op->Set("c", Cell::String(str));
        if (s.ok()) s = op->Set("d", Cell::Int32(int32_t(i)));
        if (s.ok()) s = session->Apply(std::move(op));
        if (s.IsIOError()) s = Status::OK();  // a row error: counted below
      }
      Status f = session->Flush();
      const client::Session::WriteCounts counts = session->GetWriteCounts();
      written += counts.succeeded;
      rejected += counts.failed;
      timed_out += counts.timed_out;
      thread_status[t] = s.ok() ? (f.IsIOError() ? Status::OK() : f) : s;
    });
  }
  for (auto& th : threads) th.join();
  const double ms = (MonoTime::Now() - start).ToSeconds() * 1000;
  const int64_t rows = FLAGS_num_rows_per_thread * FLAGS_num_threads;
  printf("Generator report\n");
  printf("  rows total  : %lld\n", static_cast<long long>(rows));
  printf("  time total  : %.2f ms\n", ms);
  printf("  time per row: %.6f ms\n", ms / std::max<int64_t>(rows, 1));
  printf("  rows/s      : %.0f\n", rows / (ms / 1000));
  printf("  rows written: %lld\n", static_cast<long long>(written.load()));
  printf("  rejected    : %lld\n", static_cast<long long>(rejected.load()));
  printf("  timed out   : %lld (not acknowledged: each may or may not have been written)\n",
         static_cast<long long>(timed_out.load()));
  if (auto_table && !FLAGS_keep_auto_table) RETURN_NOT_OK(client->DeleteTable(table_name));
  for (const auto& s : thread_status) RETURN_NOT_OK(s);
  if (written.load() != rows) {
    return Status::Incomplete(std::to_string(rows - written.load()) + " of " + Rows(rows) +
                              " not written or not acknowledged");
  }
  return Status::OK();
}

}  // namespace

void RegisterPerfActions() {
  AllActions().push_back(
      {"perf",
       "loadgen",
       "Insert generated rows from --num_threads threads (AUTO_FLUSH_BACKGROUND) and report the "
       "time per row.",
       "<master_addresses>",
       {"num_rows_per_thread", "num_threads", "buffer_size_bytes", "buffer_flush_watermark_pct",
        "table_name", "keep_auto_table", "table_num_hash_buckets", "num_replicas", "string_len",
        "key_offset"},
       1,
       1,
       LoadGen,
       "Keys: thread t inserts keys key_offset + t * num_rows_per_thread onwards. Into an\n"
       "existing table (--table_name) without --key_offset, loadgen first scans the table's\n"
       "key column and starts one past its largest key, so a second run writes new rows\n"
       "instead of duplicates that are all rejected; --key_offset skips that scan."});
}

}  // namespace nyala::tools
