// CalculatorService: the test-only service of rtest.proto, for rpc tests and
// rpc-bench. Its methods are documented in rtest.proto.
#pragma once

#include <atomic>

#include "rpc/rtest.service.h"

namespace nyala::rpc {

class CalculatorService : public rpc_test::CalculatorServiceIf {
 public:
  // Sleep calls currently inside their handler.
  static std::atomic<int> sleeping;

  void Add(const rpc_test::AddRequestPB* req, rpc_test::AddResponsePB* resp,
           RpcContext* ctx) override;
  void AddInline(const rpc_test::AddRequestPB* req, rpc_test::AddResponsePB* resp,
                 RpcContext* ctx) override;
  void AddFast(const rpc_test::AddRequestPB* req, rpc_test::AddResponsePB* resp,
               RpcContext* ctx) override;
  bool TryAddFastOnReactor(const rpc_test::AddRequestPB* req, rpc_test::AddResponsePB* resp,
                           RpcContext* ctx) override;
  void Sleep(const rpc_test::SleepRequestPB* req, rpc_test::SleepResponsePB* resp,
             RpcContext* ctx) override;
  void Echo(const rpc_test::EchoRequestPB* req, rpc_test::EchoResponsePB* resp,
            RpcContext* ctx) override;
  void ThreadName(const rpc_test::EchoRequestPB* req, rpc_test::EchoResponsePB* resp,
                  RpcContext* ctx) override;
  void ThreadNameOnReactor(const rpc_test::EchoRequestPB* req, rpc_test::EchoResponsePB* resp,
                           RpcContext* ctx) override;
  void Fail(const rpc_test::AddRequestPB* req, rpc_test::AddResponsePB* resp,
            RpcContext* ctx) override;
};

}  // namespace nyala::rpc
