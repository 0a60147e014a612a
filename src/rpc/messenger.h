// Messenger: the RPC endpoint of a process. It owns the reactor threads, the
// listening sockets, the registered services with their service pools, and the
// outbound connections (one per remote address, shared by every Proxy to it; sync
// calls use connections of the calling thread instead, see caller_connection.h).
//
// Thread-safety: every public method may be called from any thread. Shutdown() must
// be called before the last reference goes away; afterwards new calls fail at once
// with ServiceUnavailable.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "common/result.h"
#include "common/rw_mutex.h"
#include "nyala/monotime.h"
#include "nyala/slice.h"
#include "rpc/in_flight.h"
#include "rpc/sockaddr.h"

struct event;

namespace nyala {
class MetricRegistry;
class Counter;
}  // namespace nyala

namespace nyala::rpc {

class Connection;
class OutboundCall;
class RequestHeaderPB;
class Reactor;
class RpcContext;
class ServiceIf;
class ServicePool;

// One call in flight, as /rpcz lists it.
struct RunningCallInfo {
  bool inbound;  // a call this messenger serves (else one it made)
  std::string service;
  std::string method;
  std::string remote;
  int32_t call_id;
  MonoDelta elapsed;  // since it arrived (inbound) or was sent (outbound)
  // Inbound: "queued" or "running", then ": " and the handler's CallTrace if it set
  // one (rpc_context.h). Outbound: "waiting" (on a reactor connection) or
  // "waiting on caller thread" (a sync call on the caller's own connection).
  std::string state;
};

struct MessengerOptions {
  std::string name = "rpc";
  int num_reactors = -1;          // -1: --num_reactor_threads
  uint32_t max_message_size = 0;  // 0: --rpc_max_message_size
  // Where the per-method and per-messenger metrics go. nullptr: a registry of the
  // messenger's own. Must outlive the messenger.
  MetricRegistry* metrics = nullptr;
};

class Messenger {
 public:
  static Result<std::shared_ptr<Messenger>> Create(MessengerOptions options);
  ~Messenger();

  // Binds and listens on `addr` (port 0 picks one); `bound`, if given, gets the
  // address actually bound. Connections are served as soon as this returns.
  Status AddListener(const Sockaddr& addr, Sockaddr* bound = nullptr);

  // Serves `service` with its own pool: `num_threads` service threads (-1:
  // --rpc_num_service_threads) and a queue of `queue_length` (-1:
  // --rpc_service_queue_length). AlreadyPresent if the name is taken.
  Status RegisterService(std::unique_ptr<ServiceIf> service, int num_threads = -1,
                         int queue_length = -1);

  // Stops accepting, answers what is queued, fails every pending outbound call with
  // ServiceUnavailable, closes every connection and joins all threads. Idempotent.
  void Shutdown();

  // Sends `call` on the connection to its remote address (opening it if needed).
  void QueueOutboundCall(std::unique_ptr<OutboundCall> call);
  int32_t NextCallId();

  const std::string& name() const { return options_.name; }
  uint32_t max_message_size() const { return options_.max_message_size; }
  MetricRegistry* metrics() const { return metrics_; }
  bool closing() const { return closing_.load(std::memory_order_acquire); }
  size_t num_connections() const;
  int num_reactors() const { return int(reactors_.size()); }
  // Times a standby thread took a reactor's loop over from a long inline call
  // (Reactor::RunInline; counter rpc_inline_call_handoffs_total).
  int64_t inline_call_handoffs() const;
  // Inbound calls read and not yet answered, over all reactors (racy; cheap).
  int inbound_call_count() const;
  // Every call in flight right now, both ways, longest first (for /rpcz).
  std::vector<RunningCallInfo> DumpRunningCalls() const;
  // (service name, calls waiting in its queue) for each registered service.
  std::vector<std::pair<std::string, size_t>> ServiceQueueSizes() const;

  // Framework internals ----------------------------------------------------------
  // Reactor thread: makes the RpcContext of a call whose `header` was parsed from
  // `payload` (see RpcContext's constructor) and routes it to its method's handler
  // (rpc/dispatch_policy.h), or answers it NO_SUCH_SERVICE / NO_SUCH_METHOD.
  void DispatchInboundCall(std::shared_ptr<Connection> conn, const RequestHeaderPB& header,
                           std::unique_ptr<char[]> buffer, Slice payload, MonoTime arrival);
  void RecordBytesSent(int64_t n);
  void RecordBytesReceived(int64_t n);
  // Readable once Shutdown() has begun: threads blocked on their own sockets (see
  // caller_connection.h) poll it too. Valid until the messenger is destroyed.
  int shutdown_fd() const { return shutdown_fd_; }
  // Calls received and not yet answered; sync calls waiting on their caller's thread.
  InFlightList& inbound_calls() { return inbound_calls_; }
  InFlightList& caller_thread_calls() { return caller_thread_calls_; }
  // Open caller connections (caller_connection.h) of this messenger; shared with
  // them, since a thread may close its connection after the messenger is gone.
  const std::shared_ptr<std::atomic<int64_t>>& caller_connection_count() const {
    return caller_connection_count_;
  }

 private:
  struct Listener;
  explicit Messenger(MessengerOptions options);
  static void OnAccept(int fd, short events, void* arg);
  void AcceptAll(Listener* l);
  Reactor* ReactorFor(const Sockaddr& remote) const;

  MessengerOptions options_;
  std::unique_ptr<MetricRegistry> owned_metrics_;
  MetricRegistry* metrics_;
  Counter* bytes_sent_;
  Counter* bytes_received_;
  std::vector<std::unique_ptr<Reactor>> reactors_;
  std::atomic<bool> closing_{false};
  int shutdown_fd_ = -1;  // eventfd
  std::shared_ptr<std::atomic<int64_t>> caller_connection_count_ =
      std::make_shared<std::atomic<int64_t>>(0);
  std::atomic<int32_t> next_call_id_{0};
  InFlightList inbound_calls_;
  InFlightList caller_thread_calls_;
  std::atomic<uint32_t> next_reactor_{0};

  Mutex listeners_mu_;
  std::vector<std::unique_ptr<Listener>> listeners_ GUARDED_BY(listeners_mu_);

  mutable RwMutex services_mu_;
  std::unordered_map<std::string, std::unique_ptr<ServicePool>> services_ GUARDED_BY(services_mu_);
  // What DispatchInboundCall reads on every call, without a lock (a shared lock's
  // reader count would move between the reactors' CPUs on every call): a copy of
  // services_' names and pools, replaced, never changed, by RegisterService. Pools
  // live as long as the messenger; the old copies are kept until it goes (a
  // messenger registers a handful of services).
  using ServiceTable = std::unordered_map<std::string, ServicePool*>;
  std::atomic<const ServiceTable*> service_table_{nullptr};
  std::vector<std::unique_ptr<const ServiceTable>> service_tables_ GUARDED_BY(services_mu_);
};

}  // namespace nyala::rpc
