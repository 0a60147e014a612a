// Sync calls on the caller's own connection (caller_connection.h), over real loopback
// sockets against a server messenger running the test CalculatorService.
#include "rpc/caller_connection.h"
#include "common/status.h"

#include <gflags/gflags.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "common/metrics.h"
#include "common/test_util.h"
#include "rpc/messenger.h"
#include "rpc/proxy.h"
#include "rpc/rpc_controller.h"
#include "rpc/rpc_test_util.h"
#include "rpc/rtest.proxy.h"
#include "rpc/rtest_service.h"

DECLARE_bool(rpc_sync_calls_on_caller_thread);

namespace nyala::rpc {
namespace {

using rpc_test::AddRequestPB;
using rpc_test::AddResponsePB;
using rpc_test::CalculatorServiceIf;
using rpc_test::CalculatorServiceProxy;
using rpc_test::SleepRequestPB;
using rpc_test::SleepResponsePB;

class CallerConnectionTest : public RpcTestBase {
 protected:
  static Status Add(const CalculatorServiceProxy& proxy, int x, int y, int64_t* sum) {
    AddRequestPB req;
    req.set_x(x);
    req.set_y(y);
    AddResponsePB resp;
    RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(10));
    RETURN_NOT_OK(proxy.Add(req, &resp, &rpc));
    *sum = resp.result();
    return Status::OK();
  }
};

TEST_F(CallerConnectionTest, EachThreadReusesOneConnectionOfItsOwn) {
  ASSERT_TRUE(FLAGS_rpc_sync_calls_on_caller_thread);
  ASSERT_NO_FATAL_FAILURE(StartServer());
  auto client = NewClient();
  CalculatorServiceProxy proxy(client, addr_);
  auto run = [&](int base) {
    for (int i = 0; i < 50; i++) {
      int64_t sum = -1;
      ASSERT_OK(Add(proxy, base, i, &sum));
      ASSERT_EQ(sum, base + i);
    }
    EXPECT_EQ(NumCallerConnectionsOfThisThread(), 1u);
  };
  run(1000);
  EXPECT_EQ(client->num_connections(), 1u);
  // A second thread gets its own connection; both stay open while their threads live.
  std::atomic<bool> release{false};
  std::atomic<bool> ran{false};
  std::thread other([&] {
    run(2000);
    ran = true;
    while (!release.load()) std::this_thread::yield();
  });
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(10), [&] { ASSERT_TRUE(ran.load()); });
  EXPECT_EQ(client->num_connections(), 2u);
  release = true;
  other.join();
  // Thread exit closed its connection.
  EXPECT_EQ(client->num_connections(), 1u);
  client->Shutdown();
}

TEST_F(CallerConnectionTest, LateAnswerOfATimedOutCallIsSkipped) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  auto client = NewClient();
  CalculatorServiceProxy proxy(client, addr_);
  SleepRequestPB req;
  req.set_sleep_ms(300);
  SleepResponsePB resp;
  RpcController rpc;
  rpc.set_timeout(MonoDelta::FromMilliseconds(50));
  Status s = proxy.Sleep(req, &resp, &rpc);
  EXPECT_TRUE(s.IsTimedOut()) << s.ToString();
  // The next call waits on the same connection long enough for the first answer to
  // arrive ahead of its own (~250 ms in). Taking that answer for its own would end it
  // early.
  SleepRequestPB req2;
  req2.set_sleep_ms(600);
  SleepResponsePB resp2;
  RpcController rpc2;
  const MonoTime start = MonoTime::Now();
  ASSERT_OK(proxy.Sleep(req2, &resp2, &rpc2));
  EXPECT_GE(MonoTime::Now() - start, MonoDelta::FromMilliseconds(590));
  EXPECT_EQ(NumCallerConnectionsOfThisThread(), 1u);
  client->Shutdown();
}

// A timeout computed from a deadline that already passed is negative: the call fails
// at once, on the caller's connection and through a reactor alike, instead of taking
// it for "no timeout" and waiting for an answer that never comes.
TEST_F(CallerConnectionTest, NegativeTimeoutFailsAtOnce) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  auto client = NewClient();
  CalculatorServiceProxy proxy(client, addr_);
  for (bool on_caller : {true, false}) {
    FLAGS_rpc_sync_calls_on_caller_thread = on_caller;
    SleepRequestPB req;
    req.set_sleep_ms(5000);
    SleepResponsePB resp;
    RpcController rpc;
    rpc.set_timeout(MonoDelta::FromMilliseconds(-3));
    const MonoTime start = MonoTime::Now();
    Status s = proxy.Sleep(req, &resp, &rpc);
    EXPECT_TRUE(s.IsTimedOut()) << on_caller << ": " << s.ToString();
    EXPECT_LT(MonoTime::Now() - start, MonoDelta::FromMilliseconds(2500)) << on_caller;
  }
  FLAGS_rpc_sync_calls_on_caller_thread = true;
  client->Shutdown();
}

TEST_F(CallerConnectionTest, MessengerShutdownEndsABlockedCall) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  auto client = NewClient();
  CalculatorServiceProxy proxy(client, addr_);
  Status status;
  std::atomic<bool> done{false};
  std::thread caller([&] {
    SleepRequestPB req;
    req.set_sleep_ms(1500);
    SleepResponsePB resp;
    RpcController rpc;  // no timeout: only the shutdown can end it early
    status = proxy.Sleep(req, &resp, &rpc);
    done = true;
  });
  ASSERT_NO_FATAL_FAILURE(WaitUntilSleeping());
  const MonoTime start = MonoTime::Now();
  client->Shutdown();
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(3), [&] { ASSERT_TRUE(done.load()); });
  EXPECT_LT(MonoTime::Now() - start, MonoDelta::FromMilliseconds(1000));
  caller.join();
  EXPECT_TRUE(status.IsServiceUnavailable()) << status.ToString();
}

TEST_F(CallerConnectionTest, ServerRestartWhileIdleDoesNotFailTheNextCall) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  auto client = NewClient();
  CalculatorServiceProxy proxy(client, addr_);
  int64_t sum = 0;
  ASSERT_OK(Add(proxy, 1, 2, &sum));
  // Restart on the same port; the idle connection is now closed by the peer.
  const Sockaddr addr = addr_;
  server_->Shutdown();
  server_.reset();
  ASSERT_NO_FATAL_FAILURE(StartServer(2, 50, addr));
  // A connection answered within the last millisecond is reused unchecked
  // (caller_connection.cc, kTrustedAfterAnswer). No real server restarts that fast;
  // this in-process one might, so the test lets the window pass: it is about the check.
  SleepFor(MonoDelta::FromMilliseconds(2));
  ASSERT_OK(Add(proxy, 3, 4, &sum));
  EXPECT_EQ(sum, 7);
  client->Shutdown();
}

TEST_F(CallerConnectionTest, ConnectionsOfAShutDownMessengerAreClosed) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  auto first = NewClient();
  int64_t sum = 0;
  ASSERT_OK(Add(CalculatorServiceProxy(first, addr_), 1, 1, &sum));
  EXPECT_EQ(NumCallerConnectionsOfThisThread(), 1u);
  first->Shutdown();
  first.reset();
  auto second = NewClient();
  ASSERT_OK(Add(CalculatorServiceProxy(second, addr_), 2, 2, &sum));
  EXPECT_EQ(sum, 4);
  EXPECT_EQ(NumCallerConnectionsOfThisThread(), 1u);  // the first messenger's was dropped
  second->Shutdown();
}

TEST_F(CallerConnectionTest, ReactorPathStillServesSyncCallsWhenTurnedOff) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  FLAGS_rpc_sync_calls_on_caller_thread = false;
  auto client = NewClient();
  const size_t before = NumCallerConnectionsOfThisThread();
  int64_t sum = 0;
  Status s = Add(CalculatorServiceProxy(client, addr_), 20, 22, &sum);
  FLAGS_rpc_sync_calls_on_caller_thread = true;
  ASSERT_OK(s);
  EXPECT_EQ(sum, 42);
  EXPECT_EQ(NumCallerConnectionsOfThisThread(), before);
  EXPECT_EQ(client->num_connections(), 1u);  // the reactor's
  client->Shutdown();
}

}  // namespace
}  // namespace nyala::rpc
