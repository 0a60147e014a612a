#include "rpc/reactor.h"

#include <event2/event.h>
#include <event2/thread.h>
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "rpc/connection.h"

DEFINE_int32(rpc_inline_call_handoff_us, 1000,
             "A service call run on a reactor thread instead of waking an idle service thread "
             "(--rpc_inline_calls) that is still running after this many microseconds hands "
             "the reactor's event loop to a standby thread, so the reactor's other "
             "connections wait at most about twice this long. While such calls keep coming, "
             "the standby wakes once per this period to check.");

namespace nyala::rpc {

namespace {
constexpr uint64_t kInlineBit = 1;
}  // namespace

void InitLibeventThreading() {
  static const bool done = [] {
    CHECK_EQ(evthread_use_pthreads(), 0) << "libevent built without pthread support";
    return true;
  }();
  (void)done;
}

struct Reactor::DelayedTask {
  Reactor* reactor;
  std::function<void()> fn;
  EventPtr ev;
};

Reactor::Reactor(std::string name) : name_(std::move(name)) {
  InitLibeventThreading();
  base_.reset(event_base_new());
  CHECK(base_) << "event_base_new failed";
  wakeup_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  PCHECK(wakeup_fd_ >= 0) << "eventfd";
  wakeup_event_.reset(
      event_new(base_.get(), wakeup_fd_, EV_READ | EV_PERSIST, &Reactor::OnWakeup, this));
  CHECK_EQ(event_add(wakeup_event_.get(), nullptr), 0);
}

Reactor::~Reactor() {
  Shutdown();
  for (DelayedTask* t : delayed_) delete t;  // its event first: before the base
  wakeup_event_.reset();
  close(wakeup_fd_);
  if (timer_fd_ >= 0) close(timer_fd_);
  if (stop_fd_ >= 0) close(stop_fd_);
  base_.reset();
}

void Reactor::Start() {
  CHECK(!started_);
  started_ = true;
  thread_ = std::thread([this] { ThreadMain(/*owner=*/true); });
}

void Reactor::ThreadMain(bool owner) {
  // The thread running the loop carries the reactor's name, the standby name-sb.
  auto set_name = [this](bool loop_owner) {
    const std::string name = loop_owner ? name_.substr(0, 15) : name_.substr(0, 12) + "-sb";
    pthread_setname_np(pthread_self(), name.c_str());
  };
  set_name(owner);
  while (true) {
    if (!owner) {
      if (!WaitToTakeOver()) return;  // shutdown while standing by
      set_name(true);
    }
    owner = true;
    thread_id_.store(std::this_thread::get_id());
    event_base_loop(base_.get(), EVLOOP_NO_EXIT_ON_EMPTY);
    if (inline_fn_ != nullptr) {
      // The loop was broken to run an inline task. Nobody runs the loop meanwhile; the
      // standby takes it over if the task runs long.
      void (*fn)(void*) = inline_fn_;
      void* arg = inline_arg_;
      inline_fn_ = nullptr;
      thread_id_.store(std::thread::id());
      inline_start_us_.store(GetMonoTimeMicros(), std::memory_order_relaxed);
      const uint64_t running = ((loop_state_.load() >> 1) + 1) << 1 | kInlineBit;
      loop_state_.store(running);  // seq_cst: ordered before the timer_armed_ load below
      if (!timer_armed_.load()) ArmStandbyTimer();
      {
        FlushScope scope;  // the answer leaves after the task returned its worker place
        fn(arg);
      }
      uint64_t expected = running;
      if (loop_state_.compare_exchange_strong(expected, running & ~kInlineBit)) {
        if (!closing()) continue;  // still the owner: back into the loop
      } else {
        owner = false;  // the standby has the loop now; this thread stands by
        set_name(false);
        standby_free_.store(true, std::memory_order_release);
        continue;
      }
    }
    // The loop stopped for shutdown. Run whatever was posted before it stopped (e.g.
    // connection teardown), then release the standby. This thread owns the loop here,
    // also when it gets here from an inline task (which cleared thread_id_).
    thread_id_.store(std::this_thread::get_id());
    DrainTasks();
    thread_id_.store(std::thread::id());
    if (stop_fd_ >= 0) {
      uint64_t one = 1;
      ssize_t n = write(stop_fd_, &one, sizeof(one));
      (void)n;
    }
    return;
  }
}

bool Reactor::RunInline(void (*fn)(void*), void* arg) {
  DCHECK(IsCurrentThread());
  if (!CanRunInline() || !StartStandby()) return false;
  inline_fn_ = fn;
  inline_arg_ = arg;
  event_base_loopbreak(base_.get());  // ThreadMain runs the task when the callback returns
  return true;
}

bool Reactor::StartStandby() {
  if (standby_started_.load(std::memory_order_relaxed)) return true;
  MutexLock l(standby_mu_);
  if (standby_.joinable()) return true;
  if (closing()) return false;
  timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  PCHECK(timer_fd_ >= 0) << "timerfd_create";
  stop_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  PCHECK(stop_fd_ >= 0) << "eventfd";
  standby_free_.store(true, std::memory_order_release);
  standby_started_.store(true, std::memory_order_relaxed);
  standby_ = std::thread([this] { ThreadMain(/*owner=*/false); });
  return true;
}

void Reactor::ArmStandbyTimer() {
  if (timer_armed_.exchange(true)) return;
  const int64_t us = std::max(FLAGS_rpc_inline_call_handoff_us, 1);
  itimerspec spec{};
  spec.it_interval.tv_sec = us / 1000000;
  spec.it_interval.tv_nsec = (us % 1000000) * 1000;
  spec.it_value = spec.it_interval;
  PCHECK(timerfd_settime(timer_fd_, 0, &spec, nullptr) == 0) << "timerfd_settime";
}

bool Reactor::WaitToTakeOver() {
  uint64_t last_episode = loop_state_.load() >> 1;
  while (true) {
    pollfd fds[2] = {{timer_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      PCHECK(errno == EINTR) << "poll";
      continue;
    }
    if (closing() || fds[1].revents != 0) return false;
    uint64_t ticks;
    if (read(timer_fd_, &ticks, sizeof(ticks)) < 0) continue;  // spurious
    const uint64_t state = loop_state_.load();
    if (state & kInlineBit) {
      const int64_t ran_us =
          GetMonoTimeMicros() - inline_start_us_.load(std::memory_order_relaxed);
      uint64_t expected = state;
      if (ran_us >= FLAGS_rpc_inline_call_handoff_us &&
          loop_state_.compare_exchange_strong(expected, ((state >> 1) + 1) << 1)) {
        standby_free_.store(false, std::memory_order_relaxed);
        inline_handoffs_.fetch_add(1, std::memory_order_relaxed);
        VLOG(1) << name_ << ": an inline call has run " << ran_us
                << " us; the standby thread takes the event loop over";
        return true;
      }
    } else if ((state >> 1) == last_episode) {
      // A whole period without an inline task: stop ticking until the next one. Disarm
      // first, then clear the flag, then look again: an owner that went inline after
      // seeing the flag still set is seen here and the timer re-armed.
      itimerspec off{};
      PCHECK(timerfd_settime(timer_fd_, 0, &off, nullptr) == 0) << "timerfd_settime";
      timer_armed_.store(false);
      if (loop_state_.load() & kInlineBit) ArmStandbyTimer();
    }
    last_episode = state >> 1;
  }
}

void Reactor::JoinThreads() {
  if (thread_.joinable()) thread_.join();
  MutexLock l(standby_mu_);
  if (standby_.joinable()) standby_.join();
}

void Reactor::Shutdown() {
  if (closing_.exchange(true)) {
    JoinThreads();
    return;
  }
  if (!started_) return;
  Post([this] { event_base_loopbreak(base_.get()); });
  JoinThreads();
  MutexLock l(tasks_mu_);
  accepting_tasks_ = false;
  tasks_.clear();
}

void Reactor::Post(std::function<void()> task) {
  bool wake;
  {
    MutexLock l(tasks_mu_);
    if (!accepting_tasks_) return;
    tasks_.push_back(std::move(task));
    wake = !wakeup_pending_;
    wakeup_pending_ = true;
  }
  if (wake) {
    uint64_t one = 1;
    ssize_t n = write(wakeup_fd_, &one, sizeof(one));
    (void)n;  // EAGAIN means the counter is already non-zero: the wakeup is pending
  }
}

void Reactor::OnWakeup(int fd, short, void* arg) {
  auto* self = static_cast<Reactor*>(arg);
  uint64_t v;
  ssize_t n = read(fd, &v, sizeof(v));
  (void)n;
  self->DrainTasks();
}

void Reactor::DrainTasks() {
  std::vector<std::function<void()>> tasks;
  while (true) {
    {
      MutexLock l(tasks_mu_);
      wakeup_pending_ = false;
      if (tasks_.empty()) return;
      tasks.swap(tasks_);
    }
    FlushScope scope;  // writes queued by the tasks leave in one writev per connection
    for (auto& t : tasks) t();
    tasks.clear();
  }
}

void Reactor::OnDelayedTask(int, short, void* arg) {
  auto* t = static_cast<DelayedTask*>(arg);
  t->reactor->delayed_.erase(t);
  auto fn = std::move(t->fn);
  delete t;  // and its event
  FlushScope scope;
  fn();
}

void Reactor::RunAfter(MonoDelta delay, std::function<void()> task) {
  auto arm = [this, delay, task = std::move(task)]() mutable {
    auto* t = new DelayedTask{this, std::move(task), nullptr};
    t->ev.reset(evtimer_new(base_.get(), &Reactor::OnDelayedTask, t));
    delayed_.insert(t);
    timeval tv = delay.ToTimeVal();
    evtimer_add(t->ev.get(), &tv);
  };
  if (IsCurrentThread()) {
    arm();
  } else {
    Post(std::move(arm));
  }
}

void Reactor::AddServerConnection(std::shared_ptr<Connection> conn) {
  DCHECK(IsCurrentThread());
  server_conns_.insert(std::move(conn));
  num_connections_.fetch_add(1, std::memory_order_relaxed);
}

void Reactor::ForEachClientConnection(const std::function<void(const Connection&)>& visit) {
  MutexLock l(client_mu_);
  for (const auto& [addr, conn] : client_conns_) visit(*conn);
}

std::shared_ptr<Connection> Reactor::FindClientConnection(const Sockaddr& remote) {
  MutexLock l(client_mu_);
  auto it = client_conns_.find(remote);
  return it == client_conns_.end() ? nullptr : it->second;
}

Connection* Reactor::FindClientConnectionOnLoop(const Sockaddr& remote) {
  DCHECK(IsCurrentThread());
  auto it = client_conns_.find(remote);
  return it == client_conns_.end() ? nullptr : it->second.get();
}

void Reactor::AddClientConnection(std::shared_ptr<Connection> conn) {
  DCHECK(IsCurrentThread());
  Sockaddr remote = conn->remote();
  MutexLock l(client_mu_);
  client_conns_[remote] = std::move(conn);
  num_connections_.fetch_add(1, std::memory_order_relaxed);
}

void Reactor::RemoveConnection(Connection* conn) {
  DCHECK(IsCurrentThread());
  std::shared_ptr<Connection> keep;  // released on the next loop turn, not inside a callback
  if (conn->direction() == Connection::Direction::kServer) {
    for (auto it = server_conns_.begin(); it != server_conns_.end(); ++it) {
      if (it->get() == conn) {
        keep = *it;
        server_conns_.erase(it);
        break;
      }
    }
  } else {
    MutexLock l(client_mu_);
    auto it = client_conns_.find(conn->remote());
    if (it != client_conns_.end() && it->second.get() == conn) {
      keep = std::move(it->second);
      client_conns_.erase(it);
    }
  }
  if (keep) {
    num_connections_.fetch_sub(1, std::memory_order_relaxed);
    Post([keep = std::move(keep)] {});
  }
}

void Reactor::ShutdownConnections(const Status& reason) {
  DCHECK(IsCurrentThread());
  std::vector<std::shared_ptr<Connection>> all(server_conns_.begin(), server_conns_.end());
  {
    MutexLock l(client_mu_);
    for (auto& [addr, c] : client_conns_) all.push_back(c);
  }
  for (auto& c : all) c->Shutdown(reason);
  server_conns_.clear();
  MutexLock l(client_mu_);
  client_conns_.clear();
  num_connections_.store(0);
}

}  // namespace nyala::rpc
