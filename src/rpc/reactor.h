// Reactor: one thread running one libevent event_base. Every socket of a connection
// is watched by exactly one reactor and all of its I/O happens on that thread.
//
// Inline tasks. RunInline() lets a loop callback hand work to its own thread, to run
// once the callback returns, outside the event loop: a service call that would
// otherwise wake a sleeping service thread runs with no thread hop. While it runs,
// no thread runs the loop. If it is still running after --rpc_inline_call_handoff_us,
// a standby thread (started with the first inline task) takes the event loop over and
// becomes the reactor thread; the thread that ran the task becomes the standby when
// the task returns. So a task that blocks delays the reactor's other connections by
// at most about twice that time, once. The thread running the loop carries the
// reactor's name; the standby is "<name>-sb". While inline tasks keep coming, the standby
// wakes once per that period to check; after a period with none it sleeps until the
// next.
//
// Thread-safety: Post() and RunAfter() may be called from any thread; every other
// method only on the reactor's own thread (checked with DCHECK(IsCurrentThread())).
// "The reactor's own thread" is whichever thread runs the loop at the time.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "nyala/monotime.h"
#include "rpc/libevent_util.h"
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

  // Reactor thread, inside a loop callback: runs fn(arg) on this thread once the
  // callback returns, outside the event loop (see the class comment). False, with
  // nothing taken, if an inline task is already waiting or the reactor is closing.
  bool RunInline(void (*fn)(void*), void* arg);
  // Reactor thread: whether RunInline() would take a task now.
  bool CanRunInline() const {
    return inline_fn_ == nullptr && !closing() &&
           (!standby_started_.load(std::memory_order_relaxed) ||
            standby_free_.load(std::memory_order_acquire));
  }
  // Inbound calls read by this reactor and not yet answered (any thread; RpcContext
  // counts itself in and out).
  void CountInboundCall(int delta) { inbound_calls_.fetch_add(delta, std::memory_order_relaxed); }
  int inbound_calls() const { return inbound_calls_.load(std::memory_order_relaxed); }
  // Times the standby took the loop over from a long inline task (any thread).
  int64_t inline_handoffs() const { return inline_handoffs_.load(std::memory_order_relaxed); }

  bool IsCurrentThread() const { return std::this_thread::get_id() == thread_id_.load(); }
  event_base* base() const { return base_.get(); }
  const std::string& name() const { return name_; }
  bool closing() const { return closing_.load(std::memory_order_acquire); }

  // Connection bookkeeping (reactor thread, except FindClientConnection: any thread).
  // Server connections are kept until they close; client connections are found again
  // by remote address.
  void AddServerConnection(std::shared_ptr<Connection> conn);
  std::shared_ptr<Connection> FindClientConnection(const Sockaddr& remote) EXCLUDES(client_mu_);
  // The same on the reactor's own thread, without the lock or a reference count: only
  // this thread changes the map, and a removed connection lives until the callback
  // running now returns (RemoveConnection).
  Connection* FindClientConnectionOnLoop(const Sockaddr& remote) NO_THREAD_SAFETY_ANALYSIS;
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
  // Body of both threads: runs the loop while this thread owns it, inline tasks in
  // between, and waits as the standby otherwise. Returns at shutdown.
  void ThreadMain(bool owner);
  // Standby: waits for a timer tick or shutdown; true once it has taken the loop over
  // from a long inline task, false at shutdown.
  bool WaitToTakeOver();
  // Arms the standby's periodic timer unless it is armed.
  void ArmStandbyTimer();
  // Joins the reactor's thread and the standby, whichever has been started.
  void JoinThreads();
  // Starts the standby thread unless it runs; false if the reactor is closing.
  bool StartStandby();
  void DrainTasks();

  const std::string name_;
  EventBasePtr base_;
  EventPtr wakeup_event_;
  int wakeup_fd_ = -1;  // eventfd
  std::thread thread_;
  std::atomic<std::thread::id> thread_id_;

  // Inline tasks (see the class comment). inline_fn_/inline_arg_: the loop owner only.
  void (*inline_fn_)(void*) = nullptr;
  void* inline_arg_ = nullptr;
  // (episode << 1) | running: each inline task is a new episode. The task's thread
  // gives the inline bit back with a compare-and-swap; the standby takes the loop
  // over with one that moves to a new episode, so exactly one of them wins.
  std::atomic<uint64_t> loop_state_{0};
  std::atomic<int64_t> inline_start_us_{0};  // MonoTime of the running task's start
  std::atomic<bool> timer_armed_{false};
  std::atomic<bool> standby_started_{false};
  // A thread stands by to take the loop over. False while the standby owns the loop and
  // the thread it took over from still runs its task: no inline task runs then.
  std::atomic<bool> standby_free_{false};
  std::atomic<int64_t> inline_handoffs_{0};
  std::atomic<int> inbound_calls_{0};
  Mutex standby_mu_;
  std::thread standby_ GUARDED_BY(standby_mu_);
  int timer_fd_ = -1;  // the standby's periodic tick (timerfd), made with the standby
  int stop_fd_ = -1;   // eventfd: written at shutdown to release the standby
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
