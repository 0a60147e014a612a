#include "rpc/proxy.h"

#include "common/mutex.h"
#include "rpc/caller_connection.h"
#include "rpc/dispatch_policy.h"
#include "rpc/messenger.h"
#include "rpc/outbound_call.h"
#include "rpc/rpc_controller.h"

namespace nyala::rpc {

Proxy::Proxy(std::shared_ptr<Messenger> messenger, Sockaddr remote, std::string_view service_name)
    : messenger_(std::move(messenger)), remote_(std::move(remote)), service_name_(service_name) {}

void Proxy::AsyncRequest(std::string_view method, const google::protobuf::Message& request,
                         google::protobuf::Message* response, RpcController* controller,
                         std::function<void()> callback) const {
  auto call = std::make_unique<OutboundCall>(remote_, service_name_, method, response, controller,
                                             std::move(callback));
  Status s = call->Serialize(messenger_->NextCallId(), request, messenger_->max_message_size());
  if (!s.ok()) {
    call->CompleteWithError(
        s.CloneAndPrepend(std::string(method) + " RPC to " + remote_.ToString()));
    return;
  }
  messenger_->QueueOutboundCall(std::move(call));
}

Status Proxy::SyncRequest(std::string_view method, const google::protobuf::Message& request,
                          google::protobuf::Message* response, RpcController* controller) const {
  if (UseCallerThreadConnection()) {
    auto call =
        std::make_unique<OutboundCall>(remote_, service_name_, method, response, controller, [] {});
    Status s = call->Serialize(messenger_->NextCallId(), request, messenger_->max_message_size(),
                               /*caller_waits=*/true);
    if (!s.ok()) {
      call->CompleteWithError(
          s.CloneAndPrepend(std::string(method) + " RPC to " + remote_.ToString()));
      return controller->status();
    }
    RunSyncCallOnCallerThread(messenger_, std::move(call));
    return controller->status();
  }
  Mutex mu;
  CondVar cv;
  bool done = false;
  AsyncRequest(method, request, response, controller, [&] {
    MutexLock l(mu);
    done = true;
    cv.notify_one();
  });
  UniqueLock l(mu);
  cv.wait(l, [&] { return done; });
  return controller->status();
}

}  // namespace nyala::rpc
