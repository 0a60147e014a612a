#include "client/timer_queue.h"

#include <chrono>

namespace nyala::client::internal {

TimerQueue::TimerQueue()
    : state_(std::make_shared<State>()), thread_([s = state_] { Run(s); }) {}

TimerQueue::~TimerQueue() { Shutdown(); }

void TimerQueue::Schedule(MonoDelta delay, std::function<void()> task) {
  MonoTime due = MonoTime::Now() + delay;
  {
    MutexLock l(state_->mu);
    if (state_->stop) return;
    state_->tasks.emplace(std::make_pair(due, state_->next_seq++), std::move(task));
  }
  state_->cv.notify_one();
}

void TimerQueue::Shutdown() {
  std::map<std::pair<MonoTime, uint64_t>, std::function<void()>> dropped;
  {
    MutexLock l(state_->mu);
    state_->stop = true;
    dropped.swap(state_->tasks);
  }
  state_->cv.notify_all();
  if (!thread_.joinable()) return;
  if (thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();  // called from a task: the loop sees `stop` and returns
  } else {
    thread_.join();
  }
  // `dropped` is destroyed here, outside the lock: its captures may own anything.
}

size_t TimerQueue::NumPendingForTests() const {
  MutexLock l(state_->mu);
  return state_->tasks.size();
}

void TimerQueue::Run(const std::shared_ptr<State>& state) {
  State& s = *state;
  UniqueLock l(s.mu);
  while (!s.stop) {
    if (s.tasks.empty()) {
      s.cv.wait(l);
      continue;
    }
    auto it = s.tasks.begin();
    MonoTime now = MonoTime::Now();
    if (it->first.first > now) {
      s.cv.wait_for(l, std::chrono::nanoseconds((it->first.first - now).ToNanoseconds()));
      continue;
    }
    std::function<void()> task = std::move(it->second);
    s.tasks.erase(it);
    l.Unlock();
    task();  // may destroy the TimerQueue; `state` stays alive
    task = nullptr;  // release captures before taking the lock again
    l.Lock();
  }
}

}  // namespace nyala::client::internal
