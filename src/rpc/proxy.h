// Proxy: the untyped client side of one remote service, under the typed proxies that
// protoc-gen-nyalarpc generates from each service's .proto (foo.proxy.h). Use those:
//
//   tserver::TabletServerServiceProxy proxy(messenger, addr);
//   RpcController rpc;
//   rpc.set_timeout(MonoDelta::FromSeconds(10));
//   RETURN_NOT_OK(proxy.Get(req, &resp, &rpc));
//
// This class is for generated code and for tests that send what no typed proxy can
// (an unknown method). Cheap to copy; holds no connection itself (the messenger keeps
// one per remote address, shared by every proxy, and each thread making sync calls
// keeps its own).
//
// Thread-safety: thread-safe.
#pragma once

#include <google/protobuf/message.h>

#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "rpc/sockaddr.h"

namespace nyala::rpc {

class Messenger;
class RpcController;

class Proxy {
 public:
  // `service_name`, and the `method` of every call, must outlive the calls made
  // through this proxy: string literals and the generated k*Name constants do.
  Proxy(std::shared_ptr<Messenger> messenger, Sockaddr remote, std::string_view service_name);

  // Sends `request` and calls `callback` exactly once when the call completed (see
  // controller->status()). `response` and `controller` must stay valid until then.
  // The callback runs on a reactor thread: it must not block; it may issue more calls.
  void AsyncRequest(std::string_view method, const google::protobuf::Message& request,
                    google::protobuf::Message* response, RpcController* controller,
                    std::function<void()> callback) const;

  // Sends `request` and waits for the answer. Returns controller->status(). The
  // calling thread sends on a connection of its own and reads the answer itself
  // (caller_connection.h) unless --rpc_sync_calls_on_caller_thread=false.
  // Must not be called from a reactor thread.
  Status SyncRequest(std::string_view method, const google::protobuf::Message& request,
                     google::protobuf::Message* response, RpcController* controller) const;

  const Sockaddr& remote() const { return remote_; }
  std::string_view service_name() const { return service_name_; }

 private:
  std::shared_ptr<Messenger> messenger_;
  Sockaddr remote_;
  std::string_view service_name_;
};

}  // namespace nyala::rpc
