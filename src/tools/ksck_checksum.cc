#include "tools/ksck_checksum.h"

#include <algorithm>
#include <thread>

#include "common/wire_protocol.h"
#include "rpc/messenger.h"
#include "rpc/rpc_controller.h"
#include "rpc/sockaddr.h"
#include "tools/output.h"
#include "tserver/tserver_admin.proxy.h"

namespace nyala::tools {

namespace {

// How far ahead of the replicas the second try asks them to go (entries).
constexpr uint64_t kAhead = 20;
constexpr int kAttempts = 5;

// One replica's checksum at `index`; `*past` when it applied past it first.
ReplicaChecksum Ask(const std::shared_ptr<rpc::Messenger>& messenger, const std::string& tablet_id,
                    const ReplicaView& r, uint64_t index, MonoDelta timeout, bool* past) {
  ReplicaChecksum out;
  out.ts_uuid = r.ts_uuid;
  auto addr = rpc::ResolveAddress(r.address);
  if (!addr.ok()) {
    out.status = addr.status();
    return out;
  }
  tserver::ChecksumTabletRequestPB req;
  req.set_dest_uuid(r.ts_uuid);
  req.set_tablet_id(tablet_id);
  req.set_at_index(index);
  req.set_timeout_ms(uint32_t(std::clamp<int64_t>(timeout.ToMilliseconds(), 1, 60000)));
  tserver::ChecksumTabletResponsePB resp;
  rpc::RpcController rpc;
  rpc.set_timeout(timeout + MonoDelta::FromSeconds(5));
  tserver::TabletServerAdminServiceProxy proxy(messenger, *addr);
  out.status = proxy.ChecksumTablet(req, &resp, &rpc);
  if (out.status.ok() && resp.has_error()) {
    out.status = StatusFromPB(resp.error().status());
    *past = resp.error().code() == tserver::TabletServerErrorPB::REPLICA_TOO_STALE &&
            out.status.IsIllegalState();
  }
  out.checksum = resp.checksum();
  out.rows = resp.rows();
  return out;
}

}  // namespace

TabletChecksums ChecksumTablet(const std::shared_ptr<rpc::Messenger>& messenger,
                               const TabletView& t, MonoDelta timeout) {
  TabletChecksums result;
  std::vector<const ReplicaView*> running;
  uint64_t highest = 0;
  for (const ReplicaView& r : t.replicas) {
    if (!r.running() || !r.live_consensus) continue;
    running.push_back(&r);
    highest = std::max(highest, r.applied_index);
  }
  if (running.empty()) {
    result.problems.push_back("no running replica to checksum");
    return result;
  }
  uint64_t index = highest;
  for (int attempt = 0; attempt < kAttempts; attempt++) {
    std::vector<ReplicaChecksum> sums(running.size());
    std::vector<char> past(running.size(), 0);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < running.size(); i++) {
      threads.emplace_back([&, i] {
        bool p = false;
        sums[i] = Ask(messenger, t.tablet_id, *running[i], index, timeout, &p);
        past[i] = p;
      });
    }
    for (std::thread& th : threads) th.join();
    const bool any_past = std::find(past.begin(), past.end(), 1) != past.end();
    bool timed_out = false;
    for (const ReplicaChecksum& s : sums) timed_out |= s.status.IsTimedOut();
    if (any_past) {
      index += kAhead * uint64_t(attempt + 1);  // the replicas move: meet them ahead
      continue;
    }
    if (timed_out && attempt + 1 < kAttempts && index > highest) {
      // Nothing moved them that far: they stopped; try where they are.
      index = highest;
      continue;
    }
    result.index = index;
    result.replicas = std::move(sums);
    break;
  }
  if (result.index == 0) {
    result.problems.push_back("its replicas kept moving past the index asked for in " +
                              std::to_string(kAttempts) + " tries: run the scan again");
    return result;
  }
  const ReplicaChecksum* first = nullptr;
  for (const ReplicaChecksum& s : result.replicas) {
    if (!s.status.ok()) {
      result.problems.push_back("replica on " + s.ts_uuid + " could not be checksummed at index " +
                                std::to_string(result.index) + ": " + s.status.ToString());
      continue;
    }
    if (first == nullptr) {
      first = &s;
      continue;
    }
    if (s.checksum != first->checksum || s.rows != first->rows) {
      result.mismatch = true;
      result.problems.push_back("replicas disagree at index " + std::to_string(result.index) +
                                ": " + first->ts_uuid + " has " + Rows(first->rows) +
                                ", checksum " + std::to_string(first->checksum) + "; " +
                                s.ts_uuid + " has " + Rows(s.rows) + ", checksum " +
                                std::to_string(s.checksum));
    }
  }
  return result;
}

}  // namespace nyala::tools
