// TestTabletManager: a TabletManager in its production shape, for the tablet server's
// tests and benchmarks that run tablets without a whole TabletServer. It starts what
// TabletServer::Init starts, in the same order: the manager's stores, the request
// records, a ConsensusRuntime on a messenger of its own with the shared log in its
// WAL dir (real fdatasync, --log_fsync), and every tablet's Raft group. A tablet
// created without peers is a group of one that leads within an fdatasync or two;
// Start() returns once every such tablet leads.
// Stop() shuts them down as the server does; Start() again over the same dirs is a
// restart. Header-only; not part of the library.
//
// Thread-safety: Start and Stop from the test's thread; the manager, runtime and
// tracker it hands out are thread-safe.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "common/result.h"
#include "common/status.h"
#include "consensus/log.h"
#include "consensus/peer_id.h"
#include "consensus/runtime.h"
#include "nyala/monotime.h"
#include "rpc/messenger.h"
#include "tserver/request_tracker.h"
#include "tserver/tablet_manager.h"

namespace nyala::tserver::testing {

class TestTabletManager {
 public:
  struct Options {
    std::string data_dir;               // the store: <data_dir>/tablets
    std::string wal_dir;                // the consensus log; "" for <data_dir>/wal
    TServerMetrics* metrics = nullptr;  // must outlive the manager; null for none
    // Gets the stored request records and the writes applied; null for one of its own.
    // Must outlive the manager.
    RequestTracker* tracker = nullptr;
    std::string uuid = "00000000000000000000000000000001";  // this server's
  };

  static Result<std::unique_ptr<TestTabletManager>> Start(Options options) {
    std::unique_ptr<TestTabletManager> m(new TestTabletManager(std::move(options)));
    RETURN_NOT_OK(m->StartParts());
    return m;
  }
  ~TestTabletManager() { Stop(); }
  TestTabletManager(const TestTabletManager&) = delete;
  TestTabletManager& operator=(const TestTabletManager&) = delete;

  // As TabletServer::Shutdown: the runtime first (writes waiting for their groups get
  // an unknown outcome), then the manager (flushes the stores), then the messenger.
  // Idempotent.
  void Stop() {
    if (runtime_) runtime_->Shutdown();
    if (manager_) manager_->Shutdown();
    manager_.reset();
    runtime_.reset();
    if (messenger_) messenger_->Shutdown();
    messenger_.reset();
  }

  TabletManager* manager() const { return manager_.get(); }
  consensus::ConsensusRuntime* runtime() const { return runtime_.get(); }
  RequestTracker* tracker() const { return tracker_; }
  const std::string& uuid() const { return opts_.uuid; }
  const std::string& wal_dir() const { return opts_.wal_dir; }

 private:
  explicit TestTabletManager(Options options) : opts_(std::move(options)) {
    if (opts_.wal_dir.empty()) opts_.wal_dir = opts_.data_dir + "/wal";
    if (opts_.tracker == nullptr) {
      own_tracker_ = std::make_unique<RequestTracker>();
      opts_.tracker = own_tracker_.get();
    }
    tracker_ = opts_.tracker;
  }

  Status StartParts() {
    manager_ =
        std::make_unique<TabletManager>(std::vector<std::string>{opts_.data_dir}, opts_.metrics);
    RETURN_NOT_OK(manager_->Open());
    RETURN_NOT_OK(manager_->LoadRequestRecords(tracker_));
    rpc::MessengerOptions mo;
    mo.name = "test-ts";
    mo.num_reactors = 1;
    ASSIGN_OR_RETURN(messenger_, rpc::Messenger::Create(mo));
    consensus::RuntimeOptions ro;
    ro.server_id = consensus::PeerIdFromUuid(opts_.uuid);
    ro.messenger = messenger_;
    ro.log = consensus::LogOptions::FromFlags(opts_.wal_dir);
    ASSIGN_OR_RETURN(runtime_, consensus::ConsensusRuntime::Start(std::move(ro)));
    RETURN_NOT_OK(manager_->StartReplication(runtime_.get(), tracker_, opts_.uuid));
    // A restarted group of one campaigns at once; tests go on once it leads (a new
    // tablet's CreateTablet waits for that itself).
    for (const auto& t : manager_->GetTablets()) {
      if (t->state() != TabletState::kRunning || t->metadata().peers_size() > 1) continue;
      if (!t->replica().WaitUntilLeader(MonoDelta::FromSeconds(30))) {
        return Status::TimedOut("tablet " + t->tablet_id() + " has no leader after a restart");
      }
    }
    return Status::OK();
  }

  Options opts_;
  std::unique_ptr<RequestTracker> own_tracker_;
  RequestTracker* tracker_ = nullptr;
  std::shared_ptr<rpc::Messenger> messenger_;
  std::unique_ptr<consensus::ConsensusRuntime> runtime_;
  std::unique_ptr<TabletManager> manager_;
};

}  // namespace nyala::tserver::testing
