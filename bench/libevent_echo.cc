// libevent-echo: the floor rpc-bench is compared to. A raw libevent echo server and
// client in one process over loopback, with no RPC layer: no headers, no protobuf, no
// call table, no service threads.
//
// Frames are --frame_bytes long (default 32) including a 4-byte big-endian length
// prefix that counts the bytes after it. --connections connections (default 4) each
// keep --in_flight frames (default 25) outstanding; the client sends a new frame for
// every echo it reads back. Connections are spread round-robin over --server_threads
// and --client_threads threads, each running its own event_base; every socket is
// non-blocking and served with event_new(EV_READ | EV_PERSIST), read() and send(), the
// way src/rpc/connection.cc does it.
//
// Prints, one figure a line (the same labels as rpc-bench, so one awk reads both):
//   Reqs/sec: N
//   User CPU per req: Xus
//   Sys CPU per req: Xus
//   CPU per req: Xus          (user + sys)
//   Ctx Sw. per req: X
// measured by getrusage(RUSAGE_SELF) over the window after a short warm-up: client and
// server together. Requests are echoes the client read back in that window.
#include <event2/event.h>
#include <event2/thread.h>
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"

DEFINE_int32(connections, 4, "Client connections to the echo server.");
DEFINE_int32(in_flight, 25, "Frames each connection keeps outstanding.");
DEFINE_int32(frame_bytes, 32, "Bytes of one frame, its 4-byte length prefix included.");
DEFINE_int32(server_threads, 2, "Server threads, each with its own event_base.");
DEFINE_int32(client_threads, 2, "Client threads, each with its own event_base.");
DEFINE_double(seconds, 5, "Length of the measured run, after a short warm-up.");
DEFINE_int32(server_cpu, -1, "Pin every server thread to this CPU. -1: no pinning.");
DEFINE_int32(client_cpu, -1, "Pin every client thread to this CPU. -1: no pinning.");

namespace nyala::bench {
namespace {

constexpr size_t kLengthBytes = 4;
constexpr size_t kReadChunk = 64 * 1024;

uint32_t DecodeLength(const char* p) {
  const auto* u = reinterpret_cast<const uint8_t*>(p);
  return (uint32_t(u[0]) << 24) | (uint32_t(u[1]) << 16) | (uint32_t(u[2]) << 8) | u[3];
}

std::string MakeFrame() {
  const uint32_t body = uint32_t(FLAGS_frame_bytes) - kLengthBytes;
  std::string f(FLAGS_frame_bytes, 'e');
  f[0] = char(body >> 24);
  f[1] = char(body >> 16);
  f[2] = char(body >> 8);
  f[3] = char(body);
  return f;
}

// One non-blocking socket on one event_base. Only that base's thread touches it once
// the loop runs. On readable it reads what is there, hands each whole frame to
// OnFrame() (which may queue output with Queue()), then writes the queued bytes with
// one send(); what the socket does not take waits for EV_WRITE.
class Conn {
 public:
  Conn(event_base* base, int fd) : fd_(fd) {
    read_event_ = event_new(base, fd, EV_READ | EV_PERSIST, &Conn::OnReadable, this);
    write_event_ = event_new(base, fd, EV_WRITE, &Conn::OnWritable, this);
    CHECK(read_event_ && write_event_);
    in_.resize(kReadChunk);
  }
  virtual ~Conn() {
    event_free(read_event_);
    event_free(write_event_);
    close(fd_);
  }
  void Start() { CHECK_EQ(event_add(read_event_, nullptr), 0); }

 protected:
  virtual void OnFrame(const char* frame, size_t len) = 0;
  void Queue(const char* p, size_t n) { out_.append(p, n); }
  void Flush() {
    while (out_off_ < out_.size()) {
      const ssize_t w = send(fd_, out_.data() + out_off_, out_.size() - out_off_, MSG_NOSIGNAL);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        PLOG(FATAL) << "echo write failed";
      }
      out_off_ += size_t(w);
    }
    if (out_off_ == out_.size()) {
      out_.clear();
      out_off_ = 0;
    } else if (!write_armed_) {
      write_armed_ = true;
      event_add(write_event_, nullptr);
    }
  }

 private:
  static void OnReadable(int, short, void* arg) { static_cast<Conn*>(arg)->HandleRead(); }
  static void OnWritable(int, short, void* arg) {
    auto* c = static_cast<Conn*>(arg);
    c->write_armed_ = false;
    c->Flush();
  }
  void HandleRead() {
    for (;;) {
      if (in_.size() - in_len_ < 4096) in_.resize(in_.size() * 2);
      const size_t space = in_.size() - in_len_;
      const ssize_t n = read(fd_, in_.data() + in_len_, space);
      if (n == 0) {  // the peer closed: stop watching, the owner frees us at exit
        event_del(read_event_);
        return;
      }
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        PLOG(FATAL) << "echo read failed";
      }
      in_len_ += size_t(n);
      size_t pos = 0;
      while (in_len_ - pos >= kLengthBytes) {
        const size_t len = kLengthBytes + DecodeLength(in_.data() + pos);
        if (in_len_ - pos < len) break;
        OnFrame(in_.data() + pos, len);
        pos += len;
      }
      if (pos > 0) {
        memmove(in_.data(), in_.data() + pos, in_len_ - pos);
        in_len_ -= pos;
      }
      if (size_t(n) < space) break;  // drained the socket
    }
    Flush();
  }

  const int fd_;
  event* read_event_;
  event* write_event_;
  std::string in_;
  size_t in_len_ = 0;
  std::string out_;
  size_t out_off_ = 0;
  bool write_armed_ = false;
};

// Server side: writes every frame back as it came.
class EchoConn : public Conn {
 public:
  using Conn::Conn;

 protected:
  void OnFrame(const char* frame, size_t len) override { Queue(frame, len); }
};

// Client side: counts every echo and sends the next frame in its place.
class ClientConn : public Conn {
 public:
  ClientConn(event_base* base, int fd) : Conn(base, fd), frame_(MakeFrame()) {}
  // Echoes read back so far; any thread may read it.
  int64_t done() const { return done_.load(std::memory_order_relaxed); }
  void SendInitialFrames() {
    for (int i = 0; i < FLAGS_in_flight; i++) Queue(frame_.data(), frame_.size());
    Flush();
  }

 protected:
  void OnFrame(const char*, size_t len) override {
    CHECK_EQ(len, frame_.size());
    // Only this connection's loop thread writes the count: no atomic read-modify-write.
    done_.store(done_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    Queue(frame_.data(), frame_.size());
  }

 private:
  const std::string frame_;
  alignas(64) std::atomic<int64_t> done_{0};  // its own cache line: read by the main thread
};

// An event_base and the thread that runs it; the thread exits on Stop().
class Loop {
 public:
  explicit Loop(int cpu) : cpu_(cpu), base_(event_base_new()) { CHECK(base_); }
  ~Loop() {
    conns_.clear();
    event_base_free(base_);
  }
  event_base* base() { return base_; }
  void Adopt(std::unique_ptr<Conn> c) { conns_.push_back(std::move(c)); }
  void Run() {
    thread_ = std::thread([this] {
      PinCurrentThread(cpu_);
      // A persistent read event keeps the loop busy; the flag is only a safety net.
      event_base_loop(base_, EVLOOP_NO_EXIT_ON_EMPTY);
    });
  }
  void Stop() {
    event_base_loopbreak(base_);
    thread_.join();
  }

 private:
  const int cpu_;
  event_base* const base_;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::thread thread_;
};

void SetNonBlockingNoDelay(int fd) {
  int one = 1;
  PCHECK(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == 0);
  PCHECK(evutil_make_socket_nonblocking(fd) == 0);
}

int Run() {
  if (FLAGS_frame_bytes < int(kLengthBytes) || FLAGS_connections < 1 || FLAGS_in_flight < 1 ||
      FLAGS_server_threads < 1 || FLAGS_client_threads < 1) {
    fprintf(stderr, "bad flags: see --help\n");
    return 2;
  }
  PCHECK(evthread_use_pthreads() == 0);
  std::vector<std::unique_ptr<Loop>> servers, clients;
  for (int i = 0; i < FLAGS_server_threads; i++) {
    servers.push_back(std::make_unique<Loop>(FLAGS_server_cpu));
  }
  for (int i = 0; i < FLAGS_client_threads; i++) {
    clients.push_back(std::make_unique<Loop>(FLAGS_client_cpu));
  }

  // Listen on 127.0.0.1 at a port the kernel picks; connect and accept before any loop
  // runs, so the connections are set up with plain blocking calls.
  const int lfd = socket(AF_INET, SOCK_STREAM, 0);
  PCHECK(lfd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  PCHECK(bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  PCHECK(listen(lfd, FLAGS_connections) == 0);
  socklen_t alen = sizeof(addr);
  PCHECK(getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &alen) == 0);

  std::vector<ClientConn*> client_conns;
  for (int i = 0; i < FLAGS_connections; i++) {
    const int cfd = socket(AF_INET, SOCK_STREAM, 0);
    PCHECK(cfd >= 0);
    PCHECK(connect(cfd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    const int sfd = accept(lfd, nullptr, nullptr);
    PCHECK(sfd >= 0);
    SetNonBlockingNoDelay(cfd);
    SetNonBlockingNoDelay(sfd);
    Loop* server = servers[i % servers.size()].get();
    Loop* client = clients[i % clients.size()].get();
    auto s = std::make_unique<EchoConn>(server->base(), sfd);
    s->Start();
    server->Adopt(std::move(s));
    auto c = std::make_unique<ClientConn>(client->base(), cfd);
    c->Start();
    client_conns.push_back(c.get());
    client->Adopt(std::move(c));
  }
  close(lfd);
  for (auto& l : servers) l->Run();
  // The initial frames go out before the client loops run: nothing else touches the
  // connections yet.
  for (ClientConn* c : client_conns) c->SendInitialFrames();
  for (auto& l : clients) l->Run();

  auto completed = [&] {
    int64_t n = 0;
    for (const ClientConn* c : client_conns) n += c->done();
    return n;
  };
  using Clock = std::chrono::steady_clock;
  std::this_thread::sleep_for(std::chrono::duration<double>(std::min(1.0, FLAGS_seconds / 5)));
  const int64_t r0 = completed();
  const Usage u0 = GetUsage();
  const auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(FLAGS_seconds));
  const int64_t r1 = completed();
  const Usage u1 = GetUsage();
  const auto t1 = Clock::now();
  for (auto& l : clients) l->Stop();
  for (auto& l : servers) l->Stop();

  const int64_t reqs = std::max<int64_t>(r1 - r0, 1);
  const double secs = std::chrono::duration<double>(t1 - t0).count();
  const double user = (u1.user_us - u0.user_us) / reqs;
  const double sys = (u1.sys_us - u0.sys_us) / reqs;
  printf(
      "Mode: libevent echo, connections: %d, in flight per connection: %d, frame: %d bytes, "
      "server threads: %d, client threads: %d, server CPU %d, client CPU %d\n",
      FLAGS_connections, FLAGS_in_flight, FLAGS_frame_bytes, FLAGS_server_threads,
      FLAGS_client_threads, FLAGS_server_cpu, FLAGS_client_cpu);
  printf("Reqs/sec: %.0f\n", (r1 - r0) / secs);
  printf("User CPU per req: %.3fus\n", user);
  printf("Sys CPU per req: %.3fus\n", sys);
  printf("CPU per req: %.3fus\n", user + sys);
  printf("Ctx Sw. per req: %.4f\n", double(u1.ctx_switches - u0.ctx_switches) / reqs);
  return 0;
}

}  // namespace
}  // namespace nyala::bench

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "Raw libevent echo over loopback, client and server in one process: the CPU-per-"
      "request floor rpc-bench --mode=async is compared to (bench/rpc-vs-libevent-echo.sh).");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  return nyala::bench::Run();
}
