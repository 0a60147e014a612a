#include "common/task_thread.h"

#include <pthread.h>

#include <utility>

namespace nyala {

TaskThread::TaskThread(std::string name) : name_(std::move(name)) {
  thread_ = std::thread([this] { Run(); });
}

TaskThread::~TaskThread() { Shutdown(); }

bool TaskThread::Post(std::function<void()> task) {
  {
    MutexLock l(mu_);
    if (stopping_) return false;
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
  return true;
}

void TaskThread::Shutdown() {
  {
    MutexLock l(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void TaskThread::Run() {
  pthread_setname_np(pthread_self(), name_.substr(0, 15).c_str());
  for (;;) {
    std::function<void()> task;
    {
      UniqueLock l(mu_);
      cv_.wait(l, [this]() NO_THREAD_SAFETY_ANALYSIS { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, and everything posted before ran
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

}  // namespace nyala
