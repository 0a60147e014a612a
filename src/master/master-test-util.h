// Test helpers for the master's unit tests (include only from *-test.cc):
//  - FakeTabletServer: a real Messenger on 127.0.0.1:0 serving a small
//    TabletServerAdminService (CreateTablet / DeleteTablet / ListTablets) that
//    records its tablets, and builds the heartbeats the real tablet server sends.
//    Stands in for nyala-tserver until the integration tests run the real one.
//    Each tablet's consensus state is made up as the real server's would start: the
//    first peer of CreateTablet's `peers` (or the only replica, with none) LEADER in
//    term 1, the others FOLLOWER; SetConsensusForTests() changes it. Incremental
//    reports carry the tablets created, deleted or changed since the last report.
//    DeleteTablet records each call's delete_type (DeleteLog()).
//    ChangeConfig acts as a real leader's: refused (NOT_THE_LEADER) unless this
//    replica leads, one member at a time (INVALID_CONFIG for adding a member,
//    promoting a learner not caught up, removing a non-member or the last voter),
//    answered with the change committed: the configuration, the committed index and
//    the followers' states it reports change. How an added learner catches up is the
//    leader's LearnerMode. With a FakeCluster shared by the servers, the leader's
//    change reaches the other members' reported configurations, an added learner's
//    server gets the tablet (its "copy") when it serves, and every change is logged.
//  - FakeCluster: that registry.
//  - MakeCreateTableRequest: CreateTable requests of the test schema
//    (key INT64 KEY, v STRING NULLABLE) with hash buckets, splits and bounds.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
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
#include "common/result.h"
#include "common/row_operations.h"
#include "master/master.pb.h"
#include "nyala/partition.h"
#include "nyala/row.h"
#include "nyala/schema.h"
#include "rpc/fake_service_test_util.h"
#include "rpc/messenger.h"
#include "rpc/rpc_context.h"
#include "server/fs_manager.h"
#include "tserver/tserver_admin.service.h"

namespace nyala::master {

struct FakeCluster;

class FakeTabletServer {
 public:
  // How a leader's new learners catch up.
  enum LearnerMode {
    kCatchUpAtOnce = 0,  // REPLICATE at the committed index as soon as added
    kStuck = 1,          // NEEDS_COPY at index 0, for good
    kProgressing = 2,    // CATCHING_UP_FROM_LOG: each report of the leader moves it one
                         // entry on and the committed index two, so it never catches up
  };
  struct State {
    Mutex mu;
    std::map<std::string, tserver::CreateTabletRequestPB> tablets GUARDED_BY(mu);  // by id
    std::map<std::string, ConsensusStatePB> consensus GUARDED_BY(mu);              // by id
    std::set<std::string> changed GUARDED_BY(mu);  // for the next incremental report
    std::map<std::string, ReportedTabletStatsPB> stats GUARDED_BY(mu);  // by id, if set
    std::set<std::string> removed GUARDED_BY(mu);
    // (tablet id, delete_type) of every DeleteTablet, in order.
    std::vector<std::pair<std::string, tserver::TabletDataStatePB>> delete_log GUARDED_BY(mu);
    std::string uuid;                      // set before serving
    std::shared_ptr<FakeCluster> cluster;  // set before serving, or null
    std::atomic<bool> serving{false};
    std::atomic<bool> fail_creates{false};
    std::atomic<int> create_delay_ms{0};  // each CreateTablet takes this long
    std::atomic<int> creates{0};
    std::atomic<int> deletes{0};
    std::atomic<int> change_configs{0};
    std::atomic<int> learner_mode{kCatchUpAtOnce};
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
          for (const auto& p : req->peers()) {
            c.add_voter_uuids(p.permanent_uuid());
            if (first && p.permanent_uuid() != st_->uuid) {
              FollowerStatusPB* f = c.add_followers();  // caught up: the log is empty
              f->set_uuid(p.permanent_uuid());
              f->set_state(FollowerStatusPB::REPLICATE);
            }
          }
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
      st_->delete_log.emplace_back(req->tablet_id(), req->delete_type());
      // A tombstone is not reported either: to the master, both are removals.
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
    // Defined after FakeCluster.
    void ChangeConfig(const tserver::ChangeConfigRequestPB* req,
                      tserver::ChangeConfigResponsePB* resp, rpc::RpcContext* ctx) override;
    // Hands leadership to the voter asked for (or the first other one) at once, in a
    // new term: both servers report it next.
    void LeaderStepDown(const tserver::LeaderStepDownRequestPB* req,
                        tserver::LeaderStepDownResponsePB* resp, rpc::RpcContext* ctx) override;
    NYALA_FAKE_UNIMPLEMENTED(tserver, StartTabletCopy)
    NYALA_FAKE_UNIMPLEMENTED(tserver, ChecksumTablet)
    NYALA_FAKE_UNIMPLEMENTED(tserver, AlterSchema)

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
    RETURN_NOT_OK(messenger_->AddListener(rpc::Sockaddr::Loopback(0), &addr_));
    state_->serving = true;
    return Status::OK();
  }
  // Stops serving (calls to it fail); Start() again serves on a new port.
  void Stop() {
    state_->serving = false;
    messenger_->Shutdown();
    messenger_.reset();
  }
  // Shares `cluster` with the other servers of the test (before Start()).
  inline void JoinCluster(std::shared_ptr<FakeCluster> cluster);

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
    // Learners catching up (kProgressing) move on with every report of their leader.
    for (auto& [id, c] : state_->consensus) {
      if (c.role() != LEADER) continue;
      bool moved = false;
      for (auto& f : *c.mutable_followers()) {
        if (f.state() != FollowerStatusPB::CATCHING_UP_FROM_LOG) continue;
        if (!moved) c.set_committed_index(c.committed_index() + 2);
        moved = true;
        f.set_match_index(f.match_index() + 1);
      }
      if (moved) {
        c.set_applied_index(c.committed_index());
        c.set_last_index(c.committed_index());
        state_->changed.insert(id);
      }
    }
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
  // This server's consensus state of `tablet_id` (empty if none).
  ConsensusStatePB ConsensusOf(const std::string& tablet_id) const {
    MutexLock l(state_->mu);
    auto it = state_->consensus.find(tablet_id);
    return it == state_->consensus.end() ? ConsensusStatePB() : it->second;
  }
  // The learners of the tablets this server leads catch up now (next report).
  void CatchUpLearnersForTests() {
    MutexLock l(state_->mu);
    for (auto& [id, c] : state_->consensus) {
      if (c.role() != LEADER) continue;
      for (auto& f : *c.mutable_followers()) {
        f.set_state(FollowerStatusPB::REPLICATE);
        f.set_match_index(c.committed_index());
      }
      state_->changed.insert(id);
    }
  }
  std::vector<std::pair<std::string, tserver::TabletDataStatePB>> DeleteLog() const {
    MutexLock l(state_->mu);
    return state_->delete_log;
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

// The fake tablet servers of one test, for their leaders' configuration changes
// (see the file comment). Thread-safe; mu is taken before a server's State::mu,
// never while holding one.
struct FakeCluster {
  struct ConfigChange {
    std::string leader;
    std::string tablet_id;
    tserver::ChangeConfigTypePB type;
    std::string peer;
    std::vector<std::string> voters;  // after the change
    std::vector<std::string> learners;
    std::string ToString() const { return tserver::ChangeConfigTypePB_Name(type) + " " + peer; }
  };

  // Every change committed, in order.
  std::vector<ConfigChange> Changes() const {
    MutexLock l(mu);
    return changes;
  }
  std::vector<ConfigChange> ChangesOf(const std::string& tablet_id) const {
    MutexLock l(mu);
    std::vector<ConfigChange> out;
    for (const auto& c : changes) {
      if (c.tablet_id == tablet_id) out.push_back(c);
    }
    return out;
  }

  // Called by the leader `leader` once it committed a change of `tablet_id` (without
  // holding its own lock): the other members follow, an added learner's server gets
  // the tablet.
  void Applied(const std::string& leader, const std::string& tablet_id,
               tserver::ChangeConfigTypePB type, const std::string& peer,
               const ConsensusStatePB& after, const tserver::CreateTabletRequestPB& def) {
    MutexLock l(mu);
    changes.push_back(ConfigChange{leader,
                                   tablet_id,
                                   type,
                                   peer,
                                   {after.voter_uuids().begin(), after.voter_uuids().end()},
                                   {after.learner_uuids().begin(), after.learner_uuids().end()}});
    for (const auto& [uuid, weak] : servers) {
      if (uuid == leader) continue;
      std::shared_ptr<FakeTabletServer::State> st = weak.lock();
      if (!st) continue;  // that server is gone
      const bool learner =
          std::count(after.learner_uuids().begin(), after.learner_uuids().end(), uuid) > 0;
      const bool voter =
          std::count(after.voter_uuids().begin(), after.voter_uuids().end(), uuid) > 0;
      if (!learner && !voter) continue;  // a removed replica keeps its old view
      MutexLock sl(st->mu);
      auto c = st->consensus.find(tablet_id);
      if (c == st->consensus.end()) {
        if (!learner || !st->serving) continue;  // no copy while it is down
        st->tablets[tablet_id] = def;
        st->removed.erase(tablet_id);
        c = st->consensus.emplace(tablet_id, ConsensusStatePB()).first;
        c->second.set_term(after.term());
        c->second.set_leader_uuid(leader);
      }
      c->second.set_role(learner ? LEARNER : (c->second.role() == LEADER ? LEADER : FOLLOWER));
      *c->second.mutable_voter_uuids() = after.voter_uuids();
      *c->second.mutable_learner_uuids() = after.learner_uuids();
      c->second.set_committed_index(after.committed_index());
      st->changed.insert(tablet_id);
    }
  }

  mutable Mutex mu;
  // Weak: each server's state holds the cluster (a cycle would never be freed).
  std::map<std::string, std::weak_ptr<FakeTabletServer::State>> servers GUARDED_BY(mu);
  std::vector<ConfigChange> changes GUARDED_BY(mu);
};

inline void FakeTabletServer::JoinCluster(std::shared_ptr<FakeCluster> cluster) {
  MutexLock l(cluster->mu);
  cluster->servers[uuid_] = state_;
  state_->cluster = std::move(cluster);
}

inline void FakeTabletServer::AdminService::ChangeConfig(const tserver::ChangeConfigRequestPB* req,
                                                         tserver::ChangeConfigResponsePB* resp,
                                                         rpc::RpcContext* ctx) {
  st_->change_configs++;
  auto refuse = [&](tserver::TabletServerErrorPB::Code code, const std::string& msg) {
    resp->mutable_error()->set_code(code);
    resp->mutable_error()->mutable_status()->set_code(Status::kIllegalState);
    resp->mutable_error()->mutable_status()->set_message(msg);
    ctx->RespondSuccess();
  };
  const std::string& peer = req->peer().permanent_uuid();
  ConsensusStatePB after;
  tserver::CreateTabletRequestPB def;
  {
    MutexLock l(st_->mu);
    auto it = st_->consensus.find(req->tablet_id());
    if (it == st_->consensus.end()) {
      return refuse(tserver::TabletServerErrorPB::TABLET_NOT_FOUND, "no such tablet");
    }
    ConsensusStatePB& c = it->second;
    if (c.role() != LEADER) {
      resp->mutable_error()->set_leader_uuid(c.leader_uuid());
      return refuse(tserver::TabletServerErrorPB::NOT_THE_LEADER, "not the leader");
    }
    auto has = [](const google::protobuf::RepeatedPtrField<std::string>& v, const std::string& x) {
      return std::count(v.begin(), v.end(), x) > 0;
    };
    auto erase = [](google::protobuf::RepeatedPtrField<std::string>* v, const std::string& x) {
      for (int i = 0; i < v->size(); i++) {
        if (v->Get(i) == x) {
          v->erase(v->begin() + i);
          return;
        }
      }
    };
    auto follower = [&](const std::string& uuid) -> FollowerStatusPB* {
      for (auto& f : *c.mutable_followers()) {
        if (f.uuid() == uuid) return &f;
      }
      return nullptr;
    };
    const bool voter = has(c.voter_uuids(), peer);
    const bool learner = has(c.learner_uuids(), peer);
    const uint64_t index = c.committed_index() + 1;  // the change's entry
    switch (req->type()) {
      case tserver::ADD_LEARNER: {
        if (voter || learner) return refuse(tserver::TabletServerErrorPB::INVALID_CONFIG, "member");
        if (req->peer().host().empty() || req->peer().port() == 0) {
          return refuse(tserver::TabletServerErrorPB::INVALID_CONFIG, "no address");
        }
        c.add_learner_uuids(peer);
        FollowerStatusPB* f = c.add_followers();
        f->set_uuid(peer);
        switch (st_->learner_mode.load()) {
          case kCatchUpAtOnce:
            f->set_state(FollowerStatusPB::REPLICATE);
            f->set_match_index(index);
            break;
          case kStuck:
            f->set_state(FollowerStatusPB::NEEDS_COPY);
            break;
          default:
            f->set_state(FollowerStatusPB::CATCHING_UP_FROM_LOG);
            break;
        }
        break;
      }
      case tserver::PROMOTE_LEARNER: {
        FollowerStatusPB* f = follower(peer);
        if (!learner) return refuse(tserver::TabletServerErrorPB::INVALID_CONFIG, "no learner");
        if (f == nullptr || f->state() != FollowerStatusPB::REPLICATE ||
            f->match_index() < c.committed_index()) {
          return refuse(tserver::TabletServerErrorPB::INVALID_CONFIG, "not caught up");
        }
        erase(c.mutable_learner_uuids(), peer);
        c.add_voter_uuids(peer);
        f->set_match_index(index);
        break;
      }
      case tserver::REMOVE_PEER: {
        if (!voter && !learner) {
          return refuse(tserver::TabletServerErrorPB::INVALID_CONFIG, "not a member");
        }
        if (voter && c.voter_uuids_size() == 1) {
          return refuse(tserver::TabletServerErrorPB::INVALID_CONFIG, "the last voter");
        }
        erase(voter ? c.mutable_voter_uuids() : c.mutable_learner_uuids(), peer);
        for (int i = 0; i < c.followers_size(); i++) {
          if (c.followers(i).uuid() == peer) {
            c.mutable_followers()->erase(c.mutable_followers()->begin() + i);
            break;
          }
        }
        break;
      }
      default:
        return refuse(tserver::TabletServerErrorPB::INVALID_CONFIG, "unknown change");
    }
    c.set_committed_index(index);
    c.set_applied_index(index);
    c.set_last_index(index);
    // Caught-up followers stay caught up.
    for (auto& f : *c.mutable_followers()) {
      if (f.state() == FollowerStatusPB::REPLICATE) f.set_match_index(index);
    }
    st_->changed.insert(req->tablet_id());
    after = c;
    def = st_->tablets[req->tablet_id()];
  }
  if (st_->cluster) {
    st_->cluster->Applied(st_->uuid, req->tablet_id(), req->type(), peer, after, def);
  }
  resp->set_index(after.committed_index());
  ctx->RespondSuccess();
}

inline void FakeTabletServer::AdminService::LeaderStepDown(
    const tserver::LeaderStepDownRequestPB* req, tserver::LeaderStepDownResponsePB* resp,
    rpc::RpcContext* ctx) {
  auto refuse = [&](tserver::TabletServerErrorPB::Code code, const std::string& msg) {
    resp->mutable_error()->set_code(code);
    resp->mutable_error()->mutable_status()->set_code(Status::kIllegalState);
    resp->mutable_error()->mutable_status()->set_message(msg);
    ctx->RespondSuccess();
  };
  if (!st_->cluster) return refuse(tserver::TabletServerErrorPB::UNKNOWN_ERROR, "no cluster");
  MutexLock cl(st_->cluster->mu);  // before any server's State::mu
  ConsensusStatePB old;
  {
    MutexLock l(st_->mu);
    auto it = st_->consensus.find(req->tablet_id());
    if (it == st_->consensus.end()) {
      return refuse(tserver::TabletServerErrorPB::TABLET_NOT_FOUND, "no such tablet");
    }
    if (it->second.role() != LEADER) {
      resp->mutable_error()->set_leader_uuid(it->second.leader_uuid());
      return refuse(tserver::TabletServerErrorPB::NOT_THE_LEADER, "not the leader");
    }
    old = it->second;
  }
  std::string to = req->new_leader_uuid();
  for (const auto& v : old.voter_uuids()) {
    if (to.empty() && v != st_->uuid) to = v;
  }
  auto target = st_->cluster->servers.find(to);
  std::shared_ptr<State> ts =
      target == st_->cluster->servers.end() ? nullptr : target->second.lock();
  if (to.empty() || to == st_->uuid || !ts || !ts->serving ||
      !std::count(old.voter_uuids().begin(), old.voter_uuids().end(), to)) {
    return refuse(tserver::TabletServerErrorPB::INVALID_CONFIG, "no voter to hand over to");
  }
  const uint64_t term = old.term() + 1;
  {
    MutexLock l(ts->mu);
    ConsensusStatePB& c = ts->consensus[req->tablet_id()];
    c = old;
    c.set_role(LEADER);
    c.set_term(term);
    c.set_leader_uuid(to);
    c.clear_followers();
    for (const auto* list : {&old.voter_uuids(), &old.learner_uuids()}) {
      for (const auto& m : *list) {
        if (m == to) continue;
        FollowerStatusPB* f = c.add_followers();
        f->set_uuid(m);
        f->set_state(FollowerStatusPB::REPLICATE);
        f->set_match_index(old.committed_index());
      }
    }
    ts->changed.insert(req->tablet_id());
  }
  {
    MutexLock l(st_->mu);
    ConsensusStatePB& c = st_->consensus[req->tablet_id()];
    c.set_role(FOLLOWER);
    c.set_term(term);
    c.set_leader_uuid(to);
    c.clear_followers();
    st_->changed.insert(req->tablet_id());
  }
  resp->set_new_leader_uuid(to);
  ctx->RespondSuccess();
}

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
