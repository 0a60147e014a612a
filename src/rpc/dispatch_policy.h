// The one place that decides which thread runs an RPC handler, and which thread
// carries a client's call. Every route, its conditions and its reason are stated here;
// docs/rpc-threading.md tells the same story for every thread of a daemon and a client.
//
// Server side, for a call a reactor thread has read and parsed the header of:
//
//   route                  conditions                                     why
//   ---------------------  ---------------------------------------------  ------------------
//   kOnReactor             method's reactor_policy is ON_REACTOR and       no thread wakeup
//                          --rpc_reactor_methods                           for a call that
//                                                                          costs microseconds
//   kReactorFastPath       method's reactor_policy is REACTOR_FAST_PATH,   no wakeup when the
//                          --rpc_reactor_methods, and the deadline has     data is in memory;
//                          not passed. The fast path may decline; then     it never blocks
//                          the call continues as kServicePool.
//   kServicePool           everything else: the method's ServicePool       handlers may block
//                          takes it (below).
//
// Inside the pool (ServicePool::QueueInboundCall), a call that finds a service thread
// idle is either run inline or handed to that thread; otherwise it is queued, or
// answered SERVER_TOO_BUSY when the queue is full:
//
//   run inline             ShouldRunInline(): --rpc_inline_calls, the      a lone synchronous
//   (Reactor::RunInline)   caller waits for the answer (caller_waits),     caller pays no
//                          the call is on the reactor that read it, that   service-thread
//                          reactor can run an inline task now, it is the   wakeup
//                          server's only inbound call in flight, and
//                          every service thread of the pool is idle.
//   gather                 the call comes from a reactor's read (an        one pool lock and
//                          InboundBatch is open), is not run inline, and   one wake, or none,
//                          no fast path of its method declined it:
//                          kept until the read ends, then queued with      per read, not one
//                          the read's other calls (below)                  per call
//   hand to idle thread    otherwise, a thread is idle                     one futex wake
//   queue                  no thread idle, queue not full                  back-pressure
//
// When a read ends with gathered calls (ServicePool::TakeBatch), they are queued
// (those beyond one per idle thread plus the queue length answered SERVER_TOO_BUSY),
// and if a service thread is idle:
//
//   run batch inline       ShouldRunBatchInline(): --rpc_inline_batches,   no service-thread
//   (Reactor::RunInline)   the read brought at least two calls for the     wakeup, no context
//                          pool, their method is cheap (mean handler      switch; the
//                          time under 5 us, or not known yet; the last     standby bounds a
//                          call's method when they differ),
//                          and the reactor can run an inline task now.     blocking handler's
//                          The reactor runs the queued calls (up to 256)   delay to others
//                          in an idle thread's place; after 500 us it
//                          wakes one idle thread to share the queue; a
//                          batch that runs long hands the loop to the
//                          standby (--rpc_inline_call_handoff_us)
//   wake idle threads      otherwise: one per 4 queued calls               fewer wakes
//
// Client side, for a call a Proxy sends:
//
//   caller-thread conn.    UseCallerThreadConnection(): a synchronous      the caller reads
//   (caller_connection.h)  call (Proxy::SyncRequest) and                   its answer itself;
//                          --rpc_sync_calls_on_caller_thread               no reactor wakeup
//   reactor connection     asynchronous calls, and sync calls with the     one connection per
//                          flag off                                        server, multiplexed
//
// What each route saves, measured flag on vs off, is in bench/README.md.
//
// Thread-safety: pure functions of their arguments and of flags.
#pragma once

#include <cstddef>

#include "nyala/monotime.h"
#include "rpc/service_if.h"

namespace nyala::rpc {

enum class InboundRoute { kOnReactor, kReactorFastPath, kServicePool };

// The route of a call to `method` with `deadline` (the clock is read only when the
// route depends on it).
InboundRoute ChooseInboundRoute(const RpcMethodInfo& method, MonoTime deadline);

// What ServicePool knows when it decides whether to run a call inline.
struct InlineFacts {
  bool caller_waits;            // RequestHeaderPB.caller_waits
  bool on_reading_reactor;      // this thread is the reactor that read the call
  bool reactor_can_run_inline;  // Reactor::CanRunInline()
  int server_inbound_calls;     // calls read and not yet answered, whole messenger
  bool whole_pool_idle;         // every service thread of the pool is idle
};
bool ShouldRunInline(const InlineFacts& facts);

// What ServicePool knows when a read gathered calls for a pool with an idle thread.
struct BatchFacts {
  size_t calls;                 // calls the read gathered for the pool
  bool reactor_can_run_inline;  // Reactor::CanRunInline()
  int64_t handler_samples;      // calls answered so far of the method of the read's last call
  double handler_mean_us;       // and their mean handler time
};
// Whether the reactor runs the gathered calls itself (route g).
bool ShouldRunBatchInline(const BatchFacts& facts);

// Whether a synchronous call waits on a connection of the calling thread.
bool UseCallerThreadConnection();

}  // namespace nyala::rpc
