// RpcContext: one received call on the server, from the frame that carried it to
// the single response. The framework creates it on a reactor thread and hands it to
// the method's handler; the handler (or whoever it passes the context to, on any
// thread) answers exactly once with RespondSuccess / RespondFailure /
// RespondRpcFailure, after which the context deletes itself, with the request and
// response it owns.
#pragma once

#include <google/protobuf/arena.h>
#include <google/protobuf/message.h>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "nyala/monotime.h"
#include "nyala/slice.h"
#include "rpc/in_flight.h"
#include "rpc/rpc_header.pb.h"
#include "rpc/sockaddr.h"

namespace nyala::rpc {

class Connection;
class Messenger;
class Reactor;
struct RpcMethodInfo;

// What a handler shows /rpcz about a call it works on (the stage it is in, say).
// Describe() runs on the thread rendering /rpcz while the call is in flight, so it
// may read only what another thread may (atomics, fields that do not change).
class CallTrace {
 public:
  virtual ~CallTrace() = default;
  virtual std::string Describe(MonoTime now) const = 0;
};

class RpcContext : public InFlightHook {
 public:
  // Sends the response message; the call succeeded.
  void RespondSuccess();
  // The call succeeded; `serialized_body` (the serialized bytes of a message of the
  // method's response type, e.g. a cached answer) is sent as the body in place of
  // response(), which is ignored. The bytes are copied once, into the frame.
  void RespondSuccessWithSerializedBody(Slice serialized_body);
  // The call failed in the application: ERROR_APPLICATION carrying `status`' code.
  void RespondFailure(const Status& status);
  // An RPC-level error (e.g. ERROR_SERVER_TOO_BUSY) carrying `status`.
  void RespondRpcFailure(ErrorStatusPB::RpcErrorCodePB code, const Status& status);

  // For a handler that runs in the read callback (route b, docs/rpc-threading.md):
  // runs `task` on this thread once that callback returns, outside the event loop, as
  // an inline task (Reactor::RunInline): if it runs past --rpc_inline_call_handoff_us
  // the standby takes the loop over, so the task may block, as an inline handler may.
  // For work the handler would otherwise hand to a sleeping thread of its own. Once
  // taken, the task runs even if the reactor shuts down meanwhile. False, nothing
  // taken, when called from any other thread than the one running the reactor's loop
  // (the handler runs on a service thread, or inline itself), or when the reactor
  // cannot take an inline task now (one is waiting already, or it is closing).
  bool RunInlineAfterRead(std::function<void()> task);

  // Attaches bytes to the response without copying them into the body; returns the index.
  int AddOutboundSidecar(std::string data);
  int num_inbound_sidecars() const { return int(inbound_sidecars_.size()); }
  Status GetInboundSidecar(int idx, Slice* out) const;

  // Shows `trace` on /rpcz with this call until it is answered (null: nothing). It
  // must outlive the response. Any thread.
  void set_trace(const CallTrace* trace) { trace_.store(trace, std::memory_order_release); }

  int32_t call_id() const { return call_id_; }
  const RequestIdPB* request_id() const { return request_id_.get(); }
  const Sockaddr& remote_address() const { return remote_; }
  // When the caller stops waiting (MonoTime::Max() if it gave no timeout).
  MonoTime deadline() const { return deadline_; }
  MonoTime arrival_time() const { return arrival_; }
  const std::string& method_name() const;
  const std::string& service_name() const;

  const google::protobuf::Message* request() const { return request_; }
  // The same request, for a handler that takes parts of it (moves its strings out,
  // say) instead of copying them. The framework reads nothing of a request once its
  // handler runs; not for a reactor fast path that may decline the call.
  google::protobuf::Message* mutable_request() { return request_; }
  google::protobuf::Message* response() { return response_; }

  // Framework side ------------------------------------------------------------

  // A call to `method` (null: the header names no method of ours; the call can only
  // be answered with an error). `payload` is the frame after its length prefix,
  // already checked by SplitFrame, with `header` parsed from it; it lies in `buffer`
  // when that is given (a big frame read into a buffer of its own), else it is copied.
  // The header's fields are copied out: it may be reused once this returns.
  RpcContext(std::shared_ptr<Connection> conn, const RequestHeaderPB& header, RpcMethodInfo* method,
             std::unique_ptr<char[]> buffer, Slice payload, MonoTime arrival);
  ~RpcContext();

  // The caller blocks on this call (RequestHeaderPB.caller_waits).
  bool caller_waits() const { return caller_waits_; }
  // The reactor whose connection brought the call, and its messenger.
  Reactor* reactor() const;
  Messenger* messenger() const;
  RpcMethodInfo* method() const { return method_; }
  // Parses the body and sidecars into a new request message and prepares the
  // response; on failure the caller answers ERROR_INVALID_REQUEST.
  Status ParseRequest();
  // Runs the handler (records queue time and, on response, handler latency); `now`
  // is the time it starts.
  void RunHandler(MonoTime now);
  // Runs the method's reactor_handler on this (reactor) thread. True if it took the
  // call (the context may be gone); false if the call must go to a service thread,
  // with the response reset.
  bool TryRunOnReactor();
  // The clock read by the last response this thread sent (the end of that call's
  // handler), or an uninitialized MonoTime if it sent none since
  // ForgetThisThreadsResponseTime(). A loop running calls one after another takes it
  // as the next call's start instead of reading the clock again (ServicePool, which
  // reads the clock after all when the reading is older than the coarse clock's tick).
  static MonoTime ThisThreadsLastResponseTime();
  static void ForgetThisThreadsResponseTime();
  // Whether a handler has started on the call (for /rpcz; any thread).
  bool running() const { return running_.load(std::memory_order_relaxed); }
  // For /rpcz: "service.method from addr, running for N ms", and the handler's
  // CallTrace if it set one.
  std::string ToString() const;
  // The handler's CallTrace at `now` ("" without one). Any thread.
  std::string TraceDescription(MonoTime now) const;

 private:
  void SendResponse(bool is_error, const google::protobuf::MessageLite& body);
  // Adds the time since handler_start_ to the method's handler latency, reading the
  // clock once (and leaving the reading for ThisThreadsLastResponseTime()).
  void RecordHandlerLatency();

  // Payloads up to this size are copied into the context itself (no allocation).
  // (A one-key Get's frame is about 100 bytes.) Sized so the whole context stays within
  // 1024 bytes (static_assert in rpc_context.cc).
  static constexpr size_t kInlinePayloadBytes = 112;

  std::shared_ptr<Connection> conn_;
  const int32_t call_id_;
  const bool caller_waits_;
  std::unique_ptr<RequestIdPB> request_id_;  // writes carry one
  google::protobuf::RepeatedField<uint32_t> sidecar_offsets_;
  // Only when method_ is null (an unknown service or method): the names it asked for.
  std::unique_ptr<std::pair<std::string, std::string>> unknown_names_;
  std::unique_ptr<char[]> buffer_;
  alignas(8) char inline_payload_[kInlinePayloadBytes];
  Slice payload_;  // in buffer_ or inline_payload_
  std::vector<Slice> inbound_sidecars_;
  std::vector<std::string> outbound_sidecars_;
  const Sockaddr remote_;
  const MonoTime arrival_;
  MonoTime deadline_;
  MonoTime handler_start_;
  RpcMethodInfo* method_ = nullptr;
  std::atomic<bool> running_{false};
  std::atomic<const CallTrace*> trace_{nullptr};
  // The request and response messages live in arena_, which starts in
  // arena_block_: a small call's messages, strings and repeated fields cost no
  // malloc/free pair each (a one-key Get's request and response made ~10). Made by
  // ParseRequest, on the thread that will run the handler: protobuf arenas keep a
  // block per allocating thread, and the first allocation from another thread than
  // the one that made the arena takes a slow path.
  alignas(8) char arena_block_[512];
  std::optional<google::protobuf::Arena> arena_;
  google::protobuf::Message* request_ = nullptr;   // in arena_
  google::protobuf::Message* response_ = nullptr;  // in arena_
};

// Sends now what the calling thread holds back to send: an inline task (such as one
// from RpcContext::RunInlineAfterRead) runs in a scope whose frames leave when it
// returns. For such a task about to block. Any thread; nothing to do outside a scope.
void FlushPendingSends();

// Answers `ctx` with an RPC error (the context deletes itself).
inline void RespondAndRelease(std::unique_ptr<RpcContext>&& ctx, ErrorStatusPB::RpcErrorCodePB code,
                              const Status& status) {
  ctx.release()->RespondRpcFailure(code, status);
}

}  // namespace nyala::rpc
