// For fakes in tests that implement a generated service interface but only some of
// its methods: NYALA_FAKE_UNIMPLEMENTED(master, ListTables) defines the override of
// ListTables, answering ERROR_NO_SUCH_METHOD. Use inside the class body.
#pragma once

#include "common/status.h"
#include "rpc/rpc_context.h"

#define NYALA_FAKE_UNIMPLEMENTED(ns, Method)                                               \
  void Method(const ns::Method##RequestPB*, ns::Method##ResponsePB*,                       \
              ::nyala::rpc::RpcContext* ctx) override {                                    \
    ctx->RespondRpcFailure(::nyala::rpc::ErrorStatusPB::ERROR_NO_SUCH_METHOD,              \
                           ::nyala::Status::NotSupported("not implemented by this fake")); \
  }
