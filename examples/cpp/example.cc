// A small application of the Nyala C++ client, built against an installed SDK (see
// CMakeLists.txt here, or pkg-config nyala_client) and run against a running cluster:
//
//   nyala-client-example <master>[,<master>...] [table name]
//
// It creates a table, writes rows in the background (AUTO_FLUSH_BACKGROUND) and
// checks every row's outcome, reads one row by its key, scans with a predicate, and
// deletes the table. Prints what it does; exits 1 with the error on any failure.
#include <nyala/client.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

using nyala::Cell;
using nyala::DataType;
using nyala::Result;
using nyala::Status;
using nyala::client::Client;
using nyala::client::ClientBuilder;
using nyala::client::ScanBatch;
using nyala::client::Scanner;
using nyala::client::SchemaBuilder;
using nyala::client::Session;
using nyala::client::Table;
using nyala::client::WriteError;

namespace {

constexpr int kRows = 1000;

Status Run(const std::string& masters, const std::string& name) {
  // Several masters may be given, comma-separated: the client finds the leader.
  NYALA_ASSIGN_OR_RETURN(std::shared_ptr<Client> client,
                         ClientBuilder().add_master_server_addr(masters).Build());

  NYALA_ASSIGN_OR_RETURN(nyala::Schema schema, SchemaBuilder()
                                                   .AddKeyColumn("id", DataType::kInt64)
                                                   .AddColumn("name", DataType::kString)
                                                   .AddColumn("score", DataType::kInt32,
                                                              /*nullable=*/true)
                                                   .Build());
  NYALA_RETURN_NOT_OK(client->NewTableCreator()
                          ->table_name(name)
                          .schema(schema)
                          .add_hash_partitions({"id"}, 4)
                          .num_replicas(1)
                          .Create());
  std::printf("created table %s\n", name.c_str());
  NYALA_ASSIGN_OR_RETURN(std::shared_ptr<Table> table, client->OpenTable(name));

  // Writes go out in the background, in batches per tablet; each row's outcome comes
  // back as a pending error or as a success in GetWriteCounts().
  std::shared_ptr<Session> session = client->NewSession();
  NYALA_RETURN_NOT_OK(session->SetFlushMode(Session::FlushMode::kAutoFlushBackground));
  for (int i = 0; i < kRows; i++) {
    auto op = table->NewInsert();
    NYALA_RETURN_NOT_OK(op->Set("id", Cell::Int64(i)));
    NYALA_RETURN_NOT_OK(op->Set("name", Cell::String("row-" + std::to_string(i))));
    NYALA_RETURN_NOT_OK(op->Set("score", Cell::Int32(i % 100)));
    op->set_tag(i);
    NYALA_RETURN_NOT_OK(session->Apply(std::move(op)));
  }
  // One duplicate key, to show a row's error: the session reports it, tagged.
  auto dup = table->NewInsert();
  NYALA_RETURN_NOT_OK(dup->Set("id", Cell::Int64(7)));
  NYALA_RETURN_NOT_OK(dup->Set("name", Cell::String("duplicate")));
  dup->set_tag(-1);
  NYALA_RETURN_NOT_OK(session->Apply(std::move(dup)));
  Status flushed = session->Flush();  // IOError when some rows failed
  std::vector<std::unique_ptr<WriteError>> errors;
  bool overflowed = false;
  session->GetPendingErrors(&errors, &overflowed);
  for (const auto& e : errors) {
    if (e->failed_op().tag() != -1 || !e->status().IsAlreadyPresent()) {
      return Status::RuntimeError("unexpected row error: " + e->status().ToString());
    }
    std::printf("row error, as expected: %s: %s\n", e->failed_op().ToString().c_str(),
                e->status().ToString().c_str());
  }
  const Session::WriteCounts counts = session->GetWriteCounts();
  std::printf("wrote %lld rows, %lld failed (flush: %s)\n",
              static_cast<long long>(counts.succeeded), static_cast<long long>(counts.failed),
              flushed.ToString().c_str());
  if (counts.succeeded != kRows || counts.failed != 1 || errors.size() != 1) {
    return Status::RuntimeError("expected " + std::to_string(kRows) +
                                " rows written and the duplicate failed");
  }
  NYALA_RETURN_NOT_OK(session->Close());

  // A point read by primary key.
  nyala::Row key = table->NewRow();
  NYALA_RETURN_NOT_OK(key.Set("id", Cell::Int64(42)));
  NYALA_ASSIGN_OR_RETURN(nyala::client::GetResult got, table->Get(key));
  if (!got.found(0)) return Status::NotFound("row 42 is missing");
  std::printf("get id=42: %s\n", got.row(0)->ToString().c_str());

  // A scan with a predicate and a projection.
  Scanner scanner(table);
  NYALA_RETURN_NOT_OK(scanner.SetProjectedColumnNames({"id", "score"}));
  NYALA_ASSIGN_OR_RETURN(
      nyala::ColumnPredicate pred,
      table->NewComparisonPredicate("score", nyala::ColumnPredicate::CompareOp::kGreaterEqual,
                                    Cell::Int32(95)));
  NYALA_RETURN_NOT_OK(scanner.AddPredicate(std::move(pred)));
  NYALA_RETURN_NOT_OK(scanner.Open());
  int64_t rows = 0;
  while (scanner.HasMoreRows()) {
    ScanBatch batch;
    NYALA_RETURN_NOT_OK(scanner.NextBatch(&batch));
    for (int i = 0; i < batch.num_rows(); i++) {
      NYALA_ASSIGN_OR_RETURN(int32_t score, batch.row(i).GetInt32(1));
      if (score < 95) return Status::RuntimeError("the predicate let a row through");
      rows++;
    }
  }
  std::printf("scan score >= 95: %lld rows\n", static_cast<long long>(rows));
  if (rows != kRows / 20) return Status::RuntimeError("expected " + std::to_string(kRows / 20));

  NYALA_RETURN_NOT_OK(client->DeleteTable(name));
  std::printf("deleted table %s\n", name.c_str());
  return Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s <master>[,<master>...] [table name]\n", argv[0]);
    return 2;
  }
  const std::string name = argc == 3 ? argv[2] : "nyala_client_example";
  const Status s = Run(argv[1], name);
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
