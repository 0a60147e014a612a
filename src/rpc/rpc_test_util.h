// Test fixture for RPC tests over real loopback sockets: a server messenger running
// the test CalculatorService (rtest_service.h) and client messengers calling it.
#pragma once

#include <glog/logging.h>

#include <memory>

#include "common/metrics.h"
#include "common/test_util.h"
#include "rpc/messenger.h"
#include "rpc/rtest_service.h"
#include "rpc/sockaddr.h"

namespace nyala::rpc {

class RpcTestBase : public NyalaTest {
 protected:
  // Starts the server (`reactors` reactors) with `threads` service threads and a queue
  // of `queue` calls, listening on `addr` (port 0: any); its address goes to addr_.
  void StartServer(int threads = 2, int queue = 50, const Sockaddr& addr = Sockaddr::Loopback(0),
                   int reactors = 2) {
    MessengerOptions opts;
    opts.name = "server";
    opts.num_reactors = reactors;
    opts.metrics = &server_metrics_;
    auto m = Messenger::Create(opts);
    ASSERT_OK(m.status());
    server_ = *m;
    ASSERT_OK(server_->RegisterService(std::make_unique<CalculatorService>(), threads, queue));
    ASSERT_OK(server_->AddListener(addr, &addr_));
  }
  std::shared_ptr<Messenger> NewClient(int reactors = 1) {
    MessengerOptions opts;
    opts.name = "client";
    opts.num_reactors = reactors;
    auto m = Messenger::Create(opts);
    CHECK(m.ok()) << m.status().ToString();
    return *m;
  }
  // Waits until `n` Sleep handlers of CalculatorService are running.
  static void WaitUntilSleeping(int n = 1) {
    ASSERT_EVENTUALLY(MonoDelta::FromSeconds(5),
                      [&] { ASSERT_EQ(CalculatorService::sleeping.load(), n); });
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
    NyalaTest::TearDown();
  }

  MetricRegistry server_metrics_;
  std::shared_ptr<Messenger> server_;
  Sockaddr addr_;
};

}  // namespace nyala::rpc
