#include "client/timer_queue.h"

#include <chrono>

namespace nyala::client::internal {

TimerQueue::TimerQueue() : thread_([this] { Run(); }) {}

TimerQueue::~TimerQueue() { Shutdown(); }

void TimerQueue::Schedule(MonoDelta delay, std::function<void()> task) {
  MonoTime due = MonoTime::Now() + delay;
  {
    MutexLock l(mu_);
    if (stop_) return;
    tasks_.emplace(std::make_pair(due, next_seq_++), std::move(task));
  }
  cv_.notify_one();
}

void TimerQueue::Shutdown() {
  std::map<std::pair<MonoTime, uint64_t>, std::function<void()>> dropped;
  {
    MutexLock l(mu_);
    stop_ = true;
    dropped.swap(tasks_);
  }
  cv_.notify_all();
  if (!thread_.joinable()) return;
  if (thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();  // called from a task: the loop sees stop_ and returns
  } else {
    thread_.join();
  }
  // `dropped` is destroyed here, outside the lock: its captures may own anything.
}

size_t TimerQueue::NumPendingForTests() const {
  MutexLock l(mu_);
  return tasks_.size();
}

void TimerQueue::Run() {
  UniqueLock l(mu_);
  while (!stop_) {
    if (tasks_.empty()) {
      cv_.wait(l);
      continue;
    }
    auto it = tasks_.begin();
    MonoTime now = MonoTime::Now();
    if (it->first.first > now) {
      cv_.wait_for(l, std::chrono::nanoseconds((it->first.first - now).ToNanoseconds()));
      continue;
    }
    std::function<void()> task = std::move(it->second);
    tasks_.erase(it);
    l.Unlock();
    task();
    task = nullptr;  // release captures before taking the lock again
    l.Lock();
  }
}

}  // namespace nyala::client::internal
