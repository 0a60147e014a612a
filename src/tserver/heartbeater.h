// Heartbeater: keeps the masters informed of this tablet server. One thread per
// master address (--tserver_master_addrs) sends MasterService.TSHeartbeat every
// --heartbeat_interval_ms: the first beat (and any after a failure or when the
// master asks) carries the registration; the tablet report is full on the first
// beat and whenever the master asks (needs_full_tablet_report / needs_reregister),
// incremental otherwise (tablets changed since the last report the master
// acknowledged, deleted ones as removed_tablet_ids). A tablet change wakes the
// threads at once instead of waiting for the interval.
//
// A master that is down or unreachable is retried with exponential backoff (up to
// --heartbeat_max_backoff_ms); heartbeating never blocks serving.
//
// Thread-safety: Start/Stop from one thread; TriggerASAP and the accessors from any.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "master/master.pb.h"
#include "rpc/sockaddr.h"

namespace nyala {
class Counter;
class MetricRegistry;
}  // namespace nyala
namespace nyala::rpc {
class Messenger;
}

namespace nyala::tserver {

class TabletManager;

struct HeartbeaterOptions {
  std::vector<rpc::HostPort> masters;
  // Who this server is; the registration is filled by `fill_registration` on every
  // beat that carries one (addresses may change across restarts).
  master::NodeInstancePB instance;
  std::function<void(master::TSRegistrationPB*)> fill_registration;
};

class Heartbeater {
 public:
  // `messenger`, `tablets` and `metrics` must outlive the heartbeater.
  Heartbeater(HeartbeaterOptions options, std::shared_ptr<rpc::Messenger> messenger,
              TabletManager* tablets, MetricRegistry* metrics);
  ~Heartbeater();

  void Start();
  // Stops the threads (waits for a beat in flight, at most its RPC timeout).
  void Stop();
  // Beats now instead of at the next interval (e.g. a tablet was created).
  void TriggerASAP();

  int64_t NumHeartbeatsSentForTests() const { return sent_.load(); }
  int64_t NumHeartbeatsFailedForTests() const { return failed_.load(); }

 private:
  struct MasterState;
  void Run(MasterState* m);
  Status Beat(MasterState* m);
  void PruneAcknowledgedDeletes();

  const HeartbeaterOptions options_;
  const std::shared_ptr<rpc::Messenger> messenger_;
  TabletManager* const tablets_;
  Counter* sent_counter_ = nullptr;
  Counter* failed_counter_ = nullptr;
  std::atomic<int64_t> sent_{0};
  std::atomic<int64_t> failed_{0};

  Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  uint64_t trigger_gen_ GUARDED_BY(mu_) = 0;
  std::vector<std::unique_ptr<MasterState>> masters_;
  std::vector<std::thread> threads_;
};

}  // namespace nyala::tserver
