// ServiceIf: a named RPC service, a table of methods each bound to a handler taking
// (const Req*, Resp*, RpcContext*). Services are declared in their .proto and the
// table is generated: protoc-gen-nyalarpc (rpc/protoc_gen_nyalarpc_main.cc) writes
// for `service Foo` a class FooIf deriving from this one, with one pure virtual method
// per RPC and a constructor that fills the table. Implement FooIf:
//
//   class CalculatorServiceImpl : public rpc_test::CalculatorServiceIf {
//     void Add(const AddRequestPB* req, AddResponsePB* resp, RpcContext* ctx) override {
//       resp->set_result(req->x() + req->y());
//       ctx->RespondSuccess();
//     }
//   };
//
// Everything the framework does around a handler (per-method metrics, deadline
// checks, the reactor policy, later authorization) hangs off the RpcMethodInfo
// entries of this table, in ServicePool and rpc/dispatch_policy.h, never in handlers.
//
// Thread-safety: the table is filled in the constructor and read-only afterwards, so
// lookups need no lock. Handlers run concurrently on any thread the policy picks.
#pragma once

#include <google/protobuf/message.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

namespace nyala {
class Counter;
class Histogram;
}  // namespace nyala

namespace nyala::rpc {

class RpcContext;

// Where a method's handler may run (rpc_options.proto's ReactorPolicyPB, per method).
enum class ReactorPolicy {
  kServiceThread,    // a service thread, or inline for a lone synchronous call
  kOnReactor,        // the reactor thread that read the call; never blocks
  kReactorFastPath,  // reactor_handler first; a service thread when it declines
};

struct RpcMethodInfo {
  std::string service_name;  // the service's full name, "nyala.tserver.TabletServerService"
  std::string name;
  const google::protobuf::Message* request_prototype;
  const google::protobuf::Message* response_prototype;
  ReactorPolicy policy = ReactorPolicy::kServiceThread;
  std::function<void(const google::protobuf::Message*, google::protobuf::Message*, RpcContext*)>
      handler;
  // kReactorFastPath only: tried first on the reactor thread that read the call. It
  // must not block: when it cannot answer at once (the data is not in memory, a lock is
  // taken) it returns false without responding and the call is queued for `handler` on
  // a service thread, with a fresh response. Returns true when it took the call.
  std::function<bool(const google::protobuf::Message*, google::protobuf::Message*, RpcContext*)>
      reactor_handler;

  // Set by the ServicePool when the service is registered; owned by the registry.
  Counter* calls = nullptr;
  Histogram* handler_latency_us = nullptr;
  Histogram* queue_time_us = nullptr;
  Counter* too_busy = nullptr;
  Counter* reactor_fallbacks = nullptr;  // reactor_handler passed the call on
};

class ServiceIf {
 public:
  virtual ~ServiceIf() = default;
  const std::string& service_name() const { return name_; }

  // nullptr when there is no such method.
  RpcMethodInfo* FindMethod(std::string_view name) {
    auto it = methods_.find(name);
    return it == methods_.end() ? nullptr : it->second.get();
  }
  const std::map<std::string, std::unique_ptr<RpcMethodInfo>, std::less<>>& methods() const {
    return methods_;
  }

 protected:
  explicit ServiceIf(std::string name) : name_(std::move(name)) {}

  // For generated constructors: adds method `name` to the table.
  template <typename Req, typename Resp>
  void AddMethod(std::string name, ReactorPolicy policy,
                 std::function<void(const Req*, Resp*, RpcContext*)> fn,
                 std::function<bool(const Req*, Resp*, RpcContext*)> fast = nullptr) {
    auto info = std::make_unique<RpcMethodInfo>();
    info->service_name = name_;
    info->name = name;
    info->request_prototype = &Req::default_instance();
    info->response_prototype = &Resp::default_instance();
    info->policy = policy;
    info->handler = [fn = std::move(fn)](const google::protobuf::Message* req,
                                         google::protobuf::Message* resp, RpcContext* ctx) {
      fn(static_cast<const Req*>(req), static_cast<Resp*>(resp), ctx);
    };
    if (fast) {
      info->reactor_handler = [fast = std::move(fast)](const google::protobuf::Message* req,
                                                       google::protobuf::Message* resp,
                                                       RpcContext* ctx) {
        return fast(static_cast<const Req*>(req), static_cast<Resp*>(resp), ctx);
      };
    }
    methods_.emplace(std::move(name), std::move(info));
  }

 private:
  const std::string name_;
  std::map<std::string, std::unique_ptr<RpcMethodInfo>, std::less<>> methods_;
};

}  // namespace nyala::rpc
