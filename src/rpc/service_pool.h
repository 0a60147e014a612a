// ServicePool: runs one service's handlers on `num_threads` service threads fed by a
// bounded queue. A call that finds the queue full is answered SERVER_TOO_BUSY at
// once; a call whose caller's deadline passed while it waited is answered TimedOut
// without running. Per-method metrics (calls, handler latency, queue time, too-busy
// count) are registered in the messenger's registry.
//
// An idle service thread sleeps on a semaphore of its own. A synchronous call
// (RequestHeaderPB.caller_waits) that is the server's only call and finds every
// service thread idle runs on the reactor thread that read it, outside its event loop
// (Reactor::RunInline, --rpc_inline_calls), in the place of an idle service thread,
// which stays asleep: no thread needs waking. A call from outside a reactor's read
// that finds a thread idle is handed straight to the one that went idle last (its
// cache is the warmest):
// one futex wake, and no shared condition variable whose mutex the woken thread would
// then contend for.
//
// While an InboundBatch is open on a reactor thread (one socket event's frames), the
// calls it reads for service threads are gathered, and handed over when it closes:
// one lock of the pool per read, and then, if a thread is idle, either the reactor
// runs them itself, inline, in that thread's place (--rpc_inline_batches), or one
// idle thread is woken per kCallsPerWake calls (dispatch_policy.h). A read that brings
// 40 calls costs no wake, or two, instead of one per call.
//
// Thread-safety: QueueInboundCall() from reactor threads; Shutdown() from any thread.
#pragma once

#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/semaphore.h"
#include "rpc/rpc_context.h"
#include "rpc/service_if.h"

namespace nyala {
class MetricRegistry;
}

namespace nyala::rpc {

class Reactor;
class ServicePool;

// Gathers the service calls this reactor thread reads until it ends (see the file
// comment). Reactor threads only, around one read callback; does not nest.
class InboundBatch {
 public:
  explicit InboundBatch(Reactor* reactor);
  ~InboundBatch();  // hands the gathered calls to their pools
  InboundBatch(const InboundBatch&) = delete;
  InboundBatch& operator=(const InboundBatch&) = delete;

  static InboundBatch* Current();

 private:
  friend class ServicePool;
  Reactor* const reactor_;
};

class ServicePool {
 public:
  // Gathered calls (InboundBatch) per service thread woken for them.
  static constexpr size_t kCallsPerWake = 4;

  ServicePool(std::unique_ptr<ServiceIf> service, int num_threads, int queue_length,
              MetricRegistry* metrics);
  ~ServicePool();

  void Start();
  // Stops the threads after their current call; calls still queued are answered
  // ERROR_UNAVAILABLE. Idempotent.
  void Shutdown();

  // Takes `ctx` (whose method is set) into the queue, or answers it SERVER_TOO_BUSY.
  void QueueInboundCall(std::unique_ptr<RpcContext> ctx);
  // Parses the request and runs the handler on this thread, answering the call if it
  // expired or does not parse. Used by service threads and for reactor-run methods.
  static void RunCall(std::unique_ptr<RpcContext> ctx);
  // The same, with `now` (a recent clock reading) as the time the call starts.
  static void RunCall(std::unique_ptr<RpcContext> ctx, MonoTime now);
  // Reactor thread, for methods with a reactor_handler: parses the call and tries the
  // fast path here; queues the call for a service thread if it declines.
  void RunOrQueueCall(std::unique_ptr<RpcContext> ctx);

  ServiceIf* service() const { return service_.get(); }
  size_t queue_size() const;
  int queue_length() const { return queue_length_; }

 private:
  // One service thread's hand-off slot, filled by QueueInboundCall while the thread
  // sleeps on `wake`.
  struct Worker {
    Semaphore wake;
    std::unique_ptr<RpcContext> call;  // null when woken for shutdown
    ServicePool* pool = nullptr;
  };

  friend class InboundBatch;

  void RunThread(Worker* self);
  // InboundBatch's end on `reactor`'s thread: queues `calls` (answering those that do
  // not fit SERVER_TOO_BUSY), then runs them on this thread or wakes idle threads.
  void TakeBatch(std::unique_ptr<RpcContext>* calls, size_t n, Reactor* reactor);
  // Reactor::RunInline's task: runs the call in `worker`'s hand-off slot on this
  // thread, in the place of that sleeping (borrowed) service thread, then gives the
  // place back (ReturnPlace).
  static void RunInlineCall(void* worker);
  // Reactor::RunInline's task for a batch: runs the call in `worker`'s slot and the
  // calls queued behind it, until the queue is empty or kMaxInlineCalls ran, then gives
  // the place back (ReturnPlace).
  static void RunInlineBatch(void* worker);
  // Gives a borrowed service thread's place back: it takes the next queued call, if
  // any, else goes back among the idle (it never woke).
  void ReturnPlace(Worker* w);
  // Answers `ctx` SERVER_TOO_BUSY: the queue is full.
  void RejectTooBusy(std::unique_ptr<RpcContext> ctx);
  // Parses the call's request unless that was done already. False (the call answered
  // ERROR_INVALID_REQUEST and released) when it does not parse.
  static bool ParseOrReject(std::unique_ptr<RpcContext>* ctx);

  const std::unique_ptr<ServiceIf> service_;
  const int num_threads_;
  const int queue_length_;
  MetricRegistry* const metrics_;
  std::vector<std::thread> threads_;
  std::vector<std::unique_ptr<Worker>> workers_;

  mutable Mutex mu_;
  std::deque<std::unique_ptr<RpcContext>> queue_ GUARDED_BY(mu_);
  std::vector<Worker*> idle_ GUARDED_BY(mu_);  // a stack: the last to go idle is woken first
  bool shutdown_ GUARDED_BY(mu_) = false;
};

}  // namespace nyala::rpc
