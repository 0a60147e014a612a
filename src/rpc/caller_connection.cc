#include "rpc/caller_connection.h"
#include "common/status.h"

#include <errno.h>
#include <fcntl.h>
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "rpc/messenger.h"
#include "rpc/outbound_call.h"
#include "rpc/rpc_controller.h"
#include "rpc/rpc_header.pb.h"
#include "rpc/serialization.h"

namespace nyala::rpc {

namespace {

constexpr size_t kInitialReadBuffer = 16 * 1024;
// A caller waiting for its answer blocks in recv() (one system call, where poll() and
// then read() would be two) for at most this long at a time, then checks whether the
// messenger is shutting down and whether the call's deadline passed.
constexpr int64_t kWaitSliceUs = 20 * 1000;
constexpr size_t kMaxCachedConnections = 64;  // per thread
// A connection that brought an answer this recently is reused without the check that
// the server has not closed it (StillOpen, a system call on every call of a busy
// caller). Closing it in between means the server process is going away; no new one
// is listening a millisecond later, so the check could not save the call anyway.
constexpr MonoDelta kTrustedAfterAnswer = MonoDelta::FromMilliseconds(1);

std::string ErrnoString(int err) {
  char buf[128];
  return strerror_r(err, buf, sizeof(buf));
}

// Milliseconds to wait in poll() until `deadline`: -1 for none, rounded up so a
// wait never ends before the deadline.
int PollTimeoutMs(MonoTime deadline) {
  if (deadline == MonoTime::Max()) return -1;
  const int64_t us = (deadline - MonoTime::Now()).ToMicroseconds();
  if (us <= 0) return 0;
  return int(std::min<int64_t>((us + 999) / 1000, INT32_MAX));
}

Status ShutdownStatus() { return Status::ServiceUnavailable("client messenger is shutting down"); }

// Waits until `fd` has `events` (OK; an error or hang-up counts too: the I/O that
// follows tells which), the messenger shuts down (ServiceUnavailable) or `deadline`
// passes (TimedOut: "<what> timed out").
Status WaitFor(int fd, short events, int shutdown_fd, MonoTime deadline, const char* what) {
  while (true) {
    pollfd fds[2] = {{fd, events, 0}, {shutdown_fd, POLLIN, 0}};
    int n = poll(fds, 2, PollTimeoutMs(deadline));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::NetworkError("poll", ErrnoString(errno), errno);
    }
    if (fds[1].revents != 0) return ShutdownStatus();
    if (fds[0].revents != 0) return Status::OK();
    if (MonoTime::Now() >= deadline) return Status::TimedOut(std::string(what) + " timed out");
  }
}

class CallerConnection {
 public:
  // `messenger` is only used during Call(), while the caller holds a reference to it;
  // the connection may outlive it.
  CallerConnection(Messenger* messenger, Sockaddr remote, int fd)
      : messenger_(messenger),
        remote_(std::move(remote)),
        fd_(fd),
        count_(messenger->caller_connection_count()) {
    count_->fetch_add(1, std::memory_order_relaxed);
  }
  ~CallerConnection() {
    close(fd_);
    count_->fetch_sub(1, std::memory_order_relaxed);
  }
  CallerConnection(const CallerConnection&) = delete;
  CallerConnection& operator=(const CallerConnection&) = delete;

  // Opens a non-blocking connection to `remote`, waiting for the connect until
  // `deadline`.
  static Result<std::unique_ptr<CallerConnection>> Open(Messenger* m, const Sockaddr& remote,
                                                        MonoTime deadline) {
    int fd = socket(remote.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return Status::NetworkError("socket", ErrnoString(errno), errno);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    auto conn = std::make_unique<CallerConnection>(m, remote, fd);
    if (connect(fd, remote.addr(), remote.addrlen()) != 0) {
      if (errno != EINPROGRESS) {
        return Status::NetworkError("connect failed", ErrnoString(errno), errno);
      }
      RETURN_NOT_OK(WaitFor(fd, POLLOUT, m->shutdown_fd(), deadline, "connect"));
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) return Status::NetworkError("connect failed", ErrnoString(err), err);
    }
    // Blocking from now on, for ReadBlocking(); every other send and receive passes
    // MSG_DONTWAIT.
    const int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
      return Status::NetworkError("fcntl", ErrnoString(errno), errno);
    }
    return conn;
  }

  // False when the server closed the connection while it sat idle (it restarted, for
  // instance): sending on it would fail the call for nothing. True without a check
  // for a connection that brought an answer within kTrustedAfterAnswer.
  bool StillOpen() const {
    if (MonoTime::Now() - last_answer_ < kTrustedAfterAnswer) return true;
    char c;
    ssize_t n = recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
  }

  // Sends `call` and waits for its answer; completes it. Returns a non-OK status when
  // the connection cannot be used again.
  Status Call(OutboundCall* call) {
    OutboundFrame frame = call->TakeFrame();
    Status s = Write(frame, call->deadline());
    if (!s.ok()) {
      call->CompleteWithError(
          s.CloneAndPrepend(std::string(call->method()) + " RPC to " + remote_.ToString()));
      return s;
    }
    while (true) {
      bool done = false;
      s = ProcessBuffer(call, &done);
      if (!s.ok() || done) return s;
      s = ReadBlocking(call->deadline());
      if (s.IsTimedOut()) {
        // The answer may still come; a later call skips it by its call id.
        call->CompleteWithError(Status::TimedOut(
            std::string(call->method()) + " RPC to " + remote_.ToString() + " timed out after " +
            (MonoTime::Now() - call->start_time()).ToString()));
        return Status::OK();
      }
      if (!s.ok()) {
        call->CompleteWithError(
            s.CloneAndPrepend(std::string(call->method()) + " RPC to " + remote_.ToString()));
        return s;
      }
    }
  }

 private:
  Status Write(const OutboundFrame& frame, MonoTime deadline) {
    std::vector<iovec>& iov = iov_;  // reused: no allocation per call
    iov.clear();
    if (!preamble_sent_) iov.push_back({const_cast<char*>(kPreamble), size_t(kPreambleLen)});
    iov.push_back({const_cast<char*>(frame.head.data()), frame.head.size()});
    for (const auto& sc : frame.sidecars) {
      if (!sc.empty()) iov.push_back({const_cast<char*>(sc.data()), sc.size()});
    }
    preamble_sent_ = true;
    size_t first = 0;
    while (first < iov.size()) {
      msghdr msg{};
      msg.msg_iov = &iov[first];
      msg.msg_iovlen = std::min<size_t>(iov.size() - first, IOV_MAX);
      ssize_t w = sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
          return Status::NetworkError("write to " + remote_.ToString() + " failed",
                                      ErrnoString(errno), errno);
        }
        // On a timeout part of the frame may be out: the connection is unusable.
        RETURN_NOT_OK(
            WaitFor(fd_, POLLOUT, messenger_->shutdown_fd(), deadline, "writing the request"));
        continue;
      }
      messenger_->RecordBytesSent(w);
      size_t left = size_t(w);
      while (first < iov.size() && left >= iov[first].iov_len) left -= iov[first++].iov_len;
      if (left > 0) {
        iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + left;
        iov[first].iov_len -= left;
      }
    }
    return Status::OK();
  }

  // Waits until bytes arrive and reads them. TimedOut once `deadline` passed,
  // ServiceUnavailable when the messenger shuts down (seen within kWaitSliceUs).
  Status ReadBlocking(MonoTime deadline) {
    while (true) {
      if (messenger_->closing()) return ShutdownStatus();
      int64_t wait_us = kWaitSliceUs;
      if (deadline != MonoTime::Max()) {
        const int64_t left_us = (deadline - MonoTime::Now()).ToMicroseconds();
        if (left_us <= 0) return Status::TimedOut("the answer timed out");
        wait_us = std::min(wait_us, left_us);
      }
      RETURN_NOT_OK(SetReceiveTimeout(wait_us));
      if (buf_.size() - len_ < 4096) buf_.resize(std::max(kInitialReadBuffer, buf_.size() * 2));
      ssize_t n = recv(fd_, buf_.data() + len_, buf_.size() - len_, 0);
      if (n > 0) {
        messenger_->RecordBytesReceived(n);
        len_ += size_t(n);
        return Status::OK();
      }
      if (n == 0) return Status::NetworkError("connection closed by " + remote_.ToString());
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return Status::NetworkError("read from " + remote_.ToString() + " failed", ErrnoString(errno),
                                  errno);
    }
  }

  // SO_RCVTIMEO, set only when it changes (almost never: a call's deadline is mostly
  // further away than kWaitSliceUs).
  Status SetReceiveTimeout(int64_t us) {
    if (us == rcvtimeo_us_) return Status::OK();
    timeval tv{};
    tv.tv_sec = us / 1000000;
    tv.tv_usec = us % 1000000;
    if (setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0) {
      return Status::NetworkError("setsockopt(SO_RCVTIMEO)", ErrnoString(errno), errno);
    }
    rcvtimeo_us_ = us;
    return Status::OK();
  }

  // Consumes the complete frames in the buffer. Sets *done when `call`'s answer was
  // among them (the call is completed). Answers to earlier calls that timed out are
  // skipped.
  Status ProcessBuffer(OutboundCall* call, bool* done) {
    const auto* data = reinterpret_cast<const uint8_t*>(buf_.data());
    size_t pos = 0;
    Status result;
    while (!*done && result.ok()) {
      Slice rest(data + pos, len_ - pos);
      // A length prefix not yet all here: checked first, so draining the buffer
      // builds no Incomplete Status (an allocation) each time.
      if (rest.size() < size_t(kFrameLengthBytes)) break;
      size_t frame_len;
      Status s = PeekFrameLength(rest, messenger_->max_message_size(), &frame_len);
      if (s.ok() && rest.size() < frame_len) break;
      FrameParts parts;
      ResponseHeaderPB header;
      if (s.ok()) {
        s = SplitFrame(Slice(rest.data() + kFrameLengthBytes, frame_len - kFrameLengthBytes),
                       &parts);
      }
      if (s.ok() && !header.ParseFromArray(parts.header.data(), int(parts.header.size()))) {
        s = Status::Corruption("unparseable response header");
      }
      if (!s.ok()) {
        result = s.CloneAndPrepend("response from " + remote_.ToString());
        call->CompleteWithError(result);
        *done = true;
        break;
      }
      pos += frame_len;
      if (header.call_id() == call->call_id()) {
        call->CompleteWithResponse(header, parts.body, parts.sidecar_area);
        last_answer_ = MonoTime::Now();
        *done = true;
      } else if (header.call_id() < 0 && header.is_error()) {
        // A fatal connection-level error: the server closes the connection.
        ErrorStatusPB err;
        result = err.ParseFromArray(parts.body.data(), int(parts.body.size()))
                     ? ErrorToStatus(err)
                     : Status::Corruption("unparseable fatal error from server");
        call->CompleteWithError(result);
        *done = true;
      } else {
        VLOG(1) << "skipping the answer to call " << header.call_id() << " from "
                << remote_.ToString() << ", which completed without it (timed out?)";
      }
    }
    if (pos > 0) {
      memmove(buf_.data(), buf_.data() + pos, len_ - pos);
      len_ -= pos;
    }
    if (len_ == 0 && buf_.size() > 4 * kInitialReadBuffer) {
      buf_.resize(kInitialReadBuffer);
      buf_.shrink_to_fit();
    }
    return result;
  }

  Messenger* const messenger_;
  const Sockaddr remote_;
  const int fd_;
  MonoTime last_answer_;  // when the last call on this connection was answered; unset before
  const std::shared_ptr<std::atomic<int64_t>> count_;  // the messenger's, shared
  bool preamble_sent_ = false;
  std::vector<iovec> iov_;
  std::string buf_;
  size_t len_ = 0;
  int64_t rcvtimeo_us_ = 0;  // SO_RCVTIMEO in force; 0: none (blocks without end)
};

// This thread's caller connections, at most one per (messenger, remote). Entries of
// a messenger that shut down or went away are closed at the thread's next sync call,
// or when the thread exits.
class ThreadCache {
 public:
  struct Entry {
    std::weak_ptr<Messenger> messenger;
    Messenger* raw;
    Sockaddr remote;
    std::unique_ptr<CallerConnection> conn;
  };

  // Drops the connections of messengers that are gone or shutting down.
  void Purge() {
    for (auto it = entries_.begin(); it != entries_.end();) {
      std::shared_ptr<Messenger> m = it->messenger.lock();
      if (!m || m->closing()) {
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
  }

  CallerConnection* Find(Messenger* m, const Sockaddr& remote) {
    for (auto& e : entries_) {
      if (e.raw == m && e.remote == remote) return e.conn.get();
    }
    return nullptr;
  }

  void Insert(const std::shared_ptr<Messenger>& m, const Sockaddr& remote,
              std::unique_ptr<CallerConnection> conn) {
    if (entries_.size() >= kMaxCachedConnections) entries_.erase(entries_.begin());
    entries_.push_back({m, m.get(), remote, std::move(conn)});
  }

  void Erase(CallerConnection* conn) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->conn.get() == conn) {
        entries_.erase(it);
        return;
      }
    }
  }

  size_t size() const { return entries_.size(); }

 private:
  std::vector<Entry> entries_;
};

thread_local ThreadCache tls_cache;

}  // namespace

void RunSyncCallOnCallerThread(const std::shared_ptr<Messenger>& messenger,
                               std::unique_ptr<OutboundCall> call) {
  ThreadCache& cache = tls_cache;
  cache.Purge();
  if (messenger->closing()) {
    call->CompleteWithError(ShutdownStatus());
    return;
  }
  // Listed on /rpcz while it waits.
  struct Tracked {
    InFlightList* list;
    OutboundCall* call;
    ~Tracked() { list->Remove(call); }
  } tracked{&messenger->caller_thread_calls(), call.get()};
  tracked.list->Add(call.get());
  CallerConnection* conn = cache.Find(messenger.get(), call->remote());
  if (conn && !conn->StillOpen()) {
    cache.Erase(conn);
    conn = nullptr;
  }
  if (!conn) {
    auto opened = CallerConnection::Open(messenger.get(), call->remote(), call->deadline());
    if (!opened.ok()) {
      call->CompleteWithError(opened.status().CloneAndPrepend(
          std::string(call->method()) + " RPC to " + call->remote().ToString()));
      return;
    }
    conn = opened->get();
    cache.Insert(messenger, call->remote(), std::move(*opened));
  }
  if (!conn->Call(call.get()).ok()) cache.Erase(conn);
}

size_t NumCallerConnectionsOfThisThread() { return tls_cache.size(); }

}  // namespace nyala::rpc
