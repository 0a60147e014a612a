// Reactor: one thread running one libevent event_base. Every socket of a connection
// is watched by exactly one reactor and all of its I/O happens on that thread.
//
// Thread-safety: Post() and RunAfter() may be called from any thread; every other
// method only on the reactor's own thread (checked with DCHECK(IsCurrentThread())).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/monotime.h"
#include "common/mutex.h"
#include "common/status.h"
#include "rpc/sockaddr.h"

struct event_base;
struct event;

namespace nyala::rpc {

class Connection;

// Turns on libevent's locking and cross-thread wakeups. Idempotent; must run before
// any event_base that another thread will touch is created (Reactor does it; so must
// other users of libevent, such as the web server).
void InitLibeventThreading();

class Reactor {
 public:
  explicit Reactor(std::string name);
  ~Reactor();  // REQUIRES: Shutdown() was called (or Start() never was)

  void Start();
  // Runs the pending posted tasks, then stops the loop and joins the thread. Tasks
  // posted afterwards are dropped. Idempotent.
  void Shutdown();

  // Runs `task` on the reactor thread. Any thread. Posts made while the reactor is
  // busy are coalesced: one wakeup runs all of them, in order.
  void Post(std::function<void()> task);

  // Runs `task` on the reactor thread after `delay`. Any thread. Not cancellable;
  // tasks that may outlive their target must check it themselves.
  void RunAfter(MonoDelta delay, std::function<void()> task);

  bool IsCurrentThread() const { return std::this_thread::get_id() == thread_id_.load(); }
  event_base* base() const { return base_; }
  const std::string& name() const { return name_; }
  bool closing() const { return closing_.load(std::memory_order_acquire); }

  // Connection bookkeeping (reactor thread, except FindClientConnection: any thread).
  // Server connections are kept until they close; client connections are found again
  // by remote address.
  void AddServerConnection(std::shared_ptr<Connection> conn);
  std::shared_ptr<Connection> FindClientConnection(const Sockaddr& remote) EXCLUDES(client_mu_);
  void AddClientConnection(std::shared_ptr<Connection> conn);
  // Forgets `conn`; the object is freed after the current callback returns.
  void RemoveConnection(Connection* conn);
  // Shuts every connection down with `reason` (reactor thread).
  void ShutdownConnections(const Status& reason);
  size_t num_connections() const { return num_connections_.load(std::memory_order_relaxed); }
  // Visits the client connections (any thread; holds the lock that guards them).
  void ForEachClientConnection(const std::function<void(const Connection&)>& visit)
      EXCLUDES(client_mu_);

 private:
  static void OnWakeup(int fd, short events, void* arg);
  void RunLoop();
  void DrainTasks();

  const std::string name_;
  event_base* base_ = nullptr;
  event* wakeup_event_ = nullptr;
  int wakeup_fd_ = -1;  // eventfd
  std::thread thread_;
  std::atomic<std::thread::id> thread_id_;
  std::atomic<bool> closing_{false};
  bool started_ = false;

  struct DelayedTask;
  static void OnDelayedTask(int fd, short events, void* arg);
  std::set<DelayedTask*> delayed_;  // reactor thread only; freed at destruction

  // Reactor thread only.
  std::set<std::shared_ptr<Connection>> server_conns_;
  // Written on the reactor thread, read by callers sending from their own thread.
  Mutex client_mu_;
  std::unordered_map<Sockaddr, std::shared_ptr<Connection>, SockaddrHash> client_conns_
      GUARDED_BY(client_mu_);
  std::atomic<size_t> num_connections_{0};

  Mutex tasks_mu_;
  std::vector<std::function<void()>> tasks_ GUARDED_BY(tasks_mu_);
  bool wakeup_pending_ GUARDED_BY(tasks_mu_) = false;
  bool accepting_tasks_ GUARDED_BY(tasks_mu_) = true;
};

}  // namespace nyala::rpc
