#include "rpc/messenger.h"

#include <errno.h>
#include <event2/event.h>
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/metrics.h"
#include "rpc/connection.h"
#include "rpc/dispatch_policy.h"
#include "rpc/libevent_util.h"
#include "rpc/outbound_call.h"
#include "rpc/reactor.h"
#include "rpc/rpc_context.h"
#include "rpc/service_if.h"
#include "rpc/service_pool.h"

DEFINE_int32(num_reactor_threads, 4,
             "Number of libevent reactor threads each messenger runs for network I/O.");
DEFINE_int32(rpc_num_service_threads, 10,
             "Number of threads that run each RPC service's handlers.");
DEFINE_int32(rpc_service_queue_length, 50,
             "Calls each RPC service queues before answering SERVER_TOO_BUSY.");
DEFINE_int32(rpc_max_message_size, 50 * 1024 * 1024,
             "Largest RPC frame, in bytes, accepted or sent. Checked on the length prefix, "
             "before the frame is read.");
DEFINE_validator(num_reactor_threads, [](const char*, int32_t v) { return v > 0 && v <= 256; });
DEFINE_validator(rpc_num_service_threads, [](const char*, int32_t v) { return v > 0; });
DEFINE_validator(rpc_service_queue_length, [](const char*, int32_t v) { return v > 0; });
DEFINE_validator(rpc_max_message_size, [](const char*, int32_t v) { return v >= 1024; });

namespace nyala::rpc {

namespace {
void SetNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}
}  // namespace

struct Messenger::Listener {
  Messenger* messenger;
  int fd;
  Sockaddr addr;
  EventPtr ev;  // made, and freed, on `reactor`
  Reactor* reactor;
};

Result<std::shared_ptr<Messenger>> Messenger::Create(MessengerOptions options) {
  if (options.num_reactors < 0) options.num_reactors = FLAGS_num_reactor_threads;
  if (options.max_message_size == 0) options.max_message_size = FLAGS_rpc_max_message_size;
  if (options.num_reactors < 1) return Status::InvalidArgument("a messenger needs a reactor");
  std::shared_ptr<Messenger> m(new Messenger(std::move(options)));
  for (auto& r : m->reactors_) r->Start();
  return m;
}

Messenger::Messenger(MessengerOptions options) : options_(std::move(options)) {
  shutdown_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  PCHECK(shutdown_fd_ >= 0) << "eventfd";
  if (!options_.metrics) {
    owned_metrics_ = std::make_unique<MetricRegistry>();
    options_.metrics = owned_metrics_.get();
  }
  metrics_ = options_.metrics;
  MetricLabels labels = {{"messenger", options_.name}};
  bytes_sent_ =
      metrics_->FindOrCreateCounter("rpc_bytes_sent_total", "Bytes written to RPC sockets", labels);
  bytes_received_ = metrics_->FindOrCreateCounter("rpc_bytes_received_total",
                                                  "Bytes read from RPC sockets", labels);
  metrics_->RegisterFunctionGauge(
      "rpc_connections", "Open RPC connections, inbound and outbound", labels,
      [this] { return int64_t(num_connections()); }, this);
  metrics_->RegisterFunctionCounter(
      "rpc_inline_call_handoffs_total",
      "Times a service call running on a reactor thread ran past --rpc_inline_call_handoff_us "
      "and a standby thread took over the reactor's event loop",
      labels, [this] { return inline_call_handoffs(); }, this);
  for (int i = 0; i < options_.num_reactors; i++) {
    reactors_.push_back(std::make_unique<Reactor>(options_.name + "-r" + std::to_string(i)));
  }
}

int64_t Messenger::inline_call_handoffs() const {
  int64_t n = 0;
  for (const auto& r : reactors_) n += r->inline_handoffs();
  return n;
}

int Messenger::inbound_call_count() const {
  int n = 0;
  for (const auto& r : reactors_) n += r->inbound_calls();
  return n;
}

Messenger::~Messenger() {
  Shutdown();
  metrics_->RemoveFunctionGauges(this);
  close(shutdown_fd_);
}

Status Messenger::AddListener(const Sockaddr& addr, Sockaddr* bound) {
  if (closing()) return Status::ServiceUnavailable("messenger is shutting down");
  int fd = socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::NetworkError("socket", strerror(errno), errno);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, addr.addr(), addr.addrlen()) != 0) {
    int err = errno;
    close(fd);
    return Status::NetworkError("cannot bind " + addr.ToString(), strerror(err), err);
  }
  if (listen(fd, 1024) != 0) {
    int err = errno;
    close(fd);
    return Status::NetworkError("cannot listen on " + addr.ToString(), strerror(err), err);
  }
  sockaddr_storage ss;
  socklen_t len = sizeof(ss);
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  auto l = std::make_unique<Listener>();
  l->messenger = this;
  l->fd = fd;
  l->addr = Sockaddr(reinterpret_cast<sockaddr*>(&ss), len);
  l->reactor = reactors_[0].get();
  l->ev.reset(
      event_new(l->reactor->base(), fd, EV_READ | EV_PERSIST, &Messenger::OnAccept, l.get()));
  event_add(l->ev.get(), nullptr);
  if (bound) *bound = l->addr;
  LOG(INFO) << options_.name << ": listening on " << l->addr.ToString();
  MutexLock lock(listeners_mu_);
  listeners_.push_back(std::move(l));
  return Status::OK();
}

void Messenger::OnAccept(int, short, void* arg) {
  auto* l = static_cast<Listener*>(arg);
  l->messenger->AcceptAll(l);
}

void Messenger::AcceptAll(Listener* l) {
  for (int i = 0; i < 256; i++) {
    sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    int fd = accept4(l->fd, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      // Out of descriptors or memory: pause accepting so the loop is not spun.
      LOG(WARNING) << options_.name << ": accept on " << l->addr.ToString()
                   << " failed: " << strerror(errno) << "; pausing accepts for 100 ms";
      event_del(l->ev.get());
      l->reactor->RunAfter(MonoDelta::FromMilliseconds(100), [this, l] {
        if (!closing()) event_add(l->ev.get(), nullptr);
      });
      return;
    }
    SetNoDelay(fd);
    Sockaddr remote(reinterpret_cast<sockaddr*>(&ss), len);
    Reactor* r =
        reactors_[next_reactor_.fetch_add(1, std::memory_order_relaxed) % reactors_.size()].get();
    auto start = [this, r, fd, remote] {
      auto conn = std::make_shared<Connection>(r, this, fd, remote, Connection::Direction::kServer);
      if (closing()) return;  // the connection's destructor closes fd
      conn->Start();
      r->AddServerConnection(std::move(conn));
    };
    if (r->IsCurrentThread()) {
      start();
    } else {
      r->Post(std::move(start));
    }
  }
}

Status Messenger::RegisterService(std::unique_ptr<ServiceIf> service, int num_threads,
                                  int queue_length) {
  if (num_threads < 0) num_threads = FLAGS_rpc_num_service_threads;
  if (queue_length < 0) queue_length = FLAGS_rpc_service_queue_length;
  const std::string name = service->service_name();
  auto pool =
      std::make_unique<ServicePool>(std::move(service), num_threads, queue_length, metrics_);
  ExclusiveLock l(services_mu_);
  if (services_.count(name)) return Status::AlreadyPresent("service already registered", name);
  pool->Start();
  services_.emplace(name, std::move(pool));
  auto table = std::make_unique<ServiceTable>();
  for (const auto& [n, p] : services_) table->emplace(n, p.get());
  service_table_.store(table.get(), std::memory_order_release);
  service_tables_.push_back(std::move(table));
  return Status::OK();
}

void Messenger::DispatchInboundCall(std::shared_ptr<Connection> conn, const RequestHeaderPB& header,
                                    std::unique_ptr<char[]> buffer, Slice payload,
                                    MonoTime arrival) {
  Connection::LastMethod* last = conn->last_method();
  ServicePool* pool = nullptr;
  RpcMethodInfo* method = nullptr;
  if (last->info && header.method_name() == last->info->name &&
      header.service_name() == last->info->service_name) {
    pool = last->pool;
    method = last->info;
  } else {
    if (const ServiceTable* table = service_table_.load(std::memory_order_acquire)) {
      auto it = table->find(header.service_name());
      if (it != table->end()) pool = it->second;
    }
    method = pool ? pool->service()->FindMethod(header.method_name()) : nullptr;
    if (method) *last = {pool, method};
  }
  auto ctx = std::make_unique<RpcContext>(std::move(conn), header, method, std::move(buffer),
                                          payload, arrival);
  if (!pool) {
    LOG(WARNING) << "call to unknown service from " << ctx->remote_address().ToString() << ": "
                 << ctx->service_name() << "." << ctx->method_name();
    RespondAndRelease(std::move(ctx), ErrorStatusPB::ERROR_NO_SUCH_SERVICE,
                      Status::NotFound("no service " + ctx->service_name() + " on this server"));
    return;
  }
  if (!method) {
    LOG(WARNING) << "call to unknown method from " << ctx->remote_address().ToString() << ": "
                 << ctx->service_name() << "." << ctx->method_name();
    RespondAndRelease(std::move(ctx), ErrorStatusPB::ERROR_NO_SUCH_METHOD,
                      Status::NotFound("service " + ctx->service_name() + " has no method " +
                                       ctx->method_name()));
    return;
  }
  switch (ChooseInboundRoute(*method, ctx->deadline())) {
    case InboundRoute::kOnReactor:
      ServicePool::RunCall(std::move(ctx));
      break;
    case InboundRoute::kReactorFastPath:
      pool->RunOrQueueCall(std::move(ctx));
      break;
    case InboundRoute::kServicePool:
      pool->QueueInboundCall(std::move(ctx));
      break;
  }
}

Reactor* Messenger::ReactorFor(const Sockaddr& remote) const {
  return reactors_[remote.Hash() % reactors_.size()].get();
}

int32_t Messenger::NextCallId() {
  return next_call_id_.fetch_add(1, std::memory_order_relaxed) & 0x7fffffff;
}

void Messenger::QueueOutboundCall(std::unique_ptr<OutboundCall> call) {
  if (closing()) {
    call->CompleteWithError(Status::ServiceUnavailable("client messenger is shutting down"));
    return;
  }
  Reactor* r = ReactorFor(call->remote());
  if (!r->IsCurrentThread()) {
    // Fast path: the connection is up, so write from this thread without waking the
    // reactor (it only has to read the answer).
    if (std::shared_ptr<Connection> conn = r->FindClientConnection(call->remote())) {
      call = conn->TryQueueOutboundCall(std::move(call));
      if (!call) return;
    }
  }
  auto send = [this, r](std::unique_ptr<OutboundCall> call) {
    if (r->closing()) {
      call->CompleteWithError(Status::ServiceUnavailable("client messenger is shutting down"));
      return;
    }
    Connection* conn = r->FindClientConnectionOnLoop(call->remote());
    std::shared_ptr<Connection> created;
    if (!conn) {
      const Sockaddr& remote = call->remote();
      int fd = socket(remote.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) {
        call->CompleteWithError(Status::NetworkError("socket", strerror(errno), errno));
        return;
      }
      SetNoDelay(fd);
      if (connect(fd, remote.addr(), remote.addrlen()) != 0 && errno != EINPROGRESS) {
        int err = errno;
        close(fd);
        call->CompleteWithError(Status::NetworkError(
            std::string(call->method()) + " RPC to " + remote.ToString() + ": connect failed",
            strerror(err), err));
        return;
      }
      created = std::make_shared<Connection>(r, this, fd, remote, Connection::Direction::kClient);
      created->Start();
      r->AddClientConnection(created);
      conn = created.get();
    }
    conn->QueueOutboundCall(std::move(call));
  };
  if (r->IsCurrentThread()) {
    send(std::move(call));
  } else {
    // std::function needs a copyable callable. If the reactor drops the task (it is
    // shutting down), the holder still completes the call.
    struct Holder {
      std::unique_ptr<OutboundCall> call;
      ~Holder() {
        if (call) call->CompleteWithError(Status::ServiceUnavailable("messenger shut down"));
      }
    };
    auto holder = std::make_shared<Holder>();
    holder->call = std::move(call);
    r->Post([send, holder] { send(std::move(holder->call)); });
  }
}

void Messenger::Shutdown() {
  if (closing_.exchange(true)) return;
  const uint64_t one = 1;
  PCHECK(write(shutdown_fd_, &one, sizeof(one)) == sizeof(one)) << "eventfd write";
  {
    MutexLock l(listeners_mu_);
    for (auto& lst : listeners_) {
      Listener* raw = lst.get();
      // The accept event belongs to reactor 0; delete it there.
      raw->reactor->Post([raw] { raw->ev.reset(); });
    }
  }
  // Not under services_mu_: a pool's Shutdown() waits for calls that a reactor runs
  // in a service thread's place (ServicePool::RunInlineCall), and that reactor may
  // first need the lock to dispatch the rest of what it read.
  std::vector<ServicePool*> pools;
  {
    SharedLock l(services_mu_);
    for (auto& [name, pool] : services_) pools.push_back(pool.get());
  }
  for (ServicePool* pool : pools) pool->Shutdown();
  const Status reason = Status::ServiceUnavailable("messenger " + options_.name + " shut down");
  for (auto& r : reactors_) {
    Reactor* raw = r.get();
    raw->Post([raw, reason] { raw->ShutdownConnections(reason); });
    raw->Shutdown();
  }
  MutexLock l(listeners_mu_);
  for (auto& lst : listeners_) {
    lst->ev.reset();
    close(lst->fd);
  }
  listeners_.clear();
}

size_t Messenger::num_connections() const {
  size_t n = size_t(caller_connection_count_->load(std::memory_order_relaxed));
  for (auto& r : reactors_) n += r->num_connections();
  return n;
}

void Messenger::RecordBytesSent(int64_t n) { bytes_sent_->Increment(n); }
void Messenger::RecordBytesReceived(int64_t n) { bytes_received_->Increment(n); }

std::vector<RunningCallInfo> Messenger::DumpRunningCalls() const {
  std::vector<RunningCallInfo> out;
  const MonoTime now = MonoTime::Now();
  inbound_calls_.ForEach([&](const InFlightHook& h) {
    const auto& ctx = static_cast<const RpcContext&>(h);
    std::string state = ctx.running() ? "running" : "queued";
    if (std::string trace = ctx.TraceDescription(now); !trace.empty()) state += ": " + trace;
    out.push_back({true, ctx.service_name(), ctx.method_name(), ctx.remote_address().ToString(),
                   ctx.call_id(), now - ctx.arrival_time(), std::move(state)});
  });
  auto add_outbound = [&](const OutboundCall& call, const char* state) {
    out.push_back({false, std::string(call.service()), std::string(call.method()),
                   call.remote().ToString(), call.call_id(), now - call.start_time(), state});
  };
  caller_thread_calls_.ForEach([&](const InFlightHook& h) {
    add_outbound(static_cast<const OutboundCall&>(h), "waiting on caller thread");
  });
  for (const auto& r : reactors_) {
    r->ForEachClientConnection([&](const Connection& conn) {
      conn.ForEachPendingCall([&](const OutboundCall& call) { add_outbound(call, "waiting"); });
    });
  }
  std::sort(out.begin(), out.end(), [](const RunningCallInfo& a, const RunningCallInfo& b) {
    return a.elapsed > b.elapsed;
  });
  return out;
}

std::vector<std::pair<std::string, size_t>> Messenger::ServiceQueueSizes() const {
  std::vector<std::pair<std::string, size_t>> out;
  SharedLock l(services_mu_);
  for (auto& [name, pool] : services_) out.emplace_back(name, pool->queue_size());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace nyala::rpc
