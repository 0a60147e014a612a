#include "rpc/outbound_call.h"

#include <glog/logging.h>

#include "rpc/rpc_controller.h"
#include "rpc/rpc_header.pb.h"

namespace nyala::rpc {

void RpcController::Reset() {
  timeout_ = MonoDelta();
  request_id_.reset();
  outbound_sidecars_.clear();
  finished_ = false;
  status_ = Status::OK();
  error_.reset();
  response_payload_.clear();
  inbound_sidecars_.clear();
}

int RpcController::AddOutboundSidecar(std::string data) {
  outbound_sidecars_.push_back(std::move(data));
  return int(outbound_sidecars_.size()) - 1;
}

Status RpcController::GetInboundSidecar(int idx, Slice* out) const {
  if (idx < 0 || idx >= int(inbound_sidecars_.size())) {
    return Status::InvalidArgument("no sidecar with index " + std::to_string(idx) + " (have " +
                                   std::to_string(inbound_sidecars_.size()) + ")");
  }
  *out = inbound_sidecars_[idx];
  return Status::OK();
}

Status ErrorToStatus(const ErrorStatusPB& err) {
  if (err.has_app_status_code() && err.app_status_code() != Status::kOk) {
    return Status::FromCode(err.app_status_code(), err.message());
  }
  const std::string code = ErrorStatusPB::RpcErrorCodePB_Name(err.code());
  switch (err.code()) {
    case ErrorStatusPB::ERROR_SERVER_TOO_BUSY:
    case ErrorStatusPB::ERROR_UNAVAILABLE:
    case ErrorStatusPB::FATAL_SHUTTING_DOWN:
      return Status::ServiceUnavailable(err.message(), code);
    case ErrorStatusPB::ERROR_NO_SUCH_METHOD:
    case ErrorStatusPB::ERROR_NO_SUCH_SERVICE:
      return Status::NotSupported(err.message(), code);
    case ErrorStatusPB::ERROR_INVALID_REQUEST:
      return Status::InvalidArgument(err.message(), code);
    default:
      return Status::RemoteError(err.message(), code);
  }
}

OutboundCall::OutboundCall(Sockaddr remote, std::string_view service, std::string_view method,
                           google::protobuf::Message* response, RpcController* controller,
                           Callback callback)
    : remote_(std::move(remote)),
      service_(service),
      method_(method),
      response_(response),
      controller_(controller),
      callback_(std::move(callback)),
      start_time_(MonoTime::NowCoarse()) {
  // The coarse clock lags by up to a tick: the deadline adds one, so that a call never
  // times out early (the timeout sweep runs every few ms: it may be late by as much).
  // Zero is "no timeout"; a negative timeout (a caller's deadline already passed) is
  // one that has expired, never "none".
  deadline_ = controller_->timeout() == MonoDelta() ? MonoTime::Max()
              : controller_->timeout() < MonoDelta()
                  ? start_time_
                  : start_time_ + MonoTime::CoarseResolution() + controller_->timeout();
}

OutboundCall::~OutboundCall() = default;

Status OutboundCall::Serialize(int32_t call_id, const google::protobuf::Message& request,
                               uint32_t max_message_size, bool caller_waits) {
  call_id_ = call_id;
  const uint32_t timeout_ms =
      controller_->timeout() != MonoDelta()
          ? uint32_t(std::max<int64_t>(1, controller_->timeout().ToMilliseconds()))
          : 0;
  // Every field given, in order, so that the header is not zeroed first.
  const RequestHeaderFields header{
      call_id,
      service_,
      method_,
      timeout_ms,
      controller_->request_id() ? &*controller_->request_id() : nullptr,
      SidecarOffsets(controller_->outbound_sidecars_),
      caller_waits};
  return SerializeRequestFrame(header, request, std::move(controller_->outbound_sidecars_),
                               max_message_size, &frame_);
}

void OutboundCall::CompleteWithResponse(const ResponseHeaderPB& header, Slice body,
                                        Slice sidecar_area) {
  if (header.is_error()) {
    auto err = std::make_unique<ErrorStatusPB>();
    if (!err->ParseFromArray(body.data(), int(body.size()))) {
      return CompleteWithError(
          Status::Corruption("unparseable error response for " + std::string(method_)));
    }
    controller_->status_ = ErrorToStatus(*err);
    controller_->error_ = std::move(err);
    return Finish();
  }
  if (!response_->ParseFromArray(body.data(), int(body.size()))) {
    return CompleteWithError(Status::Corruption("unparseable " + response_->GetTypeName() +
                                                " for " + std::string(method_)));
  }
  if (header.sidecar_offsets_size() > 0) {
    // Keep the sidecar bytes alive in the controller.
    controller_->response_payload_.assign(sidecar_area.cdata(), sidecar_area.size());
    Status s = SplitSidecars(header.sidecar_offsets(), Slice(controller_->response_payload_),
                             &controller_->inbound_sidecars_);
    if (!s.ok()) return CompleteWithError(s);
  }
  controller_->status_ = Status::OK();
  Finish();
}

void OutboundCall::CompleteWithError(const Status& status) {
  DCHECK(!status.ok());
  controller_->status_ = status;
  Finish();
}

void OutboundCall::Finish() {
  controller_->finished_ = true;
  Callback cb = std::move(callback_);
  cb();
}

}  // namespace nyala::rpc
