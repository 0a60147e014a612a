#include "master/ts_manager.h"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <cinttypes>

#include "common/flag_tags.h"
#include "consensus/peer_id.h"

DEFINE_int32(tserver_unresponsive_timeout_ms, 60000,
             "A tablet server is considered dead after this long without a heartbeat; it is "
             "live again on its next heartbeat.");
DEFINE_validator(tserver_unresponsive_timeout_ms, [](const char*, int32_t v) { return v > 0; });
TAG_FLAG(tserver_unresponsive_timeout_ms, runtime);

namespace nyala::master {

std::string TSDescriptor::RpcAddressString() const {
  if (registration.rpc_addresses_size() == 0) return "";
  const HostPortPB& hp = registration.rpc_addresses(0);
  return hp.host() + ":" + std::to_string(hp.port());
}

MonoDelta TSManager::UnresponsiveTimeout() {
  return MonoDelta::FromMilliseconds(FLAGS_tserver_unresponsive_timeout_ms);
}

namespace {
bool SameAddresses(const TSRegistrationPB& a, const TSRegistrationPB& b) {
  auto same = [](const auto& x, const auto& y) {
    if (x.size() != y.size()) return false;
    for (int i = 0; i < x.size(); i++) {
      if (x[i].host() != y[i].host() || x[i].port() != y[i].port()) return false;
    }
    return true;
  };
  return same(a.rpc_addresses(), b.rpc_addresses()) && same(a.http_addresses(), b.http_addresses());
}
}  // namespace

TSManager::HeartbeatOutcome TSManager::Heartbeat(const TSHeartbeatRequestPB& req, MonoTime now,
                                                 bool allow_visible_change) {
  HeartbeatOutcome out;
  const std::string& uuid = req.common().permanent_uuid();
  const int64_t seqno = req.common().instance_seqno();
  MutexLock l(mu_);
  auto it = servers_.find(uuid);
  if (req.has_registration()) {
    // A (re)registration: new server, new instance, or the same one asked to re-send.
    if (it == servers_.end()) {
      const uint64_t peer_id = consensus::PeerIdFromUuid(uuid);
      for (const auto& [other, d] : servers_) {
        if (consensus::PeerIdFromUuid(other) != peer_id) continue;
        char hex[17];
        snprintf(hex, sizeof(hex), "%016" PRIx64, peer_id);
        out.error = Status::AlreadyPresent(
            "tablet server " + uuid + " has the Raft peer id " + hex +
            " of the registered tablet server " + other +
            " (peer ids are the first 16 hex digits of the uuid): start it with empty data "
            "directories so that it gets a new uuid");
        LOG(WARNING) << "refused registration: " << out.error.ToString();
        return out;
      }
    }
    const bool visible = it == servers_.end() || !it->second.live ||
                         !SameAddresses(it->second.registration, req.registration());
    if (visible && !allow_visible_change) {
      out.needs_exclusive = true;
      return out;
    }
    if (it == servers_.end()) {
      LOG(INFO) << "tablet server " << uuid << " registered";
      it = servers_.emplace(uuid, TSDescriptor()).first;
      it->second.uuid = uuid;
    } else if (it->second.instance_seqno != seqno) {
      LOG(INFO) << "tablet server " << uuid << " re-registered as a new instance";
    }
    TSDescriptor& ts = it->second;
    if (ts.instance_seqno != seqno) {
      ts.has_full_report = false;
      ts.running_tablets.clear();
    }
    ts.instance_seqno = seqno;
    ts.registration = req.registration();
    ts.last_heartbeat = now;
    ts.live = true;
    out.visible_change = visible;
  } else {
    if (it == servers_.end() || it->second.instance_seqno != seqno) {
      // No record of this server (e.g. the master restarted), or it restarted.
      out.needs_reregister = true;
      out.needs_full_report = true;
      return out;
    }
    TSDescriptor& ts = it->second;
    if (!ts.live) {
      if (!allow_visible_change) {
        out.needs_exclusive = true;
        return out;
      }
      LOG(INFO) << "tablet server " << uuid << " is live again";
      ts.live = true;
      out.visible_change = true;
    }
    ts.last_heartbeat = now;
  }
  TSDescriptor& ts = it->second;
  const bool has_report = req.has_tablet_report();
  const bool full = has_report && !req.tablet_report().is_incremental();
  if (has_report && (full || ts.has_full_report)) {
    ApplyReport(req.tablet_report(), &ts);
    out.process_report = true;
  }
  if (!ts.has_full_report) out.needs_full_report = true;
  return out;
}

void TSManager::ApplyReport(const TabletReportPB& report, TSDescriptor* ts) {
  if (!report.is_incremental()) {
    ts->running_tablets.clear();
    ts->has_full_report = true;
  }
  for (const auto& t : report.updated_tablets()) {
    if (t.state() == TABLET_RUNNING) {
      ts->running_tablets.insert(t.tablet_id());
    } else {
      ts->running_tablets.erase(t.tablet_id());
    }
  }
  for (const auto& id : report.removed_tablet_ids()) ts->running_tablets.erase(id);
}

std::vector<std::string> TSManager::ExpiredLiveServers(MonoTime now) const {
  const MonoDelta timeout = UnresponsiveTimeout();
  std::vector<std::string> out;
  MutexLock l(mu_);
  for (const auto& [uuid, ts] : servers_) {
    if (ts.live && now - ts.last_heartbeat > timeout) out.push_back(uuid);
  }
  return out;
}

bool TSManager::MarkDeadIfExpired(const std::string& uuid, MonoTime now) {
  MutexLock l(mu_);
  auto it = servers_.find(uuid);
  if (it == servers_.end() || !it->second.live) return false;
  const MonoDelta silent = now - it->second.last_heartbeat;
  if (silent <= UnresponsiveTimeout()) return false;
  LOG(WARNING) << "tablet server " << uuid << " is dead: no heartbeat for " << silent.ToString();
  it->second.live = false;
  return true;
}

std::optional<TSDescriptor> TSManager::Lookup(const std::string& uuid) const {
  MutexLock l(mu_);
  auto it = servers_.find(uuid);
  if (it == servers_.end()) return std::nullopt;
  return it->second;
}

bool TSManager::IsLive(const std::string& uuid) const {
  MutexLock l(mu_);
  auto it = servers_.find(uuid);
  return it != servers_.end() && it->second.live;
}

std::optional<TSInfoPB> TSManager::LiveTSInfo(const std::string& uuid) const {
  MutexLock l(mu_);
  auto it = servers_.find(uuid);
  if (it == servers_.end() || !it->second.live) return std::nullopt;
  TSInfoPB info;
  info.set_permanent_uuid(uuid);
  *info.mutable_rpc_addresses() = it->second.registration.rpc_addresses();
  return info;
}

std::vector<TSDescriptor> TSManager::GetAll() const {
  MutexLock l(mu_);
  std::vector<TSDescriptor> out;
  out.reserve(servers_.size());
  for (const auto& [uuid, ts] : servers_) out.push_back(ts);
  return out;
}

std::vector<TSInfoPB> TSManager::AllTSInfos() const {
  MutexLock l(mu_);
  std::vector<TSInfoPB> out;
  out.reserve(servers_.size());
  for (const auto& [uuid, ts] : servers_) {
    TSInfoPB& info = out.emplace_back();
    info.set_permanent_uuid(uuid);
    *info.mutable_rpc_addresses() = ts.registration.rpc_addresses();
  }
  return out;
}

std::vector<std::string> TSManager::LiveServerUuids() const {
  MutexLock l(mu_);
  std::vector<std::string> out;
  for (const auto& [uuid, ts] : servers_) {
    if (ts.live) out.push_back(uuid);
  }
  return out;
}

std::map<std::string, TSManager::Liveness> TSManager::LivenessOfAll() const {
  MutexLock l(mu_);
  std::map<std::string, Liveness> out;
  for (const auto& [uuid, ts] : servers_) {
    out[uuid] = Liveness{ts.live, ts.last_heartbeat, ts.RpcAddressString()};
  }
  return out;
}

Status TSManager::Unregister(const std::string& uuid, MonoTime now) {
  MutexLock l(mu_);
  auto it = servers_.find(uuid);
  if (it == servers_.end()) {
    return Status::NotFound("no tablet server with this uuid is registered", uuid);
  }
  if (it->second.live) {
    return Status::IllegalState(
        "tablet server " + uuid + " is live (last heartbeat " +
        std::to_string((now - it->second.last_heartbeat).ToMilliseconds()) +
        " ms ago): only a server the master considers dead can be unregistered; stop it and "
        "wait --tserver_unresponsive_timeout_ms (" +
        std::to_string(UnresponsiveTimeout().ToMilliseconds()) + " ms) first");
  }
  LOG(INFO) << "tablet server " << uuid << " unregistered";
  servers_.erase(it);
  return Status::OK();
}

int TSManager::NumLiveServers() const {
  MutexLock l(mu_);
  int n = 0;
  for (const auto& [uuid, ts] : servers_) n += ts.live ? 1 : 0;
  return n;
}

}  // namespace nyala::master
