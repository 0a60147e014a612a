// TimerQueue: one thread that runs short tasks at a given time. The client uses it
// for retry backoff, the session's flush interval and scanner keep-alives, so that
// reactor threads never sleep.
//
// Thread-safety: Schedule() from any thread (also from a task). Tasks run one at a
// time on the queue's thread and must not block for long (they may send async RPCs).
// Shutdown() drops tasks not yet run; it may be called from a task (the thread then
// exits after that task instead of being joined). A task may also destroy the queue
// itself (its captures may hold the last reference to the client that owns it): the
// thread's state is shared with the thread, which ends once the task returns.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <thread>

#include "common/mutex.h"
#include "nyala/monotime.h"

namespace nyala::client::internal {

class TimerQueue {
 public:
  TimerQueue();
  ~TimerQueue();  // Shutdown()
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  // Runs `task` after `delay` (at once for a delay <= 0). Dropped after Shutdown().
  void Schedule(MonoDelta delay, std::function<void()> task);
  void Shutdown();

  size_t NumPendingForTests() const;

 private:
  // Owned jointly by the queue and its thread, so that the thread can finish the
  // task that destroyed the queue.
  struct State {
    mutable Mutex mu;
    CondVar cv;
    // Keyed by (due time, sequence) so equal times keep their order.
    std::map<std::pair<MonoTime, uint64_t>, std::function<void()>> tasks GUARDED_BY(mu);
    uint64_t next_seq GUARDED_BY(mu) = 0;
    bool stop GUARDED_BY(mu) = false;
  };
  static void Run(const std::shared_ptr<State>& state);

  const std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace nyala::client::internal
