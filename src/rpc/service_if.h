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

  // Set by the ServicePool when the service is registered; owned by the registry.
  Counter* calls = nullptr;
  Histogram* handler_latency_us = nullptr;
  Histogram* queue_time_us = nullptr;
  Counter* too_busy = nullptr;
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

 private:
  const std::string name_;
  std::map<std::string, std::unique_ptr<RpcMethodInfo>, std::less<>> methods_;
};

}  // namespace nyala::rpc
