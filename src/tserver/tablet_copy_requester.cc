#include "tserver/tablet_copy_requester.h"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "common/flag_tags.h"
#include "common/wire_protocol.h"
#include "consensus/peer_id.h"
#include "consensus/raft_group.h"
#include "rpc/messenger.h"
#include "rpc/rpc_controller.h"
#include "rpc/sockaddr.h"
#include "tserver/tablet_manager.h"
#include "tserver/tablet_replica.h"
#include "tserver/tserver_admin.proxy.h"

DEFINE_int32(tablet_copy_poll_interval_ms, 1000,
             "How often a tablet's leader asks the server of a replica it sent to fetch a copy "
             "how the copy goes (StartTabletCopy), until it is done or failed.");
TAG_FLAG(tablet_copy_poll_interval_ms, runtime);

namespace nyala::tserver {

namespace {

constexpr int64_t kMaxBackoffMs = 30'000;
constexpr int64_t kRpcTimeoutMs = 10'000;

}  // namespace

TabletCopyRequester::TabletCopyRequester(Options options) : opts_(std::move(options)) {
  thread_ = std::thread([this] { Loop(); });
}

TabletCopyRequester::~TabletCopyRequester() { Shutdown(); }

void TabletCopyRequester::Shutdown() {
  {
    MutexLock l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void TabletCopyRequester::CopyNeeded(const std::string& tablet_id, const std::string& peer_uuid,
                                     uint64_t index) {
  if (peer_uuid.empty()) return;
  bool fresh;
  {
    MutexLock l(mu_);
    if (stop_) return;
    auto [it, inserted] = pending_.try_emplace(Key{tablet_id, peer_uuid});
    it->second.min_index = std::max(it->second.min_index, index);
    fresh = inserted;
    if (inserted) it->second.next_ask = MonoTime::Now();
  }
  if (fresh) {
    LOG(INFO) << "tablet " << tablet_id << ": the replica on server " << peer_uuid
              << " needs a copy (at index " << index << " or later); asking it to fetch one";
    cv_.notify_all();
  }
}

size_t TabletCopyRequester::NumPending() const {
  MutexLock l(mu_);
  return pending_.size();
}

void TabletCopyRequester::Loop() {
  UniqueLock l(mu_);
  while (!stop_) {
    const MonoTime now = MonoTime::Now();
    std::vector<std::pair<Key, Pending>> due;
    MonoTime next = now + MonoDelta::FromMilliseconds(FLAGS_tablet_copy_poll_interval_ms);
    for (const auto& [key, p] : pending_) {
      if (p.next_ask <= now) {
        due.emplace_back(key, p);
      } else {
        next = std::min(next, p.next_ask);
      }
    }
    if (due.empty()) {
      cv_.wait_for(l, std::chrono::microseconds((next - now).ToMicroseconds() + 1000));
      continue;
    }
    l.Unlock();
    std::vector<std::pair<Key, std::optional<Pending>>> outcomes;
    for (auto& [key, p] : due) {
      const bool keep = Ask(key, &p);
      outcomes.emplace_back(key, keep ? std::optional<Pending>(p) : std::nullopt);
    }
    l.Lock();
    for (auto& [key, p] : outcomes) {
      auto it = pending_.find(key);
      if (it == pending_.end()) continue;
      if (!p) {
        pending_.erase(it);
      } else {
        const uint64_t min_index = std::max(it->second.min_index, p->min_index);
        it->second = *p;
        it->second.min_index = min_index;
      }
    }
  }
}

bool TabletCopyRequester::Ask(const Key& key, Pending* p) {
  const auto& [tablet_id, peer_uuid] = key;
  const std::string who = "tablet " + tablet_id + ": the copy to server " + peer_uuid;
  std::shared_ptr<Tablet> t = opts_.tablets->Lookup(tablet_id);
  std::shared_ptr<consensus::RaftGroup> g = t ? t->replica().group() : nullptr;
  if (!g || g->leader_term() == 0) {
    VLOG(1) << who << ": dropped, this server no longer leads the tablet";
    return false;
  }
  const consensus::PeerId peer = consensus::PeerIdFromUuid(peer_uuid);
  auto backoff = [&](const Status& why) {
    p->failures++;
    const int64_t ms = std::min<int64_t>(kMaxBackoffMs, int64_t{500} << std::min(p->failures, 10));
    p->next_ask = MonoTime::Now() + MonoDelta::FromMilliseconds(ms);
    LOG(WARNING) << who << " " << why.ToString() << "; asking again in " << ms << " ms";
  };
  const std::string address = opts_.tablets->PeerAddress(peer_uuid);
  if (address.empty()) {
    backoff(Status::NotFound("cannot start: the server's address is not known yet"));
    return true;
  }
  auto addr = rpc::ResolveAddress(address);
  if (!addr.ok()) {
    backoff(addr.status());
    return true;
  }
  const auto [self_host, self_port] = opts_.self_address();
  if (self_host.empty()) {
    backoff(Status::ServiceUnavailable("cannot start: this server does not listen yet"));
    return true;
  }
  StartTabletCopyRequestPB req;
  req.set_dest_uuid(peer_uuid);
  req.set_tablet_id(tablet_id);
  req.mutable_source()->set_permanent_uuid(opts_.self_uuid);
  req.mutable_source()->set_host(self_host);
  req.mutable_source()->set_port(self_port);
  req.set_min_index(p->min_index);
  StartTabletCopyResponsePB resp;
  rpc::RpcController rpc;
  rpc.set_timeout(MonoDelta::FromMilliseconds(kRpcTimeoutMs));
  TabletServerAdminServiceProxy proxy(opts_.messenger, *addr);
  Status s = proxy.StartTabletCopy(req, &resp, &rpc);
  if (s.ok() && resp.has_error()) s = StatusFromPB(resp.error().status());
  if (!s.ok()) {
    backoff(s.CloneAndPrepend("could not be started"));
    return true;
  }
  const MonoTime now = MonoTime::Now();
  switch (resp.state()) {
    case StartTabletCopyResponsePB::DONE:
      LOG(INFO) << who << " is done: it holds the tablet at index " << resp.applied_index();
      g->ReportCopied(peer, resp.applied_index(), /*ok=*/true);
      return false;
    case StartTabletCopyResponsePB::COPYING:
      if (now - p->last_logged > MonoDelta::FromSeconds(10)) {
        LOG(INFO) << who << " is running: " << resp.bytes_done() << " of " << resp.bytes_total()
                  << " bytes fetched";
        p->last_logged = now;
      }
      p->next_ask = now + MonoDelta::FromMilliseconds(FLAGS_tablet_copy_poll_interval_ms);
      return true;
    default: {
      g->ReportCopied(peer, 0, /*ok=*/false);
      backoff(Status::RuntimeError("failed", StatusFromPB(resp.failure()).ToString()));
      return true;
    }
  }
}

}  // namespace nyala::tserver
