#include "rpc/rtest_service.h"

#include <pthread.h>

#include "nyala/monotime.h"
#include "rpc/rpc_context.h"

namespace nyala::rpc {

using namespace nyala::rpc_test;  // NOLINT(build/namespaces)

std::atomic<int> CalculatorService::sleeping{0};

void CalculatorService::Add(const AddRequestPB* req, AddResponsePB* resp, RpcContext* ctx) {
  resp->set_result(req->x() + req->y());
  ctx->RespondSuccess();
}

void CalculatorService::AddInline(const AddRequestPB* req, AddResponsePB* resp, RpcContext* ctx) {
  Add(req, resp, ctx);
}

void CalculatorService::AddFast(const AddRequestPB* req, AddResponsePB* resp, RpcContext* ctx) {
  Add(req, resp, ctx);
}

bool CalculatorService::TryAddFastOnReactor(const AddRequestPB* req, AddResponsePB* resp,
                                            RpcContext* ctx) {
  if (req->x() < 0) {
    // Leave traces the framework must clear before the service thread runs.
    resp->set_result(-1);
    ctx->AddOutboundSidecar("from the declined fast path");
    return false;
  }
  Add(req, resp, ctx);
  return true;
}

void CalculatorService::Sleep(const SleepRequestPB* req, SleepResponsePB*, RpcContext* ctx) {
  sleeping++;
  SleepFor(MonoDelta::FromMilliseconds(req->sleep_ms()));
  sleeping--;
  ctx->RespondSuccess();
}

void CalculatorService::Echo(const EchoRequestPB* req, EchoResponsePB* resp, RpcContext* ctx) {
  resp->set_data(req->data());
  for (int i = 0; i < ctx->num_inbound_sidecars(); i++) {
    Slice s;
    (void)ctx->GetInboundSidecar(i, &s);
    ctx->AddOutboundSidecar(s.ToString());
  }
  ctx->RespondSuccess();
}

void CalculatorService::ThreadName(const EchoRequestPB*, EchoResponsePB* resp, RpcContext* ctx) {
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof(name));
  resp->set_data(name);
  ctx->RespondSuccess();
}

void CalculatorService::ThreadNameOnReactor(const EchoRequestPB* req, EchoResponsePB* resp,
                                            RpcContext* ctx) {
  ThreadName(req, resp, ctx);
}

void CalculatorService::Fail(const AddRequestPB*, AddResponsePB*, RpcContext* ctx) {
  ctx->RespondFailure(Status::IllegalState("this method always fails"));
}

}  // namespace nyala::rpc
