#include "rpc/service_pool.h"

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <pthread.h>

#include "common/histogram.h"
#include "common/metrics.h"
#include "rpc/connection.h"
#include "rpc/dispatch_policy.h"
#include "rpc/messenger.h"
#include "rpc/reactor.h"

namespace nyala::rpc {

namespace {
// Calls one service thread runs between two flushes of the responses it queued.
constexpr int kMaxCallsPerBatch = 32;
// Calls one inline batch on a reactor runs at most before it returns to the loop.
constexpr int kMaxInlineCalls = 256;
// How long an inline batch runs alone before it wakes a service thread to share the
// queue with (RunInlineBatch).
constexpr int64_t kShareBatchAfterUs = 500;
// Service threads one InboundBatch end wakes at most, per pool.
constexpr size_t kMaxWakes = 8;

thread_local InboundBatch* tls_inbound_batch = nullptr;

// The calls gathered by this thread's open InboundBatch, in the order read. Kept
// between batches so that its capacity is reused: a batch must not allocate.
struct GatheredCall {
  ServicePool* pool;
  std::unique_ptr<RpcContext> ctx;
};
thread_local std::vector<GatheredCall> tls_gathered;
}  // namespace

// InboundBatch -----------------------------------------------------------------

InboundBatch::InboundBatch(Reactor* reactor) : reactor_(reactor) {
  DCHECK(tls_inbound_batch == nullptr) << "InboundBatch does not nest";
  tls_inbound_batch = this;
}

InboundBatch::~InboundBatch() {
  tls_inbound_batch = nullptr;
  std::vector<GatheredCall>& gathered = tls_gathered;
  if (gathered.empty()) return;
  // Usually every call is for one pool; otherwise hand each pool its run, in order.
  std::unique_ptr<RpcContext> run[kMaxInlineCalls];
  size_t i = 0;
  while (i < gathered.size()) {
    ServicePool* pool = gathered[i].pool;
    size_t n = 0;
    for (; i < gathered.size() && gathered[i].pool == pool && n < size_t(kMaxInlineCalls); i++) {
      run[n++] = std::move(gathered[i].ctx);
    }
    pool->TakeBatch(run, n, reactor_);
  }
  gathered.clear();
}

InboundBatch* InboundBatch::Current() { return tls_inbound_batch; }

// ServicePool ------------------------------------------------------------------

ServicePool::ServicePool(std::unique_ptr<ServiceIf> service, int num_threads, int queue_length,
                         MetricRegistry* metrics)
    : service_(std::move(service)),
      num_threads_(num_threads),
      queue_length_(queue_length),
      metrics_(metrics) {
  CHECK_GT(num_threads_, 0);
  CHECK_GT(queue_length_, 0);
  for (auto& [name, method] : service_->methods()) {
    MetricLabels labels = {{"service", service_->service_name()}, {"method", name}};
    method->calls = metrics->FindOrCreateCounter("rpc_calls_total", "RPC calls answered", labels);
    method->handler_latency_us = metrics->FindOrCreateHistogram(
        "rpc_handler_duration_seconds", "Time from the start of the handler to its response",
        labels);
    method->queue_time_us = metrics->FindOrCreateHistogram(
        "rpc_queue_duration_seconds", "Time a call waited in the service queue", labels);
    method->too_busy = metrics->FindOrCreateCounter(
        "rpc_too_busy_total", "Calls rejected with SERVER_TOO_BUSY because the queue was full",
        labels);
    if (method->reactor_handler) {
      method->reactor_fallbacks = metrics->FindOrCreateCounter(
          "rpc_reactor_fallbacks_total",
          "Calls whose fast path on the reactor thread could not answer them and that went to "
          "a service thread",
          labels);
    }
  }
  metrics->RegisterFunctionGauge(
      "rpc_service_queue_size", "Calls waiting in the service queue",
      {{"service", service_->service_name()}}, [this] { return int64_t(queue_size()); }, this);
}

ServicePool::~ServicePool() {
  Shutdown();
  metrics_->RemoveFunctionGauges(this);
}

void ServicePool::Start() {
  for (int i = 0; i < num_threads_; i++) {
    workers_.push_back(std::make_unique<Worker>());
    workers_.back()->pool = this;
  }
  for (int i = 0; i < num_threads_; i++) {
    threads_.emplace_back([this, i, w = workers_[i].get()] {
      std::string name =
          "svc-" + service_->service_name().substr(service_->service_name().rfind('.') + 1);
      name = name.substr(0, 12) + "-" + std::to_string(i);
      pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
      RunThread(w);
    });
  }
}

void ServicePool::Shutdown() {
  std::deque<std::unique_ptr<RpcContext>> left;
  std::vector<Worker*> idle;
  {
    MutexLock l(mu_);
    if (shutdown_) return;
    shutdown_ = true;
    left.swap(queue_);
    idle.swap(idle_);
  }
  for (Worker* w : idle) w->wake.Release();
  for (auto& t : threads_) t.join();
  threads_.clear();
  for (auto& ctx : left) {
    RespondAndRelease(std::move(ctx), ErrorStatusPB::ERROR_UNAVAILABLE,
                      Status::ServiceUnavailable("server is shutting down"));
  }
}

size_t ServicePool::queue_size() const {
  MutexLock l(mu_);
  return queue_.size();
}

void ServicePool::QueueInboundCall(std::unique_ptr<RpcContext> ctx) {
  Reactor* reactor = ctx->reactor();
  InlineFacts facts;
  facts.caller_waits = ctx->caller_waits();
  facts.on_reading_reactor = reactor->IsCurrentThread();
  facts.reactor_can_run_inline = facts.on_reading_reactor && reactor->CanRunInline();
  facts.server_inbound_calls = ctx->messenger()->inbound_call_count();
  facts.whole_pool_idle = true;  // checked under the lock below, if it matters
  InboundBatch* batch = facts.on_reading_reactor ? InboundBatch::Current() : nullptr;
  // A call its method's reactor fast path declined (route c) needs the disk or is
  // large: it is not gathered for an inline batch, but goes to a service thread now.
  if (batch && !ctx->method()->reactor_handler && !ShouldRunInline(facts)) {
    tls_gathered.push_back({this, std::move(ctx)});
    return;
  }
  Worker* idle = nullptr;
  bool shutting_down;
  bool run_inline = false;
  {
    MutexLock l(mu_);
    shutting_down = shutdown_;
    if (!shutdown_) {
      if (!idle_.empty()) {
        facts.whole_pool_idle = idle_.size() == size_t(num_threads_);
        run_inline = ShouldRunInline(facts);
        idle = idle_.back();
        idle_.pop_back();
        idle->call = std::move(ctx);
      } else if (queue_.size() < size_t(queue_length_)) {
        queue_.push_back(std::move(ctx));
      }
    }
  }
  if (idle) {
    // Run inline, the call takes the idle service thread's place: that thread stays
    // asleep and out of idle_ until the call is done, so the pool never runs more
    // calls at once than it has threads.
    if (!run_inline || !reactor->RunInline(&ServicePool::RunInlineCall, idle)) {
      idle->wake.Release();
    }
  }
  if (!ctx) return;
  if (shutting_down) {
    RespondAndRelease(std::move(ctx), ErrorStatusPB::ERROR_UNAVAILABLE,
                      Status::ServiceUnavailable("server is shutting down"));
    return;
  }
  RejectTooBusy(std::move(ctx));
}

void ServicePool::RejectTooBusy(std::unique_ptr<RpcContext> ctx) {
  RpcMethodInfo* method = ctx->method();
  if (method->too_busy) method->too_busy->Increment();
  LOG_EVERY_N(WARNING, 100) << "rejecting " << ctx->ToString() << ": service queue full ("
                            << queue_length_ << " calls; --rpc_service_queue_length)";
  RespondAndRelease(
      std::move(ctx), ErrorStatusPB::ERROR_SERVER_TOO_BUSY,
      Status::ServiceUnavailable("the service queue of " + service_->service_name() + " is full (" +
                                 std::to_string(queue_length_) + " calls); retry later"));
}

void ServicePool::TakeBatch(std::unique_ptr<RpcContext>* calls, size_t n, Reactor* reactor) {
  DCHECK(reactor->IsCurrentThread());
  Worker* wake[kMaxWakes];
  size_t num_wake = 0;
  Worker* run_here = nullptr;
  size_t taken = 0;
  bool shutting_down;
  {
    MutexLock l(mu_);
    shutting_down = shutdown_;
    if (!shutdown_) {
      // As many as one call at a time would have placed: one per idle thread, then
      // up to the queue's length.
      const size_t room =
          queue_length_ + idle_.size() - std::min(queue_.size(), size_t(queue_length_));
      for (; taken < n && taken < room; taken++) queue_.push_back(std::move(calls[taken]));
      if (!idle_.empty() && !queue_.empty()) {
        BatchFacts facts;
        facts.calls = taken;
        facts.reactor_can_run_inline = reactor->CanRunInline();
        const Histogram* cost = queue_.back()->method()->handler_latency_us;
        facts.handler_samples = cost ? cost->TotalCount() : 0;
        facts.handler_mean_us = cost ? cost->MeanValue() : 0;
        if (ShouldRunBatchInline(facts)) {
          run_here = idle_.back();
          idle_.pop_back();
          run_here->call = std::move(queue_.front());
          queue_.pop_front();
        } else {
          const size_t owed = (taken + kCallsPerWake - 1) / kCallsPerWake;
          while (num_wake < owed && num_wake < kMaxWakes && !idle_.empty() && !queue_.empty()) {
            Worker* w = idle_.back();
            idle_.pop_back();
            w->call = std::move(queue_.front());
            queue_.pop_front();
            wake[num_wake++] = w;
          }
        }
      }
    }
  }
  if (run_here && !reactor->RunInline(&ServicePool::RunInlineBatch, run_here)) {
    wake[num_wake++] = run_here;  // CanRunInline() said yes; cannot happen, but never strand it
  }
  for (size_t i = 0; i < num_wake; i++) wake[i]->wake.Release();
  for (size_t i = taken; i < n; i++) {
    if (shutting_down) {
      RespondAndRelease(std::move(calls[i]), ErrorStatusPB::ERROR_UNAVAILABLE,
                        Status::ServiceUnavailable("server is shutting down"));
    } else {
      RejectTooBusy(std::move(calls[i]));
    }
  }
}

void ServicePool::RunInlineCall(void* arg) {
  auto* w = static_cast<Worker*>(arg);
  RunCall(std::move(w->call));
  w->pool->ReturnPlace(w);
}

namespace {

// The start of the next call a thread runs right after one: the clock reading the
// last one's response took, unless that is older than the coarse clock's tick (the
// handler went on after answering, or did not answer on this thread): then a fresh
// reading. A start is thus never more than one tick (1-4 ms) behind.
MonoTime NextCallStart() {
  const MonoTime last = RpcContext::ThisThreadsLastResponseTime();
  if (last.Initialized() && last >= MonoTime::NowCoarse()) return last;
  return MonoTime::Now();
}

}  // namespace

void ServicePool::RunInlineBatch(void* arg) {
  auto* w = static_cast<Worker*>(arg);
  ServicePool* pool = w->pool;
  std::unique_ptr<RpcContext> ctx = std::move(w->call);
  // One clock reading between two calls: the end of one (the time its response was
  // sent, when it answered on this thread) is the start of the next (NextCallStart).
  MonoTime now = MonoTime::Now();
  const MonoTime start = now;
  bool shared = false;
  for (int n = 1;; n++) {
    RpcContext::ForgetThisThreadsResponseTime();
    RunCall(std::move(ctx), now);
    if (n == kMaxInlineCalls) break;
    if (n % kMaxCallsPerBatch == 0) {
      if (FlushScope* scope = FlushScope::Current()) scope->FlushNow();
      now = MonoTime::Now();
    } else {
      now = NextCallStart();
    }
    // Calls that cost more than a few microseconds each are better run side by side:
    // once the batch has run kShareBatchAfterUs with calls still queued, one idle
    // service thread is woken to take from the queue too (once per batch).
    const bool share = !shared && (now - start).ToMicroseconds() >= kShareBatchAfterUs;
    Worker* helper = nullptr;
    {
      MutexLock l(pool->mu_);
      if (pool->queue_.empty() || pool->shutdown_) break;
      ctx = std::move(pool->queue_.front());
      pool->queue_.pop_front();
      if (share && !pool->queue_.empty() && !pool->idle_.empty()) {
        helper = pool->idle_.back();
        pool->idle_.pop_back();
        helper->call = std::move(pool->queue_.front());
        pool->queue_.pop_front();
      }
    }
    if (helper) {
      helper->wake.Release();
      shared = true;
    }
  }
  pool->ReturnPlace(w);
}

void ServicePool::ReturnPlace(Worker* w) {
  {
    MutexLock l(mu_);
    if (!shutdown_ && queue_.empty()) {
      idle_.push_back(w);
      return;
    }
    if (!shutdown_) {
      w->call = std::move(queue_.front());
      queue_.pop_front();
    }
  }
  w->wake.Release();  // the next call, or (null) shutdown
}

void ServicePool::RunCall(std::unique_ptr<RpcContext> ctx) {
  RunCall(std::move(ctx), MonoTime::Now());
}

void ServicePool::RunCall(std::unique_ptr<RpcContext> ctx, MonoTime now) {
  if (now > ctx->deadline()) {
    LOG_EVERY_N(WARNING, 100) << "not running " << ctx->ToString()
                              << ": its deadline passed while it was queued";
    RespondAndRelease(
        std::move(ctx), ErrorStatusPB::ERROR_SERVER_TOO_BUSY,
        Status::TimedOut("call waited " +
                         std::to_string((now - ctx->arrival_time()).ToMilliseconds()) +
                         " ms in the service queue, past its deadline"));
    return;
  }
  if (!ParseOrReject(&ctx)) return;
  ctx.release()->RunHandler(now);  // the handler owns the call now
}

bool ServicePool::ParseOrReject(std::unique_ptr<RpcContext>* ctx) {
  if ((*ctx)->request()) return true;  // a call the reactor fast path declined
  Status s = (*ctx)->ParseRequest();
  if (s.ok()) return true;
  LOG(WARNING) << "invalid request " << (*ctx)->ToString() << ": " << s.ToString();
  RespondAndRelease(std::move(*ctx), ErrorStatusPB::ERROR_INVALID_REQUEST, s);
  return false;
}

void ServicePool::RunOrQueueCall(std::unique_ptr<RpcContext> ctx) {
  DCHECK(ctx->method()->reactor_handler);
  if (!ParseOrReject(&ctx)) return;
  RpcContext* raw = ctx.release();
  if (raw->TryRunOnReactor()) return;
  ctx.reset(raw);
  QueueInboundCall(std::move(ctx));
}

void ServicePool::RunThread(Worker* self) {
  while (true) {
    std::unique_ptr<RpcContext> ctx;
    {
      MutexLock l(mu_);
      if (shutdown_) return;
      if (!queue_.empty()) {
        ctx = std::move(queue_.front());
        queue_.pop_front();
      } else {
        idle_.push_back(self);
      }
    }
    if (!ctx) {
      self->wake.Acquire();
      ctx = std::move(self->call);
      if (!ctx) return;  // woken by Shutdown()
    }
    // Run this call and whatever queued up meanwhile, up to a batch; the responses
    // they queue leave together at the end.
    FlushScope scope;
    MonoTime now = MonoTime::Now();
    for (int n = 1;; n++) {
      RpcContext::ForgetThisThreadsResponseTime();
      RunCall(std::move(ctx), now);
      if (n == kMaxCallsPerBatch) break;
      now = NextCallStart();
      MutexLock l(mu_);
      if (queue_.empty() || shutdown_) break;
      ctx = std::move(queue_.front());
      queue_.pop_front();
    }
  }
}

}  // namespace nyala::rpc
