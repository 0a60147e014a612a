// Test helpers for the master's unit tests (include only from *-test.cc):
//  - FakeTabletServer: a real Messenger on 127.0.0.1:0 serving a small
//    TabletServerAdminService (CreateTablet / DeleteTablet / ListTablets) that
//    records its tablets, and builds the heartbeats the real tablet server sends.
//    Stands in for nyala-tserver until the integration tests run the real one.
//    Each tablet's consensus state is made up as the real server's would start: the
//    first peer of CreateTablet's `peers` (or the only replica, with none) LEADER in
//    term 1, the others FOLLOWER; SetConsensusForTests() changes it. Incremental
//    reports carry the tablets created, deleted or changed since the last report.
//  - MakeCreateTableRequest: CreateTable requests of the test schema
//    (key INT64 KEY, v STRING NULLABLE) with hash buckets, splits and bounds.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/partition.h"
#include "common/row.h"
#include "common/row_operations.h"
#include "common/schema.h"
#include "master/master.pb.h"
#include "rpc/fake_service_test_util.h"
#include "rpc/messenger.h"
#include "rpc/rpc_context.h"
#include "server/fs_manager.h"
#include "tserver/tserver_admin.service.h"

namespace nyala::master {

class FakeTabletServer {
 public:
  struct State {
    Mutex mu;
    std::map<std::string, tserver::CreateTabletRequestPB> tablets GUARDED_BY(mu);  // by id
    std::map<std::string, ConsensusStatePB> consensus GUARDED_BY(mu);              // by id
    std::set<std::string> changed GUARDED_BY(mu);  // for the next incremental report
    std::map<std::string, ReportedTabletStatsPB> stats GUARDED_BY(mu);  // by id, if set
    std::set<std::string> removed GUARDED_BY(mu);
    std::string uuid;  // set before serving
    std::atomic<bool> fail_creates{false};
    std::atomic<int> create_delay_ms{0};  // each CreateTablet takes this long
    std::atomic<int> creates{0};
    std::atomic<int> deletes{0};
  };

  class AdminService : public tserver::TabletServerAdminServiceIf {
   public:
    explicit AdminService(std::shared_ptr<State> st) : st_(std::move(st)) {}

    void CreateTablet(const tserver::CreateTabletRequestPB* req,
                      tserver::CreateTabletResponsePB* resp, rpc::RpcContext* ctx) override {
      st_->creates++;
      if (st_->create_delay_ms > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(st_->create_delay_ms.load()));
      }
      if (st_->fail_creates) {
        resp->mutable_error()->set_code(tserver::TabletServerErrorPB::UNKNOWN_ERROR);
        resp->mutable_error()->mutable_status()->set_code(Status::kIOError);
        resp->mutable_error()->mutable_status()->set_message("injected failure");
      } else {
        MutexLock l(st_->mu);
        const bool fresh = st_->tablets.count(req->tablet_id()) == 0;
        st_->tablets[req->tablet_id()] = *req;
        if (fresh) {
          ConsensusStatePB c;
          c.set_term(1);
          const bool first = req->peers().empty() || req->peers(0).permanent_uuid() == st_->uuid;
          c.set_role(first ? LEADER : FOLLOWER);
          c.set_leader_uuid(req->peers().empty() ? st_->uuid : req->peers(0).permanent_uuid());
          for (const auto& p : req->peers()) c.add_voter_uuids(p.permanent_uuid());
          st_->consensus[req->tablet_id()] = c;
          st_->changed.insert(req->tablet_id());
          st_->removed.erase(req->tablet_id());
        }
      }
      ctx->RespondSuccess();
    }
    void DeleteTablet(const tserver::DeleteTabletRequestPB* req,
                      tserver::DeleteTabletResponsePB* resp, rpc::RpcContext* ctx) override {
      st_->deletes++;
      MutexLock l(st_->mu);
      if (st_->tablets.erase(req->tablet_id()) == 0) {
        resp->mutable_error()->set_code(tserver::TabletServerErrorPB::TABLET_NOT_FOUND);
        resp->mutable_error()->mutable_status()->set_code(Status::kNotFound);
      } else {
        st_->consensus.erase(req->tablet_id());
        st_->changed.erase(req->tablet_id());
        st_->removed.insert(req->tablet_id());
      }
      ctx->RespondSuccess();
    }
    void ListTablets(const tserver::ListTabletsRequestPB*, tserver::ListTabletsResponsePB* resp,
                     rpc::RpcContext* ctx) override {
      MutexLock l(st_->mu);
      for (const auto& [id, t] : st_->tablets) {
        auto* e = resp->add_tablets();
        e->set_tablet_id(id);
        e->set_table_id(t.table_id());
      }
      ctx->RespondSuccess();
    }
    NYALA_FAKE_UNIMPLEMENTED(tserver, LeaderStepDown)
    NYALA_FAKE_UNIMPLEMENTED(tserver, StartTabletCopy)
    NYALA_FAKE_UNIMPLEMENTED(tserver, ChangeConfig)
    NYALA_FAKE_UNIMPLEMENTED(tserver, ChecksumTablet)

   private:
    const std::shared_ptr<State> st_;
  };

  explicit FakeTabletServer(std::string uuid = server::GenerateUuid())
      : uuid_(std::move(uuid)), state_(std::make_shared<State>()) {
    state_->uuid = uuid_;
  }
  ~FakeTabletServer() {
    if (messenger_) messenger_->Shutdown();
  }

  Status Start() {
    rpc::MessengerOptions o;
    o.name = "fake-ts";
    o.num_reactors = 1;
    ASSIGN_OR_RETURN(messenger_, rpc::Messenger::Create(o));
    RETURN_NOT_OK(messenger_->RegisterService(std::make_unique<AdminService>(state_), 1, 100));
    return messenger_->AddListener(rpc::Sockaddr::Loopback(0), &addr_);
  }
  // Stops serving (calls to it fail); Start() again serves on a new port.
  void Stop() {
    messenger_->Shutdown();
    messenger_.reset();
  }

  // A heartbeat as the tablet server sends it: registration (when `registration`)
  // and a full report (`full_report`) or an incremental one of what changed since
  // the previous report.
  TSHeartbeatRequestPB MakeHeartbeat(bool registration, bool full_report) const {
    TSHeartbeatRequestPB req;
    req.mutable_common()->set_permanent_uuid(uuid_);
    req.mutable_common()->set_instance_seqno(seqno_);
    if (registration) {
      auto* hp = req.mutable_registration()->add_rpc_addresses();
      hp->set_host(addr_.host());
      hp->set_port(addr_.port());
    }
    auto* report = req.mutable_tablet_report();
    report->set_is_incremental(!full_report);
    report->set_sequence_number(seq_++);
    MutexLock l(state_->mu);
    for (const auto& [id, t] : state_->tablets) {
      if (!full_report && !state_->changed.count(id)) continue;
      auto* rt = report->add_updated_tablets();
      rt->set_tablet_id(id);
      rt->set_table_id(t.table_id());
      rt->set_state(TABLET_RUNNING);
      auto c = state_->consensus.find(id);
      if (c != state_->consensus.end()) *rt->mutable_consensus() = c->second;
      auto st = state_->stats.find(id);
      if (st != state_->stats.end()) *rt->mutable_stats() = st->second;
    }
    if (!full_report) {
      for (const auto& id : state_->removed) report->add_removed_tablet_ids(id);
    }
    state_->changed.clear();
    state_->removed.clear();
    return req;
  }

  // Sets this server's consensus state of `tablet_id` (reported next time).
  void SetConsensusForTests(const std::string& tablet_id, ReplicaRolePB role, uint64_t term,
                            const std::string& leader_uuid = "") {
    MutexLock l(state_->mu);
    ConsensusStatePB& c = state_->consensus[tablet_id];
    c.set_role(role);
    c.set_term(term);
    c.set_leader_uuid(leader_uuid);
    state_->changed.insert(tablet_id);
  }
  // Sets the size this server reports for its replica of `tablet_id` (next report).
  void SetStatsForTests(const std::string& tablet_id, int64_t on_disk_size,
                        int64_t live_row_count) {
    MutexLock l(state_->mu);
    ReportedTabletStatsPB& st = state_->stats[tablet_id];
    st.set_on_disk_size(on_disk_size);
    st.set_live_row_count(live_row_count);
    state_->changed.insert(tablet_id);
  }
  // The peers of the CreateTablet that made `tablet_id` here (empty if none).
  std::vector<tserver::RaftPeerPB> PeersOf(const std::string& tablet_id) const {
    MutexLock l(state_->mu);
    auto it = state_->tablets.find(tablet_id);
    if (it == state_->tablets.end()) return {};
    return {it->second.peers().begin(), it->second.peers().end()};
  }

  // Pretends to hold `tablet_id` (e.g. one the master never created).
  void AddTabletForTests(const std::string& tablet_id) {
    MutexLock l(state_->mu);
    state_->tablets[tablet_id].set_tablet_id(tablet_id);
    state_->changed.insert(tablet_id);
  }
  bool HasTablet(const std::string& id) const {
    MutexLock l(state_->mu);
    return state_->tablets.count(id) > 0;
  }
  size_t NumTablets() const {
    MutexLock l(state_->mu);
    return state_->tablets.size();
  }
  void set_seqno(int64_t s) { seqno_ = s; }
  State* state() { return state_.get(); }
  const std::string& uuid() const { return uuid_; }
  const rpc::Sockaddr& addr() const { return addr_; }

 private:
  const std::string uuid_;
  int64_t seqno_ = 1;
  mutable int32_t seq_ = 0;
  std::shared_ptr<State> state_;
  std::shared_ptr<rpc::Messenger> messenger_;
  rpc::Sockaddr addr_;
};

// The test schema: key INT64 (key), v STRING NULLABLE.
inline SchemaPB TestSchemaPB() {
  SchemaPB pb;
  auto* k = pb.add_columns();
  k->set_name("key");
  k->set_type(INT64);
  k->set_is_key(true);
  auto* v = pb.add_columns();
  v->set_name("v");
  v->set_type(STRING);
  v->set_is_nullable(true);
  return pb;
}

// A CreateTable request for the test schema: `hash_buckets` (0: no hash
// dimension) on "key", range partitioning on "key" when `range` with `splits` and
// [lower, upper) `bounds`.
inline CreateTableRequestPB MakeCreateTableRequest(
    const std::string& name, int hash_buckets, bool range, const std::vector<int64_t>& splits = {},
    const std::vector<std::pair<int64_t, int64_t>>& bounds = {}, int num_replicas = 1) {
  CreateTableRequestPB req;
  req.set_name(name);
  *req.mutable_schema() = TestSchemaPB();
  req.set_num_replicas(num_replicas);
  if (hash_buckets > 0) {
    auto* d = req.mutable_partition_schema()->add_hash_dimensions();
    d->add_columns("key");
    d->set_num_buckets(hash_buckets);
  }
  if (range) req.mutable_partition_schema()->mutable_range_schema()->add_columns("key");
  if (!splits.empty() || !bounds.empty()) {
    auto schema = Schema::FromPB(req.schema());
    EXPECT_TRUE(schema.ok()) << schema.status().ToString();
    RowOperationsEncoder enc(&*schema);
    auto add = [&](RowOpType type, int64_t key) {
      Row row(&*schema);
      EXPECT_TRUE(row.Set("key", Cell::Int64(key)).ok());
      EXPECT_TRUE(enc.Add(type, row).ok());
    };
    for (int64_t s : splits) add(RowOpType::kSplitRow, s);
    for (auto [lo, hi] : bounds) {
      add(RowOpType::kRangeLowerBound, lo);
      add(RowOpType::kRangeUpperBound, hi);
    }
    enc.Finish(req.mutable_split_rows_range_bounds());
  }
  return req;
}

}  // namespace nyala::master
