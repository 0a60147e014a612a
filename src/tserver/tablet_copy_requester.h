// TabletCopyRequester: a tablet server's side of tablet copy as the leader of tablets.
// When a group this server leads needs a copy for a member (TabletReplica's
// copy_needed hook: the member's entries are gone from the log, or its server hosts
// no replica), the requester asks that member's server to fetch a copy from this
// one (TabletServerAdminService.StartTabletCopy), asks again every
// --tablet_copy_poll_interval_ms while the copy runs, and once the member's server
// reports it DONE tells the group (RaftGroup::ReportCopied), which resumes replicating
// to it after the copy's index. A failed copy is reported too (the group asks again)
// and the next request waits a backoff that doubles up to 30 s. Requests for tablets
// this server no longer leads are dropped.
//
// Threads: CopyNeeded may be called from any thread and never blocks (it runs on
// consensus workers); the calls go out from the requester's own thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "nyala/monotime.h"

namespace nyala::rpc {
class Messenger;
}

namespace nyala::tserver {

class TabletManager;

class TabletCopyRequester {
 public:
  struct Options {
    std::string self_uuid;
    // Where this server's RPC service listens (the copy source), known once it started:
    // called when a request goes out; an empty host means not yet.
    std::function<std::pair<std::string, uint32_t>()> self_address;
    std::shared_ptr<rpc::Messenger> messenger;
    TabletManager* tablets = nullptr;  // must outlive the requester
  };
  explicit TabletCopyRequester(Options options);
  ~TabletCopyRequester();  // Shutdown()
  TabletCopyRequester(const TabletCopyRequester&) = delete;
  TabletCopyRequester& operator=(const TabletCopyRequester&) = delete;

  // Tablet `tablet_id`'s replica on server `peer_uuid` needs a copy holding index
  // `index` or later.
  void CopyNeeded(const std::string& tablet_id, const std::string& peer_uuid, uint64_t index)
      EXCLUDES(mu_);
  // Copies asked for and not yet done or dropped.
  size_t NumPending() const EXCLUDES(mu_);
  // Stops the thread (the copies the peers run go on without this server's polls).
  void Shutdown() EXCLUDES(mu_);

 private:
  struct Pending {
    uint64_t min_index = 0;
    MonoTime next_ask;
    int failures = 0;
    MonoTime last_logged;
  };
  using Key = std::pair<std::string, std::string>;  // tablet id, peer uuid
  void Loop() EXCLUDES(mu_);
  // Asks the peer about one copy; false when the entry is finished (remove it).
  bool Ask(const Key& key, Pending* p);

  const Options opts_;
  mutable Mutex mu_;
  CondVar cv_;
  std::map<Key, Pending> pending_ GUARDED_BY(mu_);
  bool stop_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace nyala::tserver
