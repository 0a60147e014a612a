#include "rpc/dispatch_policy.h"

#include <gflags/gflags.h>

DEFINE_bool(rpc_reactor_methods, true,
            "Methods whose reactor policy allows it (Ping; the fast path of a tablet Get whose "
            "rows are in memory) run on the reactor thread that read the call instead of "
            "waking a service thread. False sends every call to a service thread.");

DEFINE_bool(rpc_inline_calls, true,
            "A synchronous call (its caller waits for it) that is the server's only call in "
            "flight and finds the service's threads all idle runs on the reactor thread that "
            "read it, right after its read callback, instead of waking a service thread: one "
            "thread wakeup less per call. It takes an idle service thread's place, so the "
            "service never runs more calls at once than it has threads. A call that runs long "
            "hands the reactor's event loop to a standby thread (--rpc_inline_call_handoff_us).");

DEFINE_bool(rpc_inline_batches, true,
            "Calls that one read of a reactor thread brings in, and that would wake an idle "
            "service thread, run on that reactor right after the read, up to 32 at once, "
            "instead of waking a service thread for them: no thread wakeup and no context switch "
            "per batch. Like --rpc_inline_calls they take an idle service thread's place, and a "
            "batch that runs long hands the event loop to a standby thread "
            "(--rpc_inline_call_handoff_us).");

DEFINE_bool(rpc_sync_calls_on_caller_thread, true,
            "Synchronous RPCs use a connection of the calling thread and read their answer "
            "themselves, instead of going through a reactor thread: one thread wakeup less per "
            "call. Each thread making sync calls then holds its own connection to each server.");

namespace nyala::rpc {

InboundRoute ChooseInboundRoute(const RpcMethodInfo& method, MonoTime deadline) {
  if (!FLAGS_rpc_reactor_methods) return InboundRoute::kServicePool;
  switch (method.policy) {
    case ReactorPolicy::kOnReactor:
      return InboundRoute::kOnReactor;  // an expired call is answered TimedOut there
    case ReactorPolicy::kReactorFastPath:
      // An expired call goes to the pool, which answers it TimedOut without running it.
      return MonoTime::Now() > deadline ? InboundRoute::kServicePool
                                        : InboundRoute::kReactorFastPath;
    case ReactorPolicy::kServiceThread:
      break;
  }
  return InboundRoute::kServicePool;
}

bool ShouldRunInline(const InlineFacts& f) {
  // Only for a caller that waits for this call: a pipelining caller is better served by
  // a reactor that keeps reading while a service thread runs the call. Only on the
  // reactor that read it, not for a call a service thread passes on. Only as the
  // server's only call: with other callers about, a reactor that stops to run a call
  // makes them wait, and busy service threads need no waking. And only when a service
  // thread would otherwise have to be woken for it: the whole pool is idle.
  return FLAGS_rpc_inline_calls && f.caller_waits && f.on_reading_reactor &&
         f.reactor_can_run_inline && f.server_inbound_calls == 1 && f.whole_pool_idle;
}

bool ShouldRunBatchInline(const BatchFacts& f) {
  // The batch is already queued and a service thread would have to be woken for it; the
  // reactor is between two reads. Running the batch delays this reactor's next read by
  // the batch's length (at most the hand-off time, then the standby reads). A read
  // that brought one call is not a batch: leaving the loop for it costs about what the
  // wake saves (a lone synchronous call has route d). And only cheap calls: the
  // reactor runs the batch's calls one after another, where woken service threads
  // would run them side by side on every CPU; for calls of more than a few
  // microseconds that parallelism is worth the wakes (tablet-bench's Scans, 16 in
  // flight on one connection, lost a fifth of their throughput run inline). Until a
  // method has answered kBatchCostSamples calls its cost is unknown and taken as cheap.
  constexpr int64_t kBatchCostSamples = 16;
  constexpr double kCheapHandlerUs = 5;
  const bool cheap = f.handler_samples < kBatchCostSamples || f.handler_mean_us < kCheapHandlerUs;
  return FLAGS_rpc_inline_batches && f.calls >= 2 && cheap && f.reactor_can_run_inline;
}

bool UseCallerThreadConnection() { return FLAGS_rpc_sync_calls_on_caller_thread; }

}  // namespace nyala::rpc
