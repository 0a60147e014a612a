// TaskThread: one named thread that runs posted tasks in order, for work that must not
// run on a thread with other duties (a Raft worker, a reactor): reading a log back
// from disk, streaming files. Not a pool: one thread, so tasks need no locks among
// themselves.
//
// Thread-safety: Post and Shutdown may be called from any thread. Tasks run on the
// TaskThread's thread; a task may Post more. Shutdown (and the destructor) runs what
// was posted before it, then joins; Post fails from then on.
#pragma once

#include <deque>
#include <functional>
#include <string>
#include <thread>

#include "common/mutex.h"
#include "common/thread_annotations.h"

namespace nyala {

class TaskThread {
 public:
  // Starts the thread, named `name` (at most 15 characters are kept).
  explicit TaskThread(std::string name);
  ~TaskThread();
  TaskThread(const TaskThread&) = delete;
  TaskThread& operator=(const TaskThread&) = delete;

  // Queues `task`: false, and `task` dropped, once Shutdown began.
  bool Post(std::function<void()> task) EXCLUDES(mu_);
  // Runs what is queued, then stops the thread and joins it. Idempotent; not from a
  // task.
  void Shutdown() EXCLUDES(mu_);
  // Whether the calling thread is this one.
  bool IsCurrentThread() const { return std::this_thread::get_id() == thread_.get_id(); }

 private:
  void Run() EXCLUDES(mu_);

  const std::string name_;
  Mutex mu_;
  CondVar cv_;
  std::deque<std::function<void()>> tasks_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace nyala
