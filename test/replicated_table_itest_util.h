// For integration tests of replicated tables: a (key INT64, v INT64) table, a writer
// thread that records every write it got acknowledged, a scan of every row, the check
// that no acknowledged row is lost, and the CLI run as a user runs it.
//
// Thread-safety: Writer is driven by one thread and read under its mutex; the rest are
// plain functions.
#pragma once

#include <glog/logging.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "nyala/client.h"
#include "nyala/monotime.h"
#include "test/external_daemon.h"

namespace nyala::client::itest {

// (key INT64, v INT64) with `tablets` hash buckets and `replicas` replicas.
inline std::shared_ptr<Table> CreateKeyValueTable(Client* client, const std::string& name,
                                                  int tablets, int replicas) {
  auto schema = SchemaBuilder()
                    .AddKeyColumn("key", DataType::kInt64)
                    .AddColumn("v", DataType::kInt64)
                    .Build();
  CHECK_OK(schema.status());
  auto creator = client->NewTableCreator();
  creator->table_name(name).schema(*schema).num_replicas(replicas);
  if (tablets > 1) creator->add_hash_partitions({"key"}, tablets);
  CHECK_OK(creator->Create());
  auto t = client->OpenTable(name);
  CHECK_OK(t.status());
  return *t;
}

inline std::unique_ptr<WriteOperation> UpsertOf(const Table& t, int64_t key, int64_t v) {
  auto op = t.NewUpsert();
  CHECK_OK(op->Set("key", Cell::Int64(key)));
  CHECK_OK(op->Set("v", Cell::Int64(v)));
  return op;
}

// key -> v of every row, read from the tablets' leaders.
inline std::map<int64_t, int64_t> ScanAll(const std::shared_ptr<Table>& t) {
  std::map<int64_t, int64_t> rows;
  Scanner scanner(t);
  CHECK_OK(scanner.SetTimeout(MonoDelta::FromSeconds(30)));
  CHECK_OK(scanner.Open());
  for (int n = 0; scanner.HasMoreRows() && n < 100000; n++) {
    ScanBatch batch;
    Status s = scanner.NextBatch(&batch);
    CHECK(s.ok()) << s.ToString();
    for (int r = 0; r < batch.num_rows(); r++) {
      rows[*batch.row(r).GetInt64("key")] = *batch.row(r).GetInt64("v");
    }
  }
  return rows;
}

// Writes key, key+1, ... (v = key) with one AUTO_FLUSH_SYNC session until Stop(),
// recording every acknowledged key and every failed one.
struct Writer {
  std::atomic<bool> stop{false};
  std::atomic<int64_t> acked{0};
  std::atomic<int64_t> failures{0};
  struct Failure {
    int64_t key;
    MonoTime at;
    std::string error;
  };
  Mutex mu;
  std::set<int64_t> acked_keys GUARDED_BY(mu);
  std::set<int64_t> unknown_keys GUARDED_BY(mu);  // failed: may or may not have landed
  std::string last_error GUARDED_BY(mu);
  // (key, when) of every acknowledgement, in order; every failure, in order.
  std::vector<std::pair<int64_t, MonoTime>> acks GUARDED_BY(mu);
  std::vector<Failure> failed GUARDED_BY(mu);
  std::thread thread;

  void Start(const std::shared_ptr<Client>& client, std::shared_ptr<Table> t, MonoDelta timeout) {
    thread = std::thread([this, client, t, timeout] {
      auto session = client->NewSession();
      CHECK_OK(session->SetTimeout(timeout));
      for (int64_t k = 0; !stop.load() && k < 10'000'000; k++) {
        Status s = session->Apply(UpsertOf(*t, k, k));
        const MonoTime now = MonoTime::Now();
        MutexLock l(mu);
        if (s.ok()) {
          acked_keys.insert(k);
          acks.emplace_back(k, now);
          acked++;
        } else {
          unknown_keys.insert(k);
          failed.push_back({k, now, s.ToString()});
          failures++;
          last_error = s.ToString();
        }
      }
    });
  }
  void Stop() {
    stop = true;
    if (thread.joinable()) thread.join();
  }
  ~Writer() { Stop(); }
};

// Every acknowledged key is in `rows` with its value; every row there was written.
inline void ExpectAcknowledgedRows(Writer* w, const std::map<int64_t, int64_t>& rows) {
  MutexLock l(w->mu);
  for (int64_t k : w->acked_keys) {
    auto it = rows.find(k);
    ASSERT_TRUE(it != rows.end()) << "acknowledged row " << k << " lost";
    EXPECT_EQ(it->second, k);
  }
  for (const auto& [k, v] : rows) {
    EXPECT_TRUE(w->acked_keys.count(k) || w->unknown_keys.count(k))
        << "row " << k << " never written";
  }
}

// Runs the CLI (`nyala <args>`, beside the daemons); its exit code, its stdout and
// stderr in `out`.
inline int RunCli(const std::string& args, std::string* out) {
  const std::string cmd = test::BinDir() + "/nyala " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out->append(buf, n);
  const int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace nyala::client::itest
