// ServiceIf: a named RPC service, a table of methods each bound to a handler taking
// (const Req*, Resp*, RpcContext*). Subclasses register their methods in their
// constructor; the table is read-only afterwards, so lookups need no lock.
//
//   class CalculatorService : public ServiceIf {
//    public:
//     CalculatorService() : ServiceIf("nyala.CalculatorService") {
//       RegisterMethod<AddRequestPB, AddResponsePB>(
//           "Add", [](const AddRequestPB* req, AddResponsePB* resp, RpcContext* ctx) {
//             resp->set_sum(req->x() + req->y());
//             ctx->RespondSuccess();
//           });
//     }
//   };
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

struct RpcMethodInfo {
  std::string name;
  const google::protobuf::Message* request_prototype;
  const google::protobuf::Message* response_prototype;
  std::function<void(const google::protobuf::Message*, google::protobuf::Message*, RpcContext*)>
      handler;
  // Runs on the reactor thread that read the call instead of a service thread. Only
  // for handlers that never block and finish in a few microseconds.
  bool runs_on_reactor = false;
  // If set, tried first on the reactor thread that read the call. It must not block:
  // when it cannot answer at once (the data is not in memory, a lock is taken) it
  // returns false without responding and the call is queued for `handler` on a
  // service thread, with a fresh response. Returns true when it took the call.
  std::function<bool(const google::protobuf::Message*, google::protobuf::Message*, RpcContext*)>
      reactor_handler;

  // Set by the ServicePool when the service is registered; owned by the registry.
  Counter* calls = nullptr;
  Histogram* handler_latency_us = nullptr;
  Histogram* queue_time_us = nullptr;
  Counter* too_busy = nullptr;
  Counter* reactor_fallbacks = nullptr;  // reactor_handler passed the call on
};

enum class MethodCost { kNormal, kCheap };

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

  template <typename Req, typename Resp>
  void RegisterMethod(std::string name, std::function<void(const Req*, Resp*, RpcContext*)> fn,
                      MethodCost cost = MethodCost::kNormal) {
    auto info = std::make_unique<RpcMethodInfo>();
    info->name = name;
    info->request_prototype = &Req::default_instance();
    info->response_prototype = &Resp::default_instance();
    info->handler = [fn = std::move(fn)](const google::protobuf::Message* req,
                                         google::protobuf::Message* resp, RpcContext* ctx) {
      fn(static_cast<const Req*>(req), static_cast<Resp*>(resp), ctx);
    };
    info->runs_on_reactor = cost == MethodCost::kCheap;
    methods_.emplace(std::move(name), std::move(info));
  }

  // A method with a non-blocking fast path tried on the reactor thread first (see
  // RpcMethodInfo::reactor_handler); `fn` runs on a service thread when it declines.
  template <typename Req, typename Resp>
  void RegisterMethod(std::string name, std::function<bool(const Req*, Resp*, RpcContext*)> fast,
                      std::function<void(const Req*, Resp*, RpcContext*)> fn) {
    RegisterMethod<Req, Resp>(name, std::move(fn));
    methods_[name]->reactor_handler = [fast = std::move(fast)](const google::protobuf::Message* req,
                                                               google::protobuf::Message* resp,
                                                               RpcContext* ctx) {
      return fast(static_cast<const Req*>(req), static_cast<Resp*>(resp), ctx);
    };
  }

 private:
  const std::string name_;
  std::map<std::string, std::unique_ptr<RpcMethodInfo>, std::less<>> methods_;
};

}  // namespace nyala::rpc
