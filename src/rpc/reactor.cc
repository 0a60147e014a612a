#include "rpc/reactor.h"

#include <event2/event.h>
#include <event2/thread.h>
#include <glog/logging.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "rpc/connection.h"

namespace nyala::rpc {

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
  event* ev;
};

Reactor::Reactor(std::string name) : name_(std::move(name)) {
  InitLibeventThreading();
  base_ = event_base_new();
  CHECK(base_) << "event_base_new failed";
  wakeup_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  PCHECK(wakeup_fd_ >= 0) << "eventfd";
  wakeup_event_ = event_new(base_, wakeup_fd_, EV_READ | EV_PERSIST, &Reactor::OnWakeup, this);
  CHECK_EQ(event_add(wakeup_event_, nullptr), 0);
}

Reactor::~Reactor() {
  Shutdown();
  for (DelayedTask* t : delayed_) {
    event_free(t->ev);
    delete t;
  }
  event_free(wakeup_event_);
  close(wakeup_fd_);
  event_base_free(base_);
}

void Reactor::Start() {
  CHECK(!started_);
  started_ = true;
  thread_ = std::thread([this] { RunLoop(); });
}

void Reactor::RunLoop() {
  thread_id_.store(std::this_thread::get_id());
  pthread_setname_np(pthread_self(), name_.substr(0, 15).c_str());
  event_base_loop(base_, EVLOOP_NO_EXIT_ON_EMPTY);
  // Run whatever was posted before the loop stopped (e.g. connection teardown).
  DrainTasks();
  thread_id_.store(std::thread::id());
}

void Reactor::Shutdown() {
  if (closing_.exchange(true)) {
    if (thread_.joinable()) thread_.join();
    return;
  }
  if (!started_) return;
  Post([this] { event_base_loopbreak(base_); });
  thread_.join();
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
  event_free(t->ev);
  auto fn = std::move(t->fn);
  delete t;
  FlushScope scope;
  fn();
}

void Reactor::RunAfter(MonoDelta delay, std::function<void()> task) {
  auto arm = [this, delay, task = std::move(task)]() mutable {
    auto* t = new DelayedTask{this, std::move(task), nullptr};
    t->ev = evtimer_new(base_, &Reactor::OnDelayedTask, t);
    delayed_.insert(t);
    timeval tv = delay.ToTimeVal();
    evtimer_add(t->ev, &tv);
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
