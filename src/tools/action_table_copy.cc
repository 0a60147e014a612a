// nyala table copy: scans a table (optionally with --predicates) and writes its rows
// into another table, on the same cluster or another one, as Kudu's `kudu table copy`
// does. A missing destination is created with the source's schema, partitioning
// (hash dimensions and range partitions) and replication; an existing one must have
// compatible columns. At the end the rows are counted: the copy fails (exit 1) when
// what the destination holds does not add up with what was read.
#include <gflags/gflags.h>

#include <cstdio>
#include <iterator>
#include <set>

#include "common/key_encoding.h"
#include "common/result.h"
#include "nyala/monotime.h"
#include "tools/predicates_json.h"
#include "tools/tool_action.h"
#include "tools/value_parse.h"

DECLARE_string(predicates);
DECLARE_int64(timeout_ms);
DECLARE_int32(max_errors_shown);
DEFINE_string(write_type, "insert",
              "copy: how rows are written into the destination: insert (a row whose key "
              "exists there fails) or upsert (it is replaced).");
DEFINE_bool(create_table, true,
            "copy: create the destination table when it does not exist (with the source's "
            "schema, partitioning and replication); false: it must exist.");

namespace nyala::tools {

namespace {

// The source's range partitions as rows of `creator`'s schema: each distinct
// [range_key_start, range_key_end) of its tablets, decoded. Adjacent and unbounded
// ranges come out as they are.
Status AddRangePartitions(const client::Table& src,
                          const std::vector<client::TabletInfo>& tablets,
                          client::TableCreator* creator) {
  const PartitionSchema& ps = src.partition_schema();
  if (ps.range_columns().empty()) return Status::OK();
  std::set<std::pair<std::string, std::string>> ranges;
  for (const auto& t : tablets) {
    ranges.emplace(t.partition.range_key_start, t.partition.range_key_end);
  }
  if (ranges.size() == 1 && ranges.begin()->first.empty() && ranges.begin()->second.empty()) {
    return Status::OK();  // one unbounded range: the default
  }
  const Schema& schema = src.schema();
  ASSIGN_OR_RETURN(std::vector<int> idxs, schema.ColumnIndexes(ps.range_columns()));
  auto decode = [&](const std::string& key, Row* row) -> Status {
    if (key.empty()) return Status::OK();  // unbounded: no column set
    Slice in(key);
    for (size_t i = 0; i < idxs.size(); i++) {
      Cell cell;
      RETURN_NOT_OK(DecodeKeyCell(schema.column(idxs[i]).type(), i + 1 == idxs.size(), &in, &cell,
                                  row->arena()));
      RETURN_NOT_OK(row->SetCopy(idxs[i], cell));
    }
    return Status::OK();
  };
  creator->set_range_partition_columns(ps.range_columns());
  // Ranges that tile every key (the first unbounded below, each ending where the next
  // starts, the last unbounded above) are split points, as the source was most likely
  // made; anything else is a list of bounds.
  bool tiled = ranges.begin()->first.empty() && ranges.rbegin()->second.empty();
  for (auto it = ranges.begin(); tiled && std::next(it) != ranges.end(); ++it) {
    tiled = it->second == std::next(it)->first;
  }
  if (tiled) {
    for (auto it = std::next(ranges.begin()); it != ranges.end(); ++it) {
      Row split = creator->NewRow();
      RETURN_NOT_OK_PREPEND(decode(it->first, &split), "decoding a split point of the source");
      creator->add_range_partition_split(split);
    }
    return Status::OK();
  }
  for (const auto& [lo, hi] : ranges) {
    Row lower = creator->NewRow(), upper = creator->NewRow();
    RETURN_NOT_OK_PREPEND(decode(lo, &lower), "decoding a range bound of the source");
    RETURN_NOT_OK_PREPEND(decode(hi, &upper), "decoding a range bound of the source");
    creator->add_range_partition(lower, upper);
  }
  return Status::OK();
}

Status CreateLike(const std::shared_ptr<client::Client>& src_client, const client::Table& src,
                  const std::shared_ptr<client::Client>& dst_client, const std::string& name) {
  ASSIGN_OR_RETURN(std::vector<client::TabletInfo> tablets,
                   src_client->ListTabletsOfTable(src.name()));
  auto creator = dst_client->NewTableCreator();
  creator->table_name(name).schema(src.schema()).num_replicas(src.num_replicas()).wait(true);
  for (const HashDimension& d : src.partition_schema().hash_dimensions()) {
    creator->add_hash_partitions(d.columns, d.num_buckets, d.seed);
  }
  RETURN_NOT_OK(AddRangePartitions(src, tablets, creator.get()));
  return creator->Create().CloneAndPrepend("creating the destination table " + name);
}

// Why rows of `src` cannot be written into `dst` as they are; OK when they can: the
// same key columns in the same order and types, every source column in the
// destination with its type (nullable there when it is here), and every other
// destination column nullable or with a default.
Status CheckCompatible(const Schema& src, const Schema& dst, const std::string& dst_name) {
  auto refuse = [&](const std::string& why) {
    return Status::InvalidArgument("the destination table " + dst_name +
                                   " exists with a different schema: " + why +
                                   "; copy into a new table (it is created with the source's "
                                   "schema) or into one with the same columns");
  };
  if (src.num_key_columns() != dst.num_key_columns()) {
    return refuse(std::to_string(dst.num_key_columns()) + " key column(s) there, " +
                  std::to_string(src.num_key_columns()) + " here");
  }
  for (int i = 0; i < src.num_columns(); i++) {
    const ColumnSchema& c = src.column(i);
    auto j = dst.ColumnIndex(c.name());
    if (!j.ok()) return refuse("it has no column '" + c.name() + "'");
    const ColumnSchema& d = dst.column(*j);
    if (d.type() != c.type()) {
      return refuse("column '" + c.name() + "' is " + DataTypeName(d.type()) + " there, " +
                    DataTypeName(c.type()) + " here");
    }
    if (src.is_key_column(i) && *j != i) {
      return refuse("key column '" + c.name() + "' is not at the same position");
    }
    if (!dst.is_key_column(*j) && src.is_key_column(i)) {
      return refuse("'" + c.name() + "' is not a key column there");
    }
    if (c.is_nullable() && !d.is_nullable()) {
      return refuse("column '" + c.name() + "' is NOT NULL there and nullable here");
    }
  }
  for (int j = 0; j < dst.num_columns(); j++) {
    const ColumnSchema& d = dst.column(j);
    if (src.ColumnIndex(d.name()).ok()) continue;
    if (!d.is_nullable() && !d.default_value().has_value()) {
      return refuse("its column '" + d.name() + "' (NOT NULL, no default) is not in the source");
    }
  }
  return Status::OK();
}

Result<int64_t> CountAll(const std::shared_ptr<client::Table>& table) {
  client::Scanner scanner(table);
  RETURN_NOT_OK(scanner.SetProjectedColumnNames({table->schema().column(0).name()}));
  RETURN_NOT_OK(scanner.SetTimeout(MonoDelta::FromMilliseconds(FLAGS_timeout_ms)));
  RETURN_NOT_OK(scanner.Open());
  int64_t n = 0;
  while (scanner.HasMoreRows()) {
    client::ScanBatch batch;
    RETURN_NOT_OK(scanner.NextBatch(&batch));
    n += batch.num_rows();
  }
  return n;
}

Status CopyTable(const std::vector<std::string>& args) {
  const std::string& src_masters = args[0];
  const std::string& src_name = args[1];
  const std::string& dst_masters = args[2];
  const std::string dst_name = args.size() > 3 ? args[3] : src_name;
  if (FLAGS_write_type != "insert" && FLAGS_write_type != "upsert") {
    return Status::InvalidArgument("--write_type must be insert or upsert, not '" +
                                   FLAGS_write_type + "'");
  }
  const bool upsert = FLAGS_write_type == "upsert";
  ASSIGN_OR_RETURN(auto src_client, ConnectToCluster(src_masters));
  std::shared_ptr<client::Client> dst_client = src_client;
  if (dst_masters != src_masters) {
    ASSIGN_OR_RETURN(dst_client, ConnectToCluster(dst_masters));
  }
  ASSIGN_OR_RETURN(auto src, src_client->OpenTable(src_name));
  Arena pred_arena;
  std::vector<ColumnPredicate> preds;
  if (!FLAGS_predicates.empty()) {
    ASSIGN_OR_RETURN(preds, ParsePredicates(*src, FLAGS_predicates, &pred_arena));
  }

  ASSIGN_OR_RETURN(bool exists, dst_client->TableExists(dst_name));
  bool created = false;
  if (!exists) {
    if (!FLAGS_create_table) {
      return Status::NotFound("the destination table " + dst_name +
                              " does not exist (and --create_table=false)");
    }
    RETURN_NOT_OK(CreateLike(src_client, *src, dst_client, dst_name));
    fprintf(stderr, "Created table %s on %s like %s\n", dst_name.c_str(), dst_masters.c_str(),
            src_name.c_str());
    created = true;
  }
  ASSIGN_OR_RETURN(auto dst, dst_client->OpenTable(dst_name));
  if (dst->id() == src->id()) {
    return Status::InvalidArgument("the source and the destination are the same table (" +
                                   src_name + "); name another destination table");
  }
  RETURN_NOT_OK(CheckCompatible(src->schema(), dst->schema(), dst_name));
  int64_t before = 0;
  if (!created) {
    ASSIGN_OR_RETURN(before, CountAll(dst));
  }

  // Source column i goes to destination column dst_idx[i].
  std::vector<int> dst_idx;
  for (int i = 0; i < src->schema().num_columns(); i++) {
    dst_idx.push_back(*dst->schema().ColumnIndex(src->schema().column(i).name()));
  }
  client::Scanner scanner(src);
  for (auto& p : preds) RETURN_NOT_OK(scanner.AddPredicate(std::move(p)));
  RETURN_NOT_OK(scanner.SetTimeout(MonoDelta::FromMilliseconds(FLAGS_timeout_ms)));
  RETURN_NOT_OK(scanner.Open());
  auto session = dst_client->NewSession();
  RETURN_NOT_OK(session->SetFlushMode(client::Session::FlushMode::kAutoFlushBackground));
  RETURN_NOT_OK(session->SetTimeout(MonoDelta::FromMilliseconds(FLAGS_timeout_ms)));

  const bool progress = StderrIsTerminal();
  const MonoTime start = MonoTime::Now();
  MonoTime last_progress = start;
  int64_t read = 0, shown = 0;
  auto drain_errors = [&] {
    std::vector<std::unique_ptr<client::WriteError>> errors;
    bool overflow = false;
    session->GetPendingErrors(&errors, &overflow);
    for (auto& e : errors) {
      if (shown++ < FLAGS_max_errors_shown) {
        fprintf(stderr, "%s%s: %s\n", progress ? "\r\033[K" : "",
                e->failed_op().ToString().c_str(), e->status().ToString().c_str());
      }
    }
  };
  Status scan_status;
  while (scanner.HasMoreRows()) {
    client::ScanBatch batch;
    scan_status = scanner.NextBatch(&batch);
    if (!scan_status.ok()) break;
    const int ncols = batch.projection_schema().num_columns();
    for (int r = 0; r < batch.num_rows(); r++) {
      auto row = batch.row(r);
      auto op = upsert ? dst->NewUpsert() : dst->NewInsert();
      for (int c = 0; c < ncols; c++) {
        Cell cell = row.cell(c);
        RETURN_NOT_OK(cell.is_null() ? op->SetNull(dst_idx[c]) : op->Set(dst_idx[c], cell));
      }
      op->set_tag(read);
      Status s = session->Apply(std::move(op));
      if (!s.ok() && !s.IsIOError()) return s.CloneAndPrepend("writing into " + dst_name);
      read++;
    }
    if (session->CountPendingErrors() > 0) drain_errors();
    if (progress && MonoTime::Now() - last_progress > MonoDelta::FromMilliseconds(200)) {
      last_progress = MonoTime::Now();
      const double secs = (last_progress - start).ToSeconds();
      fprintf(stderr, "\r\033[K%s copied, %.0f rows/s", Rows(read).c_str(),
              read / std::max(secs, 1e-3));
    }
  }
  Status flush = session->Flush();
  drain_errors();
  if (progress) fprintf(stderr, "\r\033[K");
  const double secs = std::max((MonoTime::Now() - start).ToSeconds(), 1e-3);
  const client::Session::WriteCounts counts = session->GetWriteCounts();
  printf("%s read from %s, %lld written to %s in %.2f s (%.0f rows/s); %lld rejected",
         Rows(read).c_str(), src_name.c_str(), static_cast<long long>(counts.succeeded),
         dst_name.c_str(), secs, counts.succeeded / secs, static_cast<long long>(counts.failed));
  if (counts.timed_out > 0) {
    printf(", %lld timed out (may or may not have been written)",
           static_cast<long long>(counts.timed_out));
  }
  printf("\n");
  if (!scan_status.ok()) {
    return scan_status.CloneAndPrepend("the scan of " + src_name + " failed after " +
                                       Rows(read));
  }
  if (!flush.ok() && !flush.IsIOError()) return flush;

  // The row-count check.
  ASSIGN_OR_RETURN(int64_t after, CountAll(dst));
  printf("%s now holds %s (%lld before)\n", dst_name.c_str(), Rows(after).c_str(),
         static_cast<long long>(before));
  std::string mismatch;
  if (counts.succeeded != read) {
    mismatch = std::to_string(read - counts.succeeded) + " of " + Rows(read) +
               " read " + (read - counts.succeeded == 1 ? "was" : "were") + " not written";
  } else if (!upsert && after != before + read) {
    mismatch = "the destination grew by " + Rows(after - before) + ", not " +
               std::to_string(read);
  } else if (upsert && (after < read || after > before + read)) {
    mismatch = "the destination holds " + Rows(after) + " after upserting " +
               std::to_string(read) + " into " + std::to_string(before);
  }
  if (!mismatch.empty()) {
    return Status::Incomplete("row count check failed: " + mismatch +
                              " (a concurrent writer to either table also makes counts differ)");
  }
  printf("row count check passed\n");
  return Status::OK();
}

const char kCopyDetails[] =
    "Rows are read from the source's tablet leaders and written with an\n"
    "AUTO_FLUSH_BACKGROUND session; on a terminal the rows copied and the rate are shown\n"
    "as it goes. <dest_table> defaults to <table>; <dest_master_addresses> may be the\n"
    "source's (then a destination name is needed).\n"
    "A missing destination is created like the source: its columns, hash partitioning,\n"
    "range partitions and number of replicas (--create_table=false refuses instead). An\n"
    "existing destination must have the same key columns and every source column with\n"
    "the same type; anything else is refused before a row is written.\n"
    "Row-count check at the end: every row read must be written, and the destination\n"
    "must have grown by as many rows (--write_type=insert) or hold at least as many\n"
    "(upsert); otherwise exit code 1. Row errors (e.g. a key already present) are\n"
    "printed, --max_errors_shown of them.";

}  // namespace

void RegisterTableCopyActions() {
  AllActions().push_back(
      {"table",
       "copy",
       "Copy a table's rows (with optional --predicates) into another table, on this or "
       "another cluster, creating it like the source when absent.",
       "<master_addresses> <table> <dest_master_addresses> [<dest_table>]",
       {"predicates", "write_type", "create_table", "max_errors_shown"},
       3,
       4,
       CopyTable,
       kCopyDetails});
}

}  // namespace nyala::tools
