// Connection: one TCP connection, either accepted by a server (kServer: reads
// requests, writes responses) or opened by a client (kClient: writes requests, reads
// responses). It belongs to one reactor, which does all of its reading.
//
// Thread-safety: Send() may be called from any thread (a service thread answering a
// call writes its response straight to the socket when nothing is queued ahead of
// it). Everything else runs on the reactor thread.
//
// Writes are gathered: while a FlushScope is open on a thread, Send() on that thread
// only queues, and the scope's end writes each touched connection with one writev.
// Reactor callbacks and service-thread batches open one.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "nyala/monotime.h"
#include "rpc/call_map.h"
#include "rpc/libevent_util.h"
#include "rpc/rpc_header.pb.h"
#include "rpc/serialization.h"
#include "rpc/sockaddr.h"

struct event;

namespace nyala::rpc {

class Messenger;
class OutboundCall;
class Reactor;
class ServicePool;
struct RpcMethodInfo;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  enum class Direction { kClient, kServer };

  // Takes ownership of `fd` (non-blocking). `messenger` must outlive the connection's
  // activity (the messenger shuts every connection down before it goes away).
  Connection(Reactor* reactor, Messenger* messenger, int fd, Sockaddr remote, Direction direction);
  ~Connection();

  // Reactor thread: starts watching the socket. A client connection has its connect()
  // in progress and sends the preamble first.
  void Start();

  // Reactor thread: stops watching the socket, closes it and fails every pending
  // outbound call with `reason`. Idempotent.
  void Shutdown(const Status& reason);

  // Reactor thread (client): registers `call` and sends it; fails it if the
  // connection has closed.
  void QueueOutboundCall(std::unique_ptr<OutboundCall> call);
  // Any thread (client): registers `call` and sends it, writing straight to the
  // socket when nothing is queued ahead (no reactor wakeup). Returns the call back,
  // untouched, if the connection has closed, so the caller can open a new one.
  std::unique_ptr<OutboundCall> TryQueueOutboundCall(std::unique_ptr<OutboundCall> call);

  // Any thread: queues `frame` and writes it now, or at the end of this thread's
  // FlushScope. Dropped silently if the connection has closed.
  void Send(OutboundFrame frame);

  // Any thread: sends `frame` as a fatal error, then closes the connection.
  void SendFatalAndClose(OutboundFrame frame, const Status& reason);

  // Server, reactor thread: the method the last request on this connection named
  // (Messenger::DispatchInboundCall), whose names are info->service_name and
  // info->name. The calls of one connection mostly name one method, and finding it
  // again costs a hash of the service name and a search of the method table. Pools
  // and methods live as long as the messenger.
  struct LastMethod {
    ServicePool* pool = nullptr;
    RpcMethodInfo* info = nullptr;
  };
  LastMethod* last_method() { return &last_method_; }

  Direction direction() const { return direction_; }
  const Sockaddr& remote() const { return remote_; }
  Reactor* reactor() const { return reactor_; }
  Messenger* messenger() const { return messenger_; }
  bool closed() const { return closed_.load(std::memory_order_acquire); }
  // Visits the outbound calls awaiting their answer (any thread).
  void ForEachPendingCall(const std::function<void(const OutboundCall&)>& visit) const
      EXCLUDES(calls_mu_);
  size_t NumPendingCallsForTests() const {
    MutexLock l(calls_mu_);
    return pending_calls_.size();
  }

 private:
  friend class FlushScope;

  static void OnReadable(int fd, short events, void* arg);
  static void OnWritable(int fd, short events, void* arg);
  static void OnTimeoutSweep(int fd, short events, void* arg);
  // Fails the calls whose deadline passed; stops sweeping when none is pending.
  void SweepTimedOutCalls();
  void ArmTimeoutSweep();

  void HandleRead();
  // Parses every complete frame in the buffer. Returns false if the connection closed.
  bool ProcessBuffer();
  // `payload` lies in `buffer` when the caller hands that over; otherwise it is
  // copied.
  bool HandleRequestFrame(Slice payload, std::unique_ptr<char[]> buffer = nullptr);
  // Hands the completed frame in big_frame_ to HandleRequest/ResponseFrame.
  bool FinishBigFrame();
  bool HandleResponseFrame(Slice payload);
  // Sends a fatal ErrorStatusPB and closes (server side).
  void FatalError(ErrorStatusPB::RpcErrorCodePB code, const Status& s, int32_t call_id);

  // Writes as much of the outbox as the socket takes; arms EV_WRITE for the rest.
  void FlushLocked() REQUIRES(out_mu_);
  void FailWrite(const Status& s) REQUIRES(out_mu_);

  Reactor* const reactor_;
  Messenger* const messenger_;
  const int fd_;
  const Sockaddr remote_;
  const Direction direction_;
  EventPtr read_event_;
  EventPtr write_event_;
  std::atomic<bool> closed_{false};

  // Reactor thread only.
  std::string in_buf_;
  size_t in_len_ = 0;
  // A frame of at least kBigFrameBytes is read straight into a buffer of its own,
  // which the call then keeps: no regrowing of in_buf_, no copy. Allocated at the
  // checked frame length but uninitialised, so memory is only backed as bytes arrive.
  std::unique_ptr<char[]> big_frame_;
  size_t big_frame_len_ = 0;  // with the length prefix
  size_t big_frame_have_ = 0;
  MonoTime read_time_;      // when the last read returned bytes (reactor thread)
  LastMethod last_method_;  // reactor thread
  bool preamble_seen_ = false;
  bool connecting_ = false;
  EventPtr sweep_event_;  // client: periodic check of call deadlines

  // Outbound calls awaiting their response (client). Completed outside the lock.
  mutable Mutex calls_mu_;
  CallMap<OutboundCall> pending_calls_ GUARDED_BY(calls_mu_);
  bool calls_closed_ GUARDED_BY(calls_mu_) = false;
  bool sweep_armed_ GUARDED_BY(calls_mu_) = false;

  Mutex out_mu_;
  std::deque<OutboundFrame> outbox_ GUARDED_BY(out_mu_);
  size_t out_offset_ GUARDED_BY(out_mu_) = 0;  // bytes of outbox_.front() already written
  bool write_armed_ GUARDED_BY(out_mu_) = false;
  bool in_flush_scope_ GUARDED_BY(out_mu_) = false;
  bool out_closed_ GUARDED_BY(out_mu_) = false;
  // A thread is in FlushLocked's sendmsg, out_mu_ released; Shutdown() waits on
  // writer_done_ for it before it clears the outbox and closes the socket.
  bool writing_ GUARDED_BY(out_mu_) = false;
  // The writer's copy of the small frames it sends in one iovec. Only the thread
  // that set writing_ touches it, until it clears writing_ (not guarded by out_mu_:
  // sendmsg reads it with the lock released).
  std::unique_ptr<char[]> gather_;
  CondVar writer_done_;
};

// Gathers the writes made on this thread until it ends (see Connection). Nests.
class FlushScope {
 public:
  FlushScope();
  ~FlushScope();
  FlushScope(const FlushScope&) = delete;
  FlushScope& operator=(const FlushScope&) = delete;

  // Flushes the connections touched so far (e.g. before blocking).
  void FlushNow();
  // The innermost open scope of this thread, or nullptr.
  static FlushScope* Current();

 private:
  friend class Connection;
  std::vector<std::shared_ptr<Connection>> touched_;
  FlushScope* outer_;
};

}  // namespace nyala::rpc
