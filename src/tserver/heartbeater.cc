#include "tserver/heartbeater.h"
#include "common/result.h"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>

#include "common/flag_tags.h"
#include "common/metrics.h"
#include "common/wire_protocol.h"
#include "master/master.proxy.h"
#include "rpc/messenger.h"
#include "rpc/retry.h"
#include "rpc/rpc_controller.h"
#include "tserver/tablet_manager.h"

DEFINE_int32(heartbeat_interval_ms, 1000, "Time between heartbeats to each master, in ms.");
DEFINE_validator(heartbeat_interval_ms, [](const char*, int32_t v) { return v > 0; });
TAG_FLAG(heartbeat_interval_ms, runtime);
DEFINE_int32(heartbeat_rpc_timeout_ms, 15000, "Timeout of one heartbeat RPC, in ms.");
DEFINE_validator(heartbeat_rpc_timeout_ms, [](const char*, int32_t v) { return v > 0; });
TAG_FLAG(heartbeat_rpc_timeout_ms, runtime);
DEFINE_int32(heartbeat_max_backoff_ms, 10000,
             "Longest wait between heartbeats to a master that keeps failing, in ms.");
DEFINE_validator(heartbeat_max_backoff_ms, [](const char*, int32_t v) { return v > 0; });
TAG_FLAG(heartbeat_max_backoff_ms, runtime);

namespace nyala::tserver {

struct Heartbeater::MasterState {
  rpc::HostPort host_port;
  bool needs_register = true;
  bool needs_full_report = true;
  int consecutive_failures = 0;
  int32_t report_seq = 0;
  std::atomic<int64_t> acked_change{0};
  uint64_t seen_trigger_gen = 0;
  bool last_wait_skipped = false;
};

Heartbeater::Heartbeater(HeartbeaterOptions options, std::shared_ptr<rpc::Messenger> messenger,
                         TabletManager* tablets, MetricRegistry* metrics)
    : options_(std::move(options)), messenger_(std::move(messenger)), tablets_(tablets) {
  if (metrics) {
    sent_counter_ = metrics->FindOrCreateCounter("tserver_heartbeats_sent_total",
                                                 "Heartbeats answered by a master");
    failed_counter_ = metrics->FindOrCreateCounter("tserver_heartbeats_failed_total",
                                                   "Heartbeats that failed (master down or error)");
  }
  for (const auto& hp : options_.masters) {
    auto m = std::make_unique<MasterState>();
    m->host_port = hp;
    masters_.push_back(std::move(m));
  }
}

Heartbeater::~Heartbeater() { Stop(); }

void Heartbeater::Start() {
  for (auto& m : masters_) threads_.emplace_back([this, ms = m.get()] { Run(ms); });
}

void Heartbeater::Stop() {
  {
    MutexLock l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void Heartbeater::TriggerASAP() {
  {
    MutexLock l(mu_);
    trigger_gen_++;
  }
  cv_.notify_all();
}

void Heartbeater::Run(MasterState* m) {
  LOG(INFO) << "heartbeating to master " << m->host_port.ToString();
  while (true) {
    Status s = Beat(m);
    MonoDelta wait = MonoDelta::FromMilliseconds(FLAGS_heartbeat_interval_ms);
    if (s.ok()) {
      sent_++;
      if (sent_counter_) sent_counter_->Increment();
      if (m->consecutive_failures > 0) {
        LOG(INFO) << "heartbeat to master " << m->host_port.ToString() << " succeeded after "
                  << m->consecutive_failures << " failures";
      }
      m->consecutive_failures = 0;
      PruneAcknowledgedDeletes();
      // The master asked for more: answer at once (but not twice in a row).
      const bool skip = (m->needs_register || m->needs_full_report) && !m->last_wait_skipped;
      if (skip) wait = MonoDelta();
      m->last_wait_skipped = skip;
    } else {
      failed_++;
      if (failed_counter_) failed_counter_->Increment();
      if (m->consecutive_failures % 30 == 0) {
        LOG(WARNING) << "heartbeat to master " << m->host_port.ToString() << " failed ("
                     << m->consecutive_failures + 1 << " in a row): " << s.ToString();
      }
      m->consecutive_failures++;
      m->needs_register = true;  // it may have restarted without our record
      wait = rpc::ComputeBackoff(m->consecutive_failures,
                                 MonoDelta::FromMilliseconds(FLAGS_heartbeat_interval_ms),
                                 MonoDelta::FromMilliseconds(std::max(
                                     FLAGS_heartbeat_max_backoff_ms, FLAGS_heartbeat_interval_ms)));
    }
    UniqueLock l(mu_);
    cv_.wait_for(l, std::chrono::nanoseconds(wait.ToNanoseconds()), [&]() REQUIRES(mu_) {
      return stopping_ || (s.ok() && trigger_gen_ != m->seen_trigger_gen);
    });
    if (stopping_) return;
    m->seen_trigger_gen = trigger_gen_;
  }
}

Status Heartbeater::Beat(MasterState* m) {
  ASSIGN_OR_RETURN(std::vector<rpc::Sockaddr> addrs, m->host_port.Resolve());
  if (addrs.empty()) return Status::NetworkError("no address for " + m->host_port.ToString());
  master::TSHeartbeatRequestPB req;
  *req.mutable_common() = options_.instance;
  const bool sent_registration = m->needs_register;
  if (sent_registration && options_.fill_registration) {
    options_.fill_registration(req.mutable_registration());
  }
  const bool full = m->needs_full_report;
  master::TabletReportPB* report = req.mutable_tablet_report();
  const int64_t upto = tablets_->BuildReport(full, m->acked_change.load(), report);
  report->set_sequence_number(++m->report_seq);
  req.set_num_live_tablets(static_cast<int32_t>(tablets_->NumTablets()));

  master::MasterServiceProxy proxy(messenger_, addrs[0]);
  rpc::RpcController rpc;
  rpc.set_timeout(MonoDelta::FromMilliseconds(FLAGS_heartbeat_rpc_timeout_ms));
  master::TSHeartbeatResponsePB resp;
  RETURN_NOT_OK(proxy.TSHeartbeat(req, &resp, &rpc));
  if (resp.has_error()) {
    if (resp.error().code() == master::MasterErrorPB::UNKNOWN_TABLET_SERVER) {
      m->needs_register = true;
      m->needs_full_report = true;
    }
    return StatusFromPB(resp.error().status())
        .CloneAndPrepend("master error " + master::MasterErrorPB::Code_Name(resp.error().code()));
  }
  if (sent_registration) {
    LOG(INFO) << "registered with master " << m->host_port.ToString();
  }
  tablets_->UpdatePeers(resp.tablet_servers());
  m->needs_register = resp.needs_reregister();
  m->needs_full_report = resp.needs_reregister() || resp.needs_full_tablet_report();
  if (!m->needs_full_report) m->acked_change.store(upto);
  return Status::OK();
}

void Heartbeater::PruneAcknowledgedDeletes() {
  int64_t min_acked = INT64_MAX;
  for (const auto& m : masters_) min_acked = std::min(min_acked, m->acked_change.load());
  if (min_acked > 0 && min_acked != INT64_MAX) tablets_->PruneReportedDeletes(min_acked);
}

}  // namespace nyala::tserver
