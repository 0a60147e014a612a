// OutboundCall: one request on its way out and the wait for its answer (client
// side). Created by Proxy on the caller's thread, which serializes the request; from
// then on owned by the connection that sends it and completed exactly once, on that
// connection's reactor thread: by the response, its timeout (the connection's
// timeout sweep), or connection failure.
#pragma once

#include <google/protobuf/message.h>

#include <functional>
#include <memory>
#include <string>

#include "nyala/monotime.h"
#include "rpc/in_flight.h"
#include "rpc/rpc_header.pb.h"
#include "rpc/serialization.h"
#include "rpc/sockaddr.h"

namespace nyala::rpc {

class RpcController;

class OutboundCall : public InFlightHook {
 public:
  using Callback = std::function<void()>;

  // `response` and `controller` must stay valid until `callback` has run; `service`
  // and `method` for the call's life (they are a Proxy's, which requires as much).
  OutboundCall(Sockaddr remote, std::string_view service, std::string_view method,
               google::protobuf::Message* response, RpcController* controller, Callback callback);
  ~OutboundCall();

  // Builds the frame for `request` under `call_id` (caller's thread). `caller_waits`:
  // the caller blocks on this call (RequestHeaderPB.caller_waits).
  Status Serialize(int32_t call_id, const google::protobuf::Message& request,
                   uint32_t max_message_size, bool caller_waits = false);

  // Completes the call with the response frame's parts (reactor thread).
  void CompleteWithResponse(const ResponseHeaderPB& header, Slice body, Slice sidecar_area);
  // Completes the call with a failure (any thread, exactly once).
  void CompleteWithError(const Status& status);

  int32_t call_id() const { return call_id_; }
  const Sockaddr& remote() const { return remote_; }
  MonoTime deadline() const { return deadline_; }
  OutboundFrame TakeFrame() { return std::move(frame_); }
  void RestoreFrame(OutboundFrame frame) { frame_ = std::move(frame); }
  std::string_view method() const { return method_; }
  std::string_view service() const { return service_; }
  // When the call was made, by MonoTime::NowCoarse(): for messages and /rpcz.
  MonoTime start_time() const { return start_time_; }

 private:
  void Finish();

  const Sockaddr remote_;
  const std::string_view service_;
  const std::string_view method_;
  google::protobuf::Message* const response_;
  RpcController* const controller_;
  Callback callback_;
  const MonoTime start_time_;
  MonoTime deadline_;
  int32_t call_id_ = -1;
  OutboundFrame frame_;
};

}  // namespace nyala::rpc
