// CallerConnection: a connection that belongs to one thread and carries only that
// thread's synchronous calls. The caller writes its request and then reads the answer
// off the socket itself, blocked in poll(): the kernel wakes it directly when the
// response arrives, as in a blocking ping-pong. The shared reactor connection would
// take two wakeups instead (the client reactor reads the response, then wakes the
// caller), and on this machine each wakeup across CPUs costs ~30 µs.
//
// Proxy::SyncRequest uses these unless --rpc_sync_calls_on_caller_thread=false. Each
// thread keeps at most one per (messenger, remote address), reused for every call;
// they close when the thread exits, when their messenger shuts down (noticed at the
// thread's next sync call) or after an I/O error. A call blocked on one returns
// ServiceUnavailable as soon as its messenger shuts down.
//
// The server sees an ordinary connection: same preamble, frames and call ids.
//
// Thread-safety: none; one thread owns each object (see RunSyncCallOnCallerThread).
#pragma once

#include <memory>

#include "rpc/sockaddr.h"

namespace nyala::rpc {

class Messenger;
class OutboundCall;

// Sends `call` (already serialized) on this thread's caller connection to
// call->remote(), opening it if needed, and waits for the answer until the call's
// deadline. Completes `call` exactly once before returning.
void RunSyncCallOnCallerThread(const std::shared_ptr<Messenger>& messenger,
                               std::unique_ptr<OutboundCall> call);

// Caller connections that this thread holds open (for tests).
size_t NumCallerConnectionsOfThisThread();

}  // namespace nyala::rpc
