// nyala table list | describe | create | delete | count | scan | get | insert | upsert |
// delete_rows
#include <gflags/gflags.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/result.h"
#include "nyala/monotime.h"
#include "tools/predicates_json.h"
#include "tools/row_input.h"
#include "tools/table_describe.h"
#include "tools/table_spec.h"
#include "tools/tool_action.h"
#include "tools/value_parse.h"

DEFINE_string(columns, "", "Comma-separated columns to show (default: all).");
DEFINE_string(predicates, "",
              "Scan predicates as JSON, e.g. '[\"AND\", [\">=\", \"key\", 5], "
              "[\"IN\", \"host\", [\"a\", \"b\"]], [\"NOTNULL\", \"v\"]]'. Operators: = < <= > >= "
              "IN NULL NOTNULL. Values as in JSON rows: UNIXTIME_MICROS an ISO-8601 string "
              "(\"2023-11-14T22:13:21Z\") or an integer, BINARY base64.");
DEFINE_int64(limit, 0, "Stop after this many rows (0: no limit).");
DEFINE_string(replica_selection, "LEADER",
              "Which replica of each tablet is read: LEADER (linearizable: every write "
              "acknowledged before the read is seen) or CLOSEST (the closest replica answers "
              "from the writes it has applied: committed ones only, but possibly not the "
              "latest; it also answers while the tablet has no leader).");
DEFINE_string(file, "",
              "Input rows: a .csv file (header line of column names), or a .jsonl/.json "
              "file holding JSON Lines (one object per line) or a JSON array of objects "
              "(what 'table scan --format=json' prints); '-' reads standard input, JSON "
              "when it starts with '[' or '{', else CSV.");
DEFINE_string(timestamp_format, "iso8601",
              "How UNIXTIME_MICROS values print: iso8601 (UTC with microseconds, "
              "2023-11-14T22:13:21.000000Z) or micros (the integer of microseconds since "
              "1970-01-01 UTC).");
DEFINE_string(name_filter, "", "Only tables whose name contains this.");
DEFINE_int32(max_errors_shown, 20, "Row errors printed before the rest are only counted.");
DECLARE_int64(timeout_ms);

namespace nyala::tools {

using client::ScanBatch;
using nlohmann::json;

namespace {

Result<TimestampFormat> TimestampFormatFlag() {
  return ParseTimestampFormat(FLAGS_timestamp_format);
}

Status ListTables(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(auto client, ConnectToCluster(args[0]));
  ASSIGN_OR_RETURN(auto format, OutputFormatFlag());
  ASSIGN_OR_RETURN(auto names, client->ListTables(FLAGS_name_filter));
  TableOutput out({"name"});
  for (const auto& n : names) out.AddRow({n});
  out.Print(format);
  return Status::OK();
}

Status DescribeTable(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(auto client, ConnectToCluster(args[0]));
  ASSIGN_OR_RETURN(auto format, OutputFormatFlag());
  ASSIGN_OR_RETURN(TimestampFormat ts, TimestampFormatFlag());
  ASSIGN_OR_RETURN(auto table, client->OpenTable(args[1]));
  ASSIGN_OR_RETURN(auto tablets, client->ListTabletsOfTable(table->name()));
  const Schema& schema = table->schema();
  const PartitionSchema& ps = table->partition_schema();
  if (format == OutputFormat::kJson) {
    printf("%s\n", DumpJson(DescribeTableJson(*table, tablets, ts)).c_str());
    return Status::OK();
  }
  TableOutput out({"column", "type", "key", "nullable", "default", "comment"});
  for (int i = 0; i < schema.num_columns(); i++) {
    const ColumnSchema& c = schema.column(i);
    std::string def = c.default_value().has_value() ? CellToText(c.default_value().cell(), ts) : "";
    out.AddRow({c.name(), DataTypeName(c.type()), schema.is_key_column(i) ? "yes" : "no",
                c.is_nullable() ? "yes" : "no", def, c.comment()},
               {c.name(), DataTypeName(c.type()), schema.is_key_column(i), c.is_nullable(),
                c.default_value().has_value() ? CellToJson(c.default_value().cell(), ts) : json(),
                c.comment()});
  }
  ASSIGN_OR_RETURN(bool altering, client->IsAlterTableInProgress(table->name()));
  const RangeLayout ranges = RangesOf(tablets);
  printf("Table %s (id %s), %d replica(s), schema version %u%s\nPartitioning: %s\n",
         table->name().c_str(), table->id().c_str(), table->num_replicas(), schema.version(),
         altering ? " (an alteration is still being carried to its tablets)" : "",
         ps.ToString().c_str());
  if (!table->comment().empty()) printf("Comment: %s\n", table->comment().c_str());
  if (!ps.range_columns().empty()) {
    auto joined = [&](const std::vector<std::pair<std::string, std::string>>& rs) {
      std::string s;
      for (const auto& [lower, upper] : rs) {
        const std::string r = ps.RangeToString(lower, upper, schema);
        s += (s.empty() ? "" : "; ") + (r.empty() ? std::string("unbounded") : r);
      }
      return s;
    };
    std::string splits;
    for (const auto& sp : ranges.splits) {
      // A split point is where a range starts: print it as that range's lower side.
      std::string r = ps.RangeToString(sp, "", schema);
      const size_t at = r.find(">= ");
      splits += (splits.empty() ? "" : "; ") + (at == std::string::npos ? r : r.substr(at + 3));
    }
    printf("Range bounds: %s\nRange split points: %s\nRanges:\n", joined(ranges.bounds).c_str(),
           splits.empty() ? "none" : splits.c_str());
    for (const auto& r : ranges.ranges) {
      const std::string text = ps.RangeToString(r.first, r.second, schema);
      printf("  %s\n", text.empty() ? "unbounded" : text.c_str());
    }
  }
  printf("Tablets (%zu%s):\n", tablets.size(),
         ps.hash_dimensions().empty() ? "" : "; hash buckets count from 0");
  for (const auto& t : tablets) {
    printf("  %s  %s\n", t.tablet_id.c_str(), ps.PartitionToString(t.partition, schema).c_str());
  }
  printf("\n");
  out.Print(format);
  return Status::OK();
}

Result<std::string> ReadSpecText(const std::string& arg) {
  size_t b = arg.find_first_not_of(" \t\n");
  if (b != std::string::npos && arg[b] == '{') return arg;
  std::ifstream in(arg);
  if (!in) return Status::NotFound("cannot read table spec file " + arg);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status CreateTable(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(std::string text, ReadSpecText(args[1]));
  ASSIGN_OR_RETURN(json j, ParseJson(text, "the table spec"));
  ASSIGN_OR_RETURN(TableSpec spec, ParseTableSpec(j));
  ASSIGN_OR_RETURN(auto client, ConnectToCluster(args[0]));
  auto creator = client->NewTableCreator();
  RETURN_NOT_OK(ApplyTableSpec(spec, creator.get()));
  creator->wait(true);
  RETURN_NOT_OK(creator->Create());
  printf("Created table %s\n", spec.name.c_str());
  return Status::OK();
}

Status DeleteTable(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(auto client, ConnectToCluster(args[0]));
  RETURN_NOT_OK(client->DeleteTable(args[1]));
  printf("Deleted table %s\n", args[1].c_str());
  return Status::OK();
}

Result<client::ReplicaSelection> ReplicaSelectionFlag() {
  if (FLAGS_replica_selection == "LEADER") return client::ReplicaSelection::kLeaderOnly;
  if (FLAGS_replica_selection == "CLOSEST") return client::ReplicaSelection::kClosestReplica;
  return Status::InvalidArgument("--replica_selection must be LEADER or CLOSEST, not '" +
                                 FLAGS_replica_selection + "'");
}

// Opens a scanner with --columns, --predicates, --limit and --replica_selection.
Status OpenScanner(const std::shared_ptr<client::Table>& table, client::Scanner* scanner,
                   Arena* arena, bool count_only) {
  if (count_only) {
    RETURN_NOT_OK(scanner->SetProjectedColumnNames({table->schema().column(0).name()}));
  } else if (!FLAGS_columns.empty()) {
    RETURN_NOT_OK(scanner->SetProjectedColumnNames(SplitList(FLAGS_columns)));
  }
  if (!FLAGS_predicates.empty()) {
    ASSIGN_OR_RETURN(auto preds, ParsePredicates(*table, FLAGS_predicates, arena));
    for (auto& p : preds) RETURN_NOT_OK(scanner->AddPredicate(std::move(p)));
  }
  if (FLAGS_limit > 0) RETURN_NOT_OK(scanner->SetLimit(FLAGS_limit));
  ASSIGN_OR_RETURN(client::ReplicaSelection selection, ReplicaSelectionFlag());
  RETURN_NOT_OK(scanner->SetSelection(selection));
  RETURN_NOT_OK(scanner->SetTimeout(MonoDelta::FromMilliseconds(FLAGS_timeout_ms)));
  return scanner->Open();
}

Status CountRows(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(auto client, ConnectToCluster(args[0]));
  ASSIGN_OR_RETURN(auto table, client->OpenTable(args[1]));
  client::Scanner scanner(table);
  Arena arena;
  RETURN_NOT_OK(OpenScanner(table, &scanner, &arena, /*count_only=*/true));
  int64_t n = 0;
  while (scanner.HasMoreRows()) {
    ScanBatch batch;
    RETURN_NOT_OK(scanner.NextBatch(&batch));
    n += batch.num_rows();
  }
  printf("%lld\n", static_cast<long long>(n));
  return Status::OK();
}

template <typename Output>
void AddRowOutput(const ScanBatch::RowPtr& row, int ncols, TimestampFormat ts, Output* out) {
  std::vector<std::string> text;
  std::vector<json> values;
  for (int c = 0; c < ncols; c++) {
    Cell cell = row.cell(c);
    text.push_back(CellToText(cell, ts));
    values.push_back(CellToJson(cell, ts));
  }
  out->AddRow(std::move(text), std::move(values));
}

std::vector<std::string> ColumnNames(const Schema& s) {
  std::vector<std::string> names;
  for (int i = 0; i < s.num_columns(); i++) names.push_back(s.column(i).name());
  return names;
}

// Prints each batch as it arrives (StreamingOutput), so memory stays bounded by a
// batch whatever the result's size. A scan that fails midway has printed the rows
// before the failure; the error follows on stderr.
Status ScanTable(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(auto client, ConnectToCluster(args[0]));
  ASSIGN_OR_RETURN(auto format, OutputFormatFlag());
  ASSIGN_OR_RETURN(TimestampFormat ts, TimestampFormatFlag());
  ASSIGN_OR_RETURN(auto table, client->OpenTable(args[1]));
  client::Scanner scanner(table);
  Arena arena;
  RETURN_NOT_OK(OpenScanner(table, &scanner, &arena, false));
  std::unique_ptr<StreamingOutput> out;
  Status s;
  while (scanner.HasMoreRows()) {
    ScanBatch batch;
    s = scanner.NextBatch(&batch);
    if (!s.ok()) break;
    if (!out) {
      out = std::make_unique<StreamingOutput>(ColumnNames(batch.projection_schema()), format);
    }
    const int ncols = batch.projection_schema().num_columns();
    for (int i = 0; i < batch.num_rows(); i++) AddRowOutput(batch.row(i), ncols, ts, out.get());
    out->EndBatch();
  }
  if (!s.ok()) {
    const int64_t printed = out ? out->num_rows() : 0;
    return s.CloneAndPrepend("the scan failed after " + Rows(printed) + " (printed above)");
  }
  if (!out) {
    // No batch at all: print the header of the projection.
    std::vector<std::string> cols =
        FLAGS_columns.empty() ? ColumnNames(table->schema()) : SplitList(FLAGS_columns);
    out = std::make_unique<StreamingOutput>(cols, format);
  }
  out->Finish();
  if (format == OutputFormat::kTable) {
    fprintf(stderr, "(%s)\n", Rows(out->num_rows()).c_str());
  }
  return Status::OK();
}

Status GetRows(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(auto client, ConnectToCluster(args[0]));
  ASSIGN_OR_RETURN(auto format, OutputFormatFlag());
  ASSIGN_OR_RETURN(TimestampFormat ts, TimestampFormatFlag());
  ASSIGN_OR_RETURN(auto table, client->OpenTable(args[1]));
  const Schema& schema = table->schema();
  const size_t nkeys = size_t(schema.num_key_columns());
  if ((args.size() - 2) % nkeys != 0) {
    std::string cols;
    for (size_t i = 0; i < nkeys; i++) cols += (i ? ", " : "") + schema.column(int(i)).name();
    return Status::InvalidArgument("give the key as " + std::to_string(nkeys) +
                                   " value(s) per row, in key order (" + cols + ")");
  }
  std::vector<Row> keys;
  for (size_t a = 2; a < args.size(); a += nkeys) {
    Row key = table->NewRow();
    for (size_t k = 0; k < nkeys; k++) {
      ASSIGN_OR_RETURN(Cell c, ParseCellText(schema.column(int(k)), args[a + k], key.arena()));
      RETURN_NOT_OK(key.Set(int(k), c));
    }
    keys.push_back(std::move(key));
  }
  std::vector<std::string> projection =
      FLAGS_columns.empty() ? std::vector<std::string>() : SplitList(FLAGS_columns);
  ASSIGN_OR_RETURN(client::ReplicaSelection selection, ReplicaSelectionFlag());
  ASSIGN_OR_RETURN(auto result, table->MultiGet(keys, projection, selection));
  std::vector<std::string> cols = projection.empty() ? ColumnNames(schema) : projection;
  TableOutput out(cols);
  size_t missing = 0;
  for (size_t i = 0; i < result.num_keys(); i++) {
    auto row = result.row(i);
    if (!row) {
      missing++;
      fprintf(stderr, "not found: %s\n", keys[i].view().ToString().c_str());
      continue;
    }
    AddRowOutput(*row, int(cols.size()), ts, &out);
  }
  out.Print(format);
  if (missing == result.num_keys()) return Status::NotFound("no row has the given key");
  return Status::OK();
}

int64_t TotalOutcomes(const client::Session::WriteCounts& c) {
  return c.succeeded + c.failed + c.timed_out;
}

// Loads rows from --file with one write operation per row, in AUTO_FLUSH_BACKGROUND.
// Each operation is tagged with its input line, which its error carries back. The
// summary counts come from the session's per-operation outcomes, so they are exact
// also when errors were too many to keep.
Status WriteRows(const std::vector<std::string>& args, client::Session::FlushMode mode,
                 RowOpType op_type) {
  if (FLAGS_file.empty())
    return Status::InvalidArgument("give the rows with --file=rows.csv|rows.jsonl");
  RowReader::Format fmt = RowReader::Format::kCsv;
  FILE* in = stdin;
  int64_t total_bytes = 0;
  if (FLAGS_file != "-") {
    ASSIGN_OR_RETURN(fmt, RowReader::FormatForPath(FLAGS_file));
    in = fopen(FLAGS_file.c_str(), "r");
    if (!in) return Status::NotFound("cannot open " + FLAGS_file);
    fseek(in, 0, SEEK_END);
    total_bytes = ftell(in);
    fseek(in, 0, SEEK_SET);
  } else {
    fmt = RowReader::SniffFormat(stdin);
  }
  std::unique_ptr<FILE, int (*)(FILE*)> closer(in == stdin ? nullptr : in, &fclose);
  ASSIGN_OR_RETURN(auto client, ConnectToCluster(args[0]));
  ASSIGN_OR_RETURN(auto table, client->OpenTable(args[1]));
  auto session = client->NewSession();
  RETURN_NOT_OK(session->SetFlushMode(mode));
  RETURN_NOT_OK(session->SetTimeout(MonoDelta::FromMilliseconds(FLAGS_timeout_ms)));

  RowReader reader(in, fmt, &table->schema());
  // Operations the session accepted, and input lines refused before reaching it.
  int64_t applied = 0, bad_lines = 0, shown = 0;
  bool errors_dropped = false;
  const bool progress = StderrIsTerminal();
  const MonoTime start = MonoTime::Now();
  MonoTime last_progress = start;
  auto report = [&](const std::string& msg) {
    if (shown++ < FLAGS_max_errors_shown)
      fprintf(stderr, "%s%s\n", progress ? "\r\033[K" : "", msg.c_str());
  };
  auto drain_errors = [&] {
    std::vector<std::unique_ptr<client::WriteError>> errors;
    bool overflow = false;
    session->GetPendingErrors(&errors, &overflow);
    for (auto& e : errors) {
      report(reader.Where(e->failed_op().tag()) + ": " + e->status().ToString());
    }
    if (overflow && !errors_dropped) {
      errors_dropped = true;
      report("(more row errors were dropped by the client; the summary counts them all)");
    }
  };
  Row row = table->NewRow();
  while (true) {
    Status s = reader.Next(&row);
    if (s.IsEndOfFile()) break;
    if (!s.ok()) {
      bad_lines++;
      report(s.message());
      if (s.message().find("(header)") != std::string::npos) return s;
      continue;
    }
    std::unique_ptr<client::WriteOperation> op;
    switch (op_type) {
      case RowOpType::kUpsert:
        op = table->NewUpsert();
        break;
      case RowOpType::kDelete:
        op = table->NewDelete();
        break;
      default:
        op = table->NewInsert();
        break;
    }
    Status set_status;
    for (int c = 0; c < table->schema().num_columns() && set_status.ok(); c++) {
      Cell cell = row.view().cell(c);
      if (cell.is_absent()) continue;
      if (op_type == RowOpType::kDelete && !table->schema().is_key_column(c)) continue;
      set_status = cell.is_null() ? op->SetNull(c) : op->Set(c, cell);
    }
    if (!set_status.ok()) {
      bad_lines++;
      report(reader.Where(reader.line_number()) + ": " + set_status.message());
      continue;
    }
    op->set_tag(reader.line_number());
    s = session->Apply(std::move(op));
    // In AUTO_FLUSH_SYNC Apply also returns the row's own error once it was sent: then
    // the session counted its outcome (and reports it as a pending error). Any other
    // error refused the row before it reached the session.
    if (!s.ok() && TotalOutcomes(session->GetWriteCounts()) <= applied) {
      bad_lines++;
      report(reader.Where(reader.line_number()) + ": " + s.ToString());
      continue;
    }
    applied++;
    if (session->CountPendingErrors() > 0) drain_errors();
    if (progress && MonoTime::Now() - last_progress > MonoDelta::FromMilliseconds(200)) {
      last_progress = MonoTime::Now();
      const double secs = (last_progress - start).ToSeconds();
      const int pct = total_bytes > 0 ? int(100 * reader.bytes_read() / total_bytes) : 0;
      const int bar = pct / 4;
      fprintf(stderr, "\r[%s%s] %3d%% %s, %.0f rows/s", std::string(bar, '=').c_str(),
              std::string(25 - bar, ' ').c_str(), pct, Rows(applied).c_str(),
              applied / std::max(secs, 1e-3));
    }
  }
  Status flush = session->Flush();
  drain_errors();
  if (progress) fprintf(stderr, "\r\033[K");
  const double secs = (MonoTime::Now() - start).ToSeconds();
  const client::Session::WriteCounts counts = session->GetWriteCounts();
  char rate[64];
  snprintf(rate, sizeof(rate), "%.2f s (%.0f rows/s)", secs,
           counts.succeeded / std::max(secs, 1e-3));
  std::string summary = Rows(counts.succeeded) + " written in " + rate + "; " +
                        Count(bad_lines, "bad input line", "bad input lines") + ", " +
                        Rows(counts.failed) + " rejected";
  if (counts.timed_out > 0) {
    summary += ", " + Rows(counts.timed_out) +
               " timed out (not acknowledged: each may or may not have been written)";
  }
  printf("%s\n", summary.c_str());
  if (!flush.ok() && !flush.IsIOError()) return flush;
  const int64_t not_written = bad_lines + counts.failed + counts.timed_out;
  if (not_written > 0) {
    return Status::Incomplete(Rows(not_written) + " not written or not acknowledged; see above");
  }
  return Status::OK();
}

}  // namespace

void RegisterTableActions() {
  auto& a = AllActions();
  const std::string kRowInputHelp =
      std::string(
          "Input (--file): CSV, with a header line naming the columns, one row per line;\n"
          "or JSON: JSON Lines (one object per line, column name -> value) or one JSON\n"
          "array of such objects, as 'table scan --format=json' prints it, so a scan's\n"
          "output loads as it is. A column left out gets its default (or NULL). Each bad\n"
          "line (or array element) is reported with its number and skipped; the rest\n"
          "are written.\n\n") +
      kValueFormsHelp;
  const std::string m = "<master_addresses>";
  a.push_back(
      {"table", "list", "List the tables.", m, {"name_filter", "format"}, 1, 1, ListTables});
  a.push_back({"table",
               "describe",
               "Show a table's columns, partitioning (range bounds, split points and every "
               "tablet's partition, as typed key ranges) and replication.",
               m + " <table>",
               {"format", "timestamp_format"},
               2,
               2,
               DescribeTable});
  a.push_back({"table",
               "create",
               "Create a table from a JSON table spec, inline or in a file.",
               m + " <json-spec|spec-file>",
               {},
               2,
               2,
               CreateTable,
               kTableSpecHelp});
  a.push_back(
      {"table", "delete", "Delete a table and its data.", m + " <table>", {}, 2, 2, DeleteTable});
  a.push_back({"table",
               "count",
               "Count a table's rows (with optional --predicates).",
               m + " <table>",
               {"predicates", "replica_selection"},
               2,
               2,
               CountRows});
  a.push_back(
      {"table",
       "scan",
       "Print a table's rows, each batch as it arrives (any result size, little "
       "memory); a scan that fails midway has printed the rows before the failure.",
       m + " <table>",
       {"columns", "predicates", "limit", "format", "timestamp_format", "replica_selection"},
       2,
       2,
       ScanTable,
       std::string("--format=json prints one JSON array of objects (column name -> "
                   "value), which 'table insert --file=x.json' reads back.\n\n") +
           kValueFormsHelp});
  a.push_back({"table",
               "get",
               "Look rows up by primary key (key values in key-column order).",
               m + " <table> <key>...",
               {"columns", "format", "timestamp_format", "replica_selection"},
               3,
               -1,
               GetRows,
               std::string("Key values take the text forms below.\n\n") + kValueFormsHelp});
  a.push_back({"table",
               "insert",
               "Insert rows from --file; reports each bad line.",
               m + " <table>",
               {"file", "max_errors_shown"},
               2,
               2,
               [](const std::vector<std::string>& args) {
                 return WriteRows(args, client::Session::FlushMode::kAutoFlushBackground,
                                  RowOpType::kInsert);
               },
               kRowInputHelp});
  a.push_back({"table",
               "upsert",
               "Insert or replace rows from --file.",
               m + " <table>",
               {"file", "max_errors_shown"},
               2,
               2,
               [](const std::vector<std::string>& args) {
                 return WriteRows(args, client::Session::FlushMode::kAutoFlushBackground,
                                  RowOpType::kUpsert);
               },
               kRowInputHelp});
  a.push_back({"table",
               "delete_rows",
               "Delete the rows whose keys are in --file.",
               m + " <table>",
               {"file", "max_errors_shown"},
               2,
               2,
               [](const std::vector<std::string>& args) {
                 return WriteRows(args, client::Session::FlushMode::kAutoFlushBackground,
                                  RowOpType::kDelete);
               },
               kRowInputHelp});
}

}  // namespace nyala::tools
