// The route choice (dispatch_policy.h): each condition, and each flag, on its own.
#include "rpc/dispatch_policy.h"

#include <gflags/gflags.h>
#include <gtest/gtest.h>

DECLARE_bool(rpc_reactor_methods);
DECLARE_bool(rpc_inline_calls);
DECLARE_bool(rpc_inline_batches);
DECLARE_bool(rpc_sync_calls_on_caller_thread);

namespace nyala::rpc {
namespace {

const MonoTime kFuture = MonoTime::Max();
const MonoTime kPast = MonoTime::Now() - MonoDelta::FromSeconds(1);

RpcMethodInfo MethodWith(ReactorPolicy policy) {
  RpcMethodInfo m;
  m.name = "M";
  m.policy = policy;
  return m;
}

TEST(DispatchPolicyTest, MethodPolicyPicksTheRoute) {
  gflags::FlagSaver saver;
  EXPECT_EQ(ChooseInboundRoute(MethodWith(ReactorPolicy::kServiceThread), kFuture),
            InboundRoute::kServicePool);
  EXPECT_EQ(ChooseInboundRoute(MethodWith(ReactorPolicy::kOnReactor), kFuture),
            InboundRoute::kOnReactor);
  EXPECT_EQ(ChooseInboundRoute(MethodWith(ReactorPolicy::kReactorFastPath), kFuture),
            InboundRoute::kReactorFastPath);
}

TEST(DispatchPolicyTest, ExpiredFastPathCallGoesToThePool) {
  gflags::FlagSaver saver;
  EXPECT_EQ(ChooseInboundRoute(MethodWith(ReactorPolicy::kReactorFastPath), kPast),
            InboundRoute::kServicePool);
  // ServicePool::RunCall answers an expired call TimedOut without running it, on the
  // reactor as on a service thread.
  EXPECT_EQ(ChooseInboundRoute(MethodWith(ReactorPolicy::kOnReactor), kPast),
            InboundRoute::kOnReactor);
}

TEST(DispatchPolicyTest, ReactorMethodsFlagSendsEverythingToThePool) {
  gflags::FlagSaver saver;
  FLAGS_rpc_reactor_methods = false;
  for (ReactorPolicy p : {ReactorPolicy::kServiceThread, ReactorPolicy::kOnReactor,
                          ReactorPolicy::kReactorFastPath}) {
    EXPECT_EQ(ChooseInboundRoute(MethodWith(p), kFuture), InboundRoute::kServicePool);
  }
}

TEST(DispatchPolicyTest, InlineNeedsEveryCondition) {
  gflags::FlagSaver saver;
  const InlineFacts all{.caller_waits = true,
                        .on_reading_reactor = true,
                        .reactor_can_run_inline = true,
                        .server_inbound_calls = 1,
                        .whole_pool_idle = true};
  EXPECT_TRUE(ShouldRunInline(all));
  InlineFacts f = all;
  f.caller_waits = false;
  EXPECT_FALSE(ShouldRunInline(f));
  f = all;
  f.on_reading_reactor = false;
  EXPECT_FALSE(ShouldRunInline(f));
  f = all;
  f.reactor_can_run_inline = false;
  EXPECT_FALSE(ShouldRunInline(f));
  f = all;
  f.server_inbound_calls = 2;
  EXPECT_FALSE(ShouldRunInline(f));
  f = all;
  f.whole_pool_idle = false;
  EXPECT_FALSE(ShouldRunInline(f));
  FLAGS_rpc_inline_calls = false;
  EXPECT_FALSE(ShouldRunInline(all));
}

// Route g: a read's calls run as a batch on the reactor only when there are two or
// more, their method is cheap (or not measured yet), the reactor is free and the flag
// is on.
TEST(DispatchPolicyTest, InlineBatchNeedsCheapCallsAndAFreeReactor) {
  gflags::FlagSaver saver;
  BatchFacts f;
  f.calls = 8;
  f.reactor_can_run_inline = true;
  f.handler_samples = 1000;
  f.handler_mean_us = 1;
  EXPECT_TRUE(ShouldRunBatchInline(f));
  BatchFacts one = f;
  one.calls = 1;
  EXPECT_FALSE(ShouldRunBatchInline(one));
  BatchFacts costly = f;
  costly.handler_mean_us = 12;
  EXPECT_FALSE(ShouldRunBatchInline(costly));
  costly.handler_samples = 3;  // not measured yet: taken as cheap
  EXPECT_TRUE(ShouldRunBatchInline(costly));
  BatchFacts busy = f;
  busy.reactor_can_run_inline = false;
  EXPECT_FALSE(ShouldRunBatchInline(busy));
  FLAGS_rpc_inline_batches = false;
  EXPECT_FALSE(ShouldRunBatchInline(f));
}

TEST(DispatchPolicyTest, CallerThreadConnectionFollowsItsFlag) {
  gflags::FlagSaver saver;
  EXPECT_TRUE(UseCallerThreadConnection());
  FLAGS_rpc_sync_calls_on_caller_thread = false;
  EXPECT_FALSE(UseCallerThreadConnection());
}

}  // namespace
}  // namespace nyala::rpc
