// TabletRpcTasks: the master's outstanding CreateTablet / DeleteTablet calls to
// tablet servers and ChangeConfig / LeaderStepDown calls to tablets' leaders, one task
// per (kind, server, tablet). The catalog manager's
// background thread decides which tasks it wants each pass and calls Send*; a task
// already in flight or backing off after a failure is not sent again until due.
// Completions are queued (TakeResults) and wake the background thread.
//
// Shared (shared_ptr) between the catalog manager and the RPC callbacks, so a
// callback that runs after the catalog manager stopped touches only this object.
//
// Thread-safety: thread-safe; mu_ is a leaf lock. Callbacks run on reactor threads
// and never block.
#pragma once

#include <compare>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "nyala/monotime.h"
#include "rpc/messenger.h"
#include "tserver/tserver_admin.pb.h"

namespace nyala::master {

class TabletRpcTasks : public std::enable_shared_from_this<TabletRpcTasks> {
 public:
  enum class Kind { kCreate, kDelete, kChangeConfig, kStepDown, kAlterSchema };
  struct Key {
    Kind kind;
    std::string ts_uuid;
    std::string tablet_id;
    auto operator<=>(const Key&) const = default;
  };
  struct Result {
    Key key;
    Status status;
    // The tablet server's error code when it answered with one (e.g. NOT_THE_LEADER).
    std::optional<tserver::TabletServerErrorPB::Code> ts_error;
    // AlterSchema: the schema version the tablet's leader answered it has.
    uint32_t schema_version = 0;
  };

  explicit TabletRpcTasks(std::shared_ptr<rpc::Messenger> messenger)
      : messenger_(std::move(messenger)) {}

  // True when `key` is neither in flight nor backing off at `now`.
  bool IsDue(const Key& key, MonoTime now) const EXCLUDES(mu_);
  // Send the call to `address` ("host:port"); the outcome arrives in TakeResults().
  // A call for a key that is not due is dropped.
  void SendCreate(const std::string& address, tserver::CreateTabletRequestPB req, MonoTime now)
      EXCLUDES(mu_);
  void SendDelete(const std::string& address, tserver::DeleteTabletRequestPB req, MonoTime now)
      EXCLUDES(mu_);
  // To the tablet's leader `req.dest_uuid()`; the key's server is that leader.
  void SendChangeConfig(const std::string& address, tserver::ChangeConfigRequestPB req,
                        MonoTime now) EXCLUDES(mu_);
  // A leadership transfer, to the tablet's leader `req.dest_uuid()`.
  void SendStepDown(const std::string& address, tserver::LeaderStepDownRequestPB req, MonoTime now)
      EXCLUDES(mu_);
  // A schema change, to the tablet's leader `req.dest_uuid()`.
  void SendAlterSchema(const std::string& address, tserver::AlterSchemaRequestPB req,
                       MonoTime now) EXCLUDES(mu_);
  // Forgets tasks whose key fails `keep` (e.g. of tablets now running or gone).
  template <typename Pred>
  void Retain(Pred keep) EXCLUDES(mu_) {
    MutexLock l(mu_);
    for (auto it = tasks_.begin(); it != tasks_.end();) {
      it = (it->second.in_flight || keep(it->first)) ? std::next(it) : tasks_.erase(it);
    }
  }

  std::vector<Result> TakeResults() EXCLUDES(mu_);
  size_t NumInFlight() const EXCLUDES(mu_);
  // Calls in flight to each tablet server, by uuid.
  std::map<std::string, int> InFlightPerServer() const EXCLUDES(mu_);
  // Tasks in flight or backing off.
  size_t NumTasks() const EXCLUDES(mu_);

  // Background-thread wakeups: Wake() from any thread; WaitForWork() returns after
  // `max_wait`, on Wake(), or at once if woken since the last call.
  void Wake();
  void WaitForWork(MonoDelta max_wait);

 private:
  struct TaskState {
    bool in_flight = false;
    int attempts = 0;
    MonoTime next_attempt;
  };
  // A call to a tablet's leader: ChangeConfig or LeaderStepDown.
  template <typename Req, typename Resp, typename AsyncMethod>
  void SendToLeader(Kind kind, const std::string& address, Req req, MonoTime now,
                    AsyncMethod method) EXCLUDES(mu_);
  // Marks `key` in flight if due; false if it is not.
  bool Start(const Key& key, MonoTime now) EXCLUDES(mu_);
  void Finish(const Key& key, Status s,
              std::optional<tserver::TabletServerErrorPB::Code> ts_error = std::nullopt,
              uint32_t schema_version = 0) EXCLUDES(mu_);

  const std::shared_ptr<rpc::Messenger> messenger_;
  mutable Mutex mu_;
  std::map<Key, TaskState> tasks_ GUARDED_BY(mu_);
  std::vector<Result> results_ GUARDED_BY(mu_);

  Mutex wake_mu_;
  CondVar wake_cv_;
  bool woken_ GUARDED_BY(wake_mu_) = false;
};

}  // namespace nyala::master
