#include "common/task_thread.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "common/mutex.h"
#include "common/test_util.h"

namespace nyala {
namespace {

TEST(TaskThreadTest, RunsTasksInOrderOnItsOwnThread) {
  TaskThread t("test-tasks");
  Mutex mu;
  std::vector<int> order;
  std::atomic<int> on_own_thread{0};
  for (int i = 0; i < 100; i++) {
    ASSERT_TRUE(t.Post([&, i] {
      if (t.IsCurrentThread()) on_own_thread++;
      MutexLock l(mu);
      order.push_back(i);
    }));
  }
  EXPECT_FALSE(t.IsCurrentThread());
  t.Shutdown();  // runs what was posted first
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; i++) EXPECT_EQ(order[i], i);
  EXPECT_EQ(on_own_thread.load(), 100);
}

TEST(TaskThreadTest, ATaskMayPostAnotherAndPostFailsAfterShutdown) {
  TaskThread t("test-tasks");
  std::atomic<bool> second{false};
  ASSERT_TRUE(t.Post([&] { EXPECT_TRUE(t.Post([&] { second = true; })); }));
  AssertEventually(MonoDelta::FromSeconds(10), [&] { ASSERT_TRUE(second.load()); });
  t.Shutdown();
  bool ran = false;
  EXPECT_FALSE(t.Post([&] { ran = true; }));
  t.Shutdown();  // idempotent
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace nyala
