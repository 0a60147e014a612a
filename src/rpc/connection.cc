#include "rpc/connection.h"
#include "common/status.h"

#include <errno.h>
#include <event2/event.h>
#include <glog/logging.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "rpc/messenger.h"
#include "rpc/outbound_call.h"
#include "rpc/reactor.h"
#include "rpc/rpc_context.h"
#include "rpc/rpc_controller.h"
#include "rpc/service_pool.h"

namespace nyala::rpc {

namespace {
constexpr size_t kInitialReadBuffer = 64 * 1024;
constexpr int kMaxReadsPerEvent = 16;  // fairness between connections of one reactor
// Frames from this size on are read into a buffer of their own (Connection::big_frame_).
constexpr size_t kBigFrameBytes = 256 * 1024;
constexpr int kMaxIovecs = 64;
// The writer's buffer for small frame pieces, sent as one iovec (GatherFrames).
constexpr size_t kGatherBytes = 16 * 1024;
// How often a client connection with calls in flight checks their deadlines: a call
// times out at most this much after its deadline.
constexpr MonoDelta kTimeoutSweepInterval = MonoDelta::FromMilliseconds(5);
thread_local FlushScope* tls_flush_scope = nullptr;

std::string ErrnoString(int err) {
  char buf[128];
  return strerror_r(err, buf, sizeof(buf));
}
}  // namespace

// FlushScope -------------------------------------------------------------------

FlushScope::FlushScope() : outer_(tls_flush_scope) { tls_flush_scope = this; }

FlushScope::~FlushScope() {
  FlushNow();
  tls_flush_scope = outer_;
}

FlushScope* FlushScope::Current() { return tls_flush_scope; }

void FlushScope::FlushNow() {
  // A flush can run callbacks that touch more connections; loop until quiet.
  while (!touched_.empty()) {
    std::vector<std::shared_ptr<Connection>> conns;
    conns.swap(touched_);
    for (auto& c : conns) {
      MutexLock l(c->out_mu_);
      c->in_flush_scope_ = false;
      if (!c->write_armed_ && !c->out_closed_) c->FlushLocked();
    }
  }
}

// Connection -------------------------------------------------------------------

Connection::Connection(Reactor* reactor, Messenger* messenger, int fd, Sockaddr remote,
                       Direction direction)
    : reactor_(reactor),
      messenger_(messenger),
      fd_(fd),
      remote_(std::move(remote)),
      direction_(direction) {}

Connection::~Connection() {
  if (!closed_.load()) {
    // Never started or never shut down (only in error paths before Start()): the
    // events go before the socket they watch.
    read_event_.reset();
    write_event_.reset();
    close(fd_);
  }
}

void Connection::Start() {
  DCHECK(reactor_->IsCurrentThread());
  read_event_.reset(
      event_new(reactor_->base(), fd_, EV_READ | EV_PERSIST, &Connection::OnReadable, this));
  write_event_.reset(event_new(reactor_->base(), fd_, EV_WRITE, &Connection::OnWritable, this));
  event_add(read_event_.get(), nullptr);
  if (direction_ == Direction::kClient) {
    sweep_event_.reset(
        event_new(reactor_->base(), -1, EV_PERSIST, &Connection::OnTimeoutSweep, this));
    connecting_ = true;
    OutboundFrame preamble;
    preamble.head.assign(kPreamble, kPreambleLen);
    MutexLock l(out_mu_);
    outbox_.push_back(std::move(preamble));
    write_armed_ = true;  // nothing leaves before the connect completes
    event_add(write_event_.get(), nullptr);
  }
}

void Connection::Shutdown(const Status& reason) {
  DCHECK(reactor_->IsCurrentThread());
  if (closed_.exchange(true)) return;
  {
    UniqueLock l(out_mu_);
    out_closed_ = true;
    writer_done_.wait(l, [this]() REQUIRES(out_mu_) { return !writing_; });
    outbox_.clear();
    // Free the events under the lock: Send() only touches write_event_ while holding it
    // and seeing !out_closed_.
    read_event_.reset();
    write_event_.reset();
  }
  sweep_event_.reset();
  // Drain what the peer already sent so close() sends FIN, not RST: an RST would make
  // the peer's kernel discard a fatal error reply we just wrote.
  char sink[4096];
  for (int i = 0; i < 16 && read(fd_, sink, sizeof(sink)) > 0; i++) {
  }
  close(fd_);
  VLOG(1) << "connection " << remote_.ToString() << " closed: " << reason.ToString();

  std::vector<std::unique_ptr<OutboundCall>> calls;
  {
    MutexLock l(calls_mu_);
    calls_closed_ = true;
    pending_calls_.TakeAll(&calls);
  }
  for (auto& call : calls) {
    call->CompleteWithError(
        reason.CloneAndPrepend(std::string(call->method()) + " RPC to " + remote_.ToString()));
  }
  reactor_->RemoveConnection(this);
}

void Connection::ForEachPendingCall(const std::function<void(const OutboundCall&)>& visit) const {
  MutexLock l(calls_mu_);
  pending_calls_.ForEach([&](int32_t, const OutboundCall& call) { visit(call); });
}

void Connection::QueueOutboundCall(std::unique_ptr<OutboundCall> call) {
  DCHECK(reactor_->IsCurrentThread());
  call = TryQueueOutboundCall(std::move(call));
  if (call) {
    call->CompleteWithError(Status::NetworkError(std::string(call->method()) + " RPC to " +
                                                 remote_.ToString() + ": connection closed"));
  }
}

std::unique_ptr<OutboundCall> Connection::TryQueueOutboundCall(std::unique_ptr<OutboundCall> call) {
  DCHECK(direction_ == Direction::kClient);
  OutboundFrame frame = call->TakeFrame();
  const int32_t id = call->call_id();
  const bool has_deadline = call->deadline() != MonoTime::Max();
  bool arm_sweep = false;
  {
    MutexLock l(calls_mu_);
    if (calls_closed_) {
      call->RestoreFrame(std::move(frame));
      return call;
    }
    if (pending_calls_.Insert(id, &call)) {
      if (has_deadline && !sweep_armed_) arm_sweep = sweep_armed_ = true;
    }
  }
  if (call) {
    // A call id still in flight after 2^31 calls: keep the old call, fail the new.
    LOG(ERROR) << "duplicate call id " << id << " to " << remote_.ToString();
    call->CompleteWithError(Status::IllegalState("call id " + std::to_string(id) +
                                                 " is still in flight to " + remote_.ToString()));
    return nullptr;
  }
  // From here on the response may complete the call on the reactor at any moment.
  if (arm_sweep) {
    if (reactor_->IsCurrentThread()) {
      ArmTimeoutSweep();
    } else {
      reactor_->Post([self = shared_from_this()] { self->ArmTimeoutSweep(); });
    }
  }
  Send(std::move(frame));
  return nullptr;
}

void Connection::ArmTimeoutSweep() {
  DCHECK(reactor_->IsCurrentThread());
  if (!sweep_event_) return;  // shut down meanwhile
  timeval tv = kTimeoutSweepInterval.ToTimeVal();
  evtimer_add(sweep_event_.get(), &tv);
}

void Connection::OnTimeoutSweep(int, short, void* arg) {
  auto* conn = static_cast<Connection*>(arg);
  auto self = conn->shared_from_this();
  FlushScope scope;
  conn->SweepTimedOutCalls();
}

void Connection::SweepTimedOutCalls() {
  const MonoTime now = MonoTime::Now();
  std::vector<std::unique_ptr<OutboundCall>> expired;
  {
    MutexLock l(calls_mu_);
    pending_calls_.TakeIf([&](const OutboundCall& call) { return call.deadline() <= now; },
                          &expired);
    bool any_deadline = false;
    pending_calls_.ForEach([&](int32_t, const OutboundCall& call) {
      any_deadline |= call.deadline() != MonoTime::Max();
    });
    if (!any_deadline) {
      sweep_armed_ = false;
      event_del(sweep_event_.get());
    }
  }
  for (auto& call : expired) {
    const MonoDelta waited = now - call->start_time();
    call->CompleteWithError(Status::TimedOut(std::string(call->method()) + " RPC to " +
                                             remote_.ToString() + " timed out after " +
                                             waited.ToString()));
  }
}

void Connection::Send(OutboundFrame frame) {
  MutexLock l(out_mu_);
  if (out_closed_) return;
  outbox_.push_back(std::move(frame));
  if (write_armed_ || in_flush_scope_) return;  // someone will write it soon
  if (FlushScope* scope = FlushScope::Current()) {
    in_flush_scope_ = true;
    scope->touched_.push_back(shared_from_this());
    return;
  }
  FlushLocked();
}

void Connection::SendFatalAndClose(OutboundFrame frame, const Status& reason) {
  {
    MutexLock l(out_mu_);
    if (out_closed_) return;
    outbox_.push_back(std::move(frame));
    if (!write_armed_) FlushLocked();  // best effort: the connection closes right after
  }
  if (reactor_->IsCurrentThread()) {
    Shutdown(reason);
  } else {
    reactor_->Post([self = shared_from_this(), reason] { self->Shutdown(reason); });
  }
}

void Connection::FlushLocked() {
  // One writer at a time, and not under out_mu_: the sendmsg of a loopback connection
  // runs the peer's receive path too, and a service thread queueing its response
  // meanwhile must not sleep on the mutex. Frames queued while the writer is in
  // sendmsg are sent by its next round. (Frames are not moved by push_back on a deque,
  // so the iovecs stay valid while the lock is dropped; only the writer pops.)
  if (writing_) return;
  writing_ = true;
  while (!outbox_.empty()) {
    iovec iov[kMaxIovecs];
    size_t want = 0;
    if (!gather_) gather_ = std::make_unique<char[]>(kGatherBytes);
    const int n =
        GatherFrames(outbox_, out_offset_, gather_.get(), kGatherBytes, iov, kMaxIovecs, &want);
    // sendmsg rather than writev for MSG_NOSIGNAL: a write to a peer that has reset
    // the connection must fail with EPIPE, not raise SIGPIPE and kill the process.
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = size_t(n);
    out_mu_.Unlock();
    const ssize_t w = sendmsg(fd_, &msg, MSG_NOSIGNAL);
    const int err = errno;
    out_mu_.Lock();
    if (out_closed_) break;  // Shutdown() waits for this writer, then clears the outbox
    if (w < 0) {
      if (err == EINTR) continue;
      if (err == EAGAIN || err == EWOULDBLOCK) break;
      FailWrite(Status::NetworkError("write to " + remote_.ToString() + " failed", ErrnoString(err),
                                     err));
      break;
    }
    messenger_->RecordBytesSent(w);
    size_t left = size_t(w);
    while (left > 0) {
      const size_t rest = outbox_.front().size() - out_offset_;
      if (left >= rest) {
        left -= rest;
        outbox_.pop_front();
        out_offset_ = 0;
      } else {
        out_offset_ += left;
        left = 0;
      }
    }
    if (size_t(w) < want) break;  // the socket buffer is full
  }
  writing_ = false;
  if (out_closed_) {
    writer_done_.notify_all();
    return;
  }
  if (!outbox_.empty() && !write_armed_) {
    write_armed_ = true;
    event_add(write_event_.get(), nullptr);
  }
}

void Connection::FailWrite(const Status& s) {
  out_closed_ = true;
  outbox_.clear();
  reactor_->Post([self = shared_from_this(), s] { self->Shutdown(s); });
}

void Connection::OnWritable(int fd, short, void* arg) {
  auto* conn = static_cast<Connection*>(arg);
  auto self = conn->shared_from_this();
  if (conn->connecting_) {
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      conn->Shutdown(Status::NetworkError("connect to " + conn->remote_.ToString() + " failed",
                                          ErrnoString(err), err));
      return;
    }
    conn->connecting_ = false;
  }
  MutexLock l(conn->out_mu_);
  conn->write_armed_ = false;
  if (!conn->out_closed_) conn->FlushLocked();
}

void Connection::OnReadable(int, short, void* arg) {
  auto* conn = static_cast<Connection*>(arg);
  auto self = conn->shared_from_this();
  FlushScope scope;
  InboundBatch batch(conn->reactor_);  // ends first: calls go to their pools, then writes leave
  conn->HandleRead();
}

void Connection::HandleRead() {
  for (int i = 0; i < kMaxReadsPerEvent && !closed(); i++) {
    char* dst;
    size_t space;
    if (big_frame_) {
      dst = big_frame_.get() + big_frame_have_;
      space = big_frame_len_ - big_frame_have_;
    } else {
      if (in_buf_.size() - in_len_ < 4096) {
        in_buf_.resize(std::max(kInitialReadBuffer, in_buf_.size() * 2));
      }
      dst = in_buf_.data() + in_len_;
      space = in_buf_.size() - in_len_;
    }
    ssize_t n = read(fd_, dst, space);
    if (n == 0) {
      if (in_len_ > 0 || big_frame_) {
        LOG(WARNING) << "connection from " << remote_.ToString()
                     << " closed by the peer mid-frame (" << (in_len_ + big_frame_have_)
                     << " bytes unprocessed)";
      }
      Shutdown(Status::NetworkError("connection closed by " + remote_.ToString()));
      return;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      Shutdown(Status::NetworkError("read from " + remote_.ToString() + " failed",
                                    ErrnoString(errno), errno));
      return;
    }
    messenger_->RecordBytesReceived(n);
    read_time_ = MonoTime::Now();  // the arrival time of every call this read completes
    if (big_frame_) {
      big_frame_have_ += size_t(n);
      if (big_frame_have_ == big_frame_len_ && !FinishBigFrame()) return;
    } else {
      in_len_ += size_t(n);
      if (!ProcessBuffer()) return;
    }
    if (size_t(n) < space) return;  // drained the socket
  }
}

bool Connection::FinishBigFrame() {
  std::unique_ptr<char[]> frame = std::move(big_frame_);
  const size_t len = big_frame_len_;
  big_frame_len_ = big_frame_have_ = 0;
  Slice payload(frame.get() + kFrameLengthBytes, len - kFrameLengthBytes);
  const bool ok = direction_ == Direction::kServer ? HandleRequestFrame(payload, std::move(frame))
                                                   : HandleResponseFrame(payload);
  return ok && !closed();
}

bool Connection::ProcessBuffer() {
  size_t pos = 0;
  const auto* buf = reinterpret_cast<const uint8_t*>(in_buf_.data());
  if (direction_ == Direction::kServer && !preamble_seen_) {
    const size_t have = std::min<size_t>(in_len_, kPreambleLen);
    if (memcmp(buf, kPreamble, std::min<size_t>(have, kPreambleMagicLen)) != 0) {
      FatalError(ErrorStatusPB::FATAL_INVALID_HEADER,
                 Status::InvalidArgument("bad connection preamble: not an nyrpc client"), -1);
      return false;
    }
    if (have < size_t(kPreambleLen)) return true;
    if (buf[kPreambleMagicLen] != kProtocolVersion) {
      FatalError(ErrorStatusPB::FATAL_VERSION_MISMATCH,
                 Status::NotSupported("unsupported nyrpc protocol version " +
                                      std::to_string(buf[kPreambleMagicLen]) + ", expected " +
                                      std::to_string(kProtocolVersion)),
                 -1);
      return false;
    }
    preamble_seen_ = true;
    pos = kPreambleLen;
  }
  const uint32_t max_size = messenger_->max_message_size();
  while (true) {
    Slice rest(buf + pos, in_len_ - pos);
    // A length prefix not yet all here: checked first, so draining the buffer builds
    // no Incomplete Status (an allocation) each time.
    if (rest.size() < size_t(kFrameLengthBytes)) break;
    size_t frame_len;
    Status s = PeekFrameLength(rest, max_size, &frame_len);
    if (!s.ok()) {
      if (direction_ == Direction::kServer) {
        FatalError(ErrorStatusPB::FATAL_INVALID_HEADER, s, -1);
      } else {
        Shutdown(s.CloneAndPrepend("response from " + remote_.ToString()));
      }
      return false;
    }
    // An incomplete frame waits for more bytes. A big one moves to a buffer of its
    // own; otherwise the buffer grows by doubling as they arrive (HandleRead).
    if (rest.size() < frame_len) {
      if (frame_len >= kBigFrameBytes) {
        big_frame_ = std::make_unique_for_overwrite<char[]>(frame_len);
        memcpy(big_frame_.get(), rest.data(), rest.size());
        big_frame_len_ = frame_len;
        big_frame_have_ = rest.size();
        pos = in_len_;
      }
      break;
    }
    Slice payload(rest.data() + kFrameLengthBytes, frame_len - kFrameLengthBytes);
    const bool ok = direction_ == Direction::kServer ? HandleRequestFrame(payload)
                                                     : HandleResponseFrame(payload);
    if (!ok || closed()) return false;
    pos += frame_len;
  }
  if (pos > 0) {
    memmove(in_buf_.data(), buf + pos, in_len_ - pos);
    in_len_ -= pos;
  }
  if (in_len_ == 0 && in_buf_.size() > 4 * kInitialReadBuffer) {
    in_buf_.resize(kInitialReadBuffer);
    in_buf_.shrink_to_fit();
  }
  return true;
}

bool Connection::HandleRequestFrame(Slice payload, std::unique_ptr<char[]> buffer) {
  FrameParts parts;
  Status s = SplitFrame(payload, &parts);
  if (!s.ok()) {
    FatalError(ErrorStatusPB::FATAL_DESERIALIZING_REQUEST, s, -1);
    return false;
  }
  // One header per reactor thread, reused: parsing into it again reuses its strings'
  // buffers, so a call costs no allocation for them. RpcContext copies what it keeps.
  thread_local RequestHeaderPB header;
  if (!header.ParsePartialFromArray(parts.header.data(), int(parts.header.size()))) {
    FatalError(ErrorStatusPB::FATAL_DESERIALIZING_REQUEST,
               Status::Corruption("unparseable request header"), -1);
    return false;
  }
  if (!header.IsInitialized()) {
    FatalError(ErrorStatusPB::FATAL_INVALID_HEADER,
               Status::InvalidArgument("request header lacks required fields",
                                       header.InitializationErrorString()),
               header.has_call_id() ? header.call_id() : -1);
    return false;
  }
  messenger_->DispatchInboundCall(shared_from_this(), header, std::move(buffer), payload,
                                  read_time_);
  return true;
}

bool Connection::HandleResponseFrame(Slice payload) {
  FrameParts parts;
  ResponseHeaderPB header;
  Status s = SplitFrame(payload, &parts);
  if (s.ok() && !header.ParseFromArray(parts.header.data(), int(parts.header.size()))) {
    s = Status::Corruption("unparseable response header");
  }
  if (!s.ok()) {
    Shutdown(s.CloneAndPrepend("response from " + remote_.ToString()));
    return false;
  }
  std::unique_ptr<OutboundCall> call;
  {
    MutexLock l(calls_mu_);
    call = pending_calls_.Take(header.call_id());
  }
  if (!call) {
    if (header.call_id() < 0 && header.is_error()) {
      // A fatal connection-level error from the server.
      ErrorStatusPB err;
      Status reason = err.ParseFromArray(parts.body.data(), int(parts.body.size()))
                          ? ErrorToStatus(err)
                          : Status::Corruption("unparseable fatal error from server");
      Shutdown(reason);
      return false;
    }
    VLOG(1) << "response for call " << header.call_id() << " from " << remote_.ToString()
            << " arrived after the call completed (timed out?)";
    return true;
  }
  call->CompleteWithResponse(header, parts.body, parts.sidecar_area);
  return true;
}

void Connection::FatalError(ErrorStatusPB::RpcErrorCodePB code, const Status& s, int32_t call_id) {
  LOG(WARNING) << "closing connection from " << remote_.ToString() << ": "
               << ErrorStatusPB::RpcErrorCodePB_Name(code) << ": " << s.ToString();
  ResponseHeaderPB header;
  header.set_call_id(call_id);
  header.set_is_error(true);
  ErrorStatusPB err;
  err.set_code(code);
  err.set_message(s.ToString());
  err.set_app_status_code(s.code());
  OutboundFrame frame;
  CHECK_OK(SerializeFrame(header, err, {}, UINT32_MAX, &frame));
  SendFatalAndClose(std::move(frame), s);
}

}  // namespace nyala::rpc
