#include "rpc/rpc_context.h"
#include "common/status.h"

#include <glog/logging.h>

#include <cstring>

#include "common/coding.h"

#include "common/histogram.h"
#include "common/metrics.h"
#include "rpc/connection.h"
#include "rpc/messenger.h"
#include "rpc/reactor.h"
#include "rpc/service_if.h"

namespace nyala::rpc {

// Made on a reactor and freed on a service thread for most calls: small enough for
// glibc's per-thread cache (chunks of up to 1032 bytes), it skips the malloc arenas'
// locks. At 1.4 KiB rpc-bench's async mode lost ~15% of its calls per second.
static_assert(sizeof(RpcContext) <= 1024, "keep RpcContext within glibc's tcache sizes");

RpcContext::RpcContext(std::shared_ptr<Connection> conn, const RequestHeaderPB& header,
                       RpcMethodInfo* method, std::unique_ptr<char[]> buffer, Slice payload,
                       MonoTime arrival)
    : conn_(std::move(conn)),
      call_id_(header.call_id()),
      caller_waits_(header.caller_waits()),
      buffer_(std::move(buffer)),
      remote_(conn_->remote()),
      arrival_(arrival),
      method_(method) {
  if (header.has_request_id()) request_id_ = std::make_unique<RequestIdPB>(header.request_id());
  if (header.sidecar_offsets_size() > 0) sidecar_offsets_ = header.sidecar_offsets();
  if (!method_) {
    unknown_names_ = std::make_unique<std::pair<std::string, std::string>>(header.service_name(),
                                                                           header.method_name());
  }
  if (buffer_) {
    payload_ = payload;
  } else if (payload.size() <= kInlinePayloadBytes) {
    memcpy(inline_payload_, payload.data(), payload.size());
    payload_ = Slice(inline_payload_, payload.size());
  } else {
    buffer_ = std::make_unique_for_overwrite<char[]>(payload.size());
    memcpy(buffer_.get(), payload.data(), payload.size());
    payload_ = Slice(buffer_.get(), payload.size());
  }
  deadline_ = header.has_timeout_ms() && header.timeout_ms() > 0
                  ? arrival_ + MonoDelta::FromMilliseconds(header.timeout_ms())
                  : MonoTime::Max();
  conn_->messenger()->inbound_calls().Add(this);
  conn_->reactor()->CountInboundCall(+1);
}

const std::string& RpcContext::method_name() const {
  return method_ ? method_->name : unknown_names_->second;
}

const std::string& RpcContext::service_name() const {
  return method_ ? method_->service_name : unknown_names_->first;
}

RpcContext::~RpcContext() {
  conn_->reactor()->CountInboundCall(-1);
  conn_->messenger()->inbound_calls().Remove(this);
}

Reactor* RpcContext::reactor() const { return conn_->reactor(); }
Messenger* RpcContext::messenger() const { return conn_->messenger(); }

void FlushPendingSends() {
  if (FlushScope* scope = FlushScope::Current()) scope->FlushNow();
}

bool RpcContext::RunInlineAfterRead(std::function<void()> task) {
  Reactor* r = reactor();
  // A handler on a service thread, or one running inline outside the loop (with
  // --rpc_reactor_methods off), has no read callback to follow.
  if (!r->IsCurrentThread()) return false;
  auto* owned = new std::function<void()>(std::move(task));
  auto run = [](void* arg) {
    std::unique_ptr<std::function<void()>> t(static_cast<std::function<void()>*>(arg));
    (*t)();
  };
  if (r->RunInline(run, owned)) return true;
  delete owned;
  return false;
}

Status RpcContext::ParseRequest() {
  DCHECK(method_);
  FrameParts parts;
  RETURN_NOT_OK(SplitFrame(payload_, &parts));  // checked once already; cannot fail
  if (!arena_) arena_.emplace(arena_block_, sizeof(arena_block_));
  request_ = method_->request_prototype->New(&*arena_);
  if (!request_->ParsePartialFromArray(parts.body.data(), int(parts.body.size()))) {
    return Status::InvalidArgument("unparseable " + request_->GetTypeName() + " for " +
                                   service_name() + "." + method_name());
  }
  if (!request_->IsInitialized()) {
    return Status::InvalidArgument("invalid " + request_->GetTypeName() + ": missing " +
                                   request_->InitializationErrorString());
  }
  RETURN_NOT_OK_PREPEND(SplitSidecars(sidecar_offsets_, parts.sidecar_area, &inbound_sidecars_),
                        "request sidecars");
  response_ = method_->response_prototype->New(&*arena_);
  return Status::OK();
}

namespace {
thread_local MonoTime tls_last_response_time;
}  // namespace

MonoTime RpcContext::ThisThreadsLastResponseTime() { return tls_last_response_time; }

void RpcContext::ForgetThisThreadsResponseTime() { tls_last_response_time = MonoTime(); }

void RpcContext::RecordHandlerLatency() {
  const MonoTime now = MonoTime::Now();
  tls_last_response_time = now;
  method_->handler_latency_us->Increment((now - handler_start_).ToMicroseconds());
}

void RpcContext::RunHandler(MonoTime now) {
  handler_start_ = now;
  running_.store(true, std::memory_order_relaxed);
  if (method_->queue_time_us) {
    method_->queue_time_us->Increment((handler_start_ - arrival_).ToMicroseconds());
  }
  method_->handler(request_, response_, this);
}

bool RpcContext::TryRunOnReactor() {
  DCHECK(method_->reactor_handler);
  handler_start_ = MonoTime::Now();
  running_.store(true, std::memory_order_relaxed);
  RpcMethodInfo* method = method_;  // `this` may be gone once the handler took the call
  const int64_t queue_us = (handler_start_ - arrival_).ToMicroseconds();
  if (method->reactor_handler(request_, response_, this)) {
    if (method->queue_time_us) method->queue_time_us->Increment(queue_us);
    return true;
  }
  running_.store(false, std::memory_order_relaxed);
  handler_start_ = MonoTime();
  response_->Clear();
  outbound_sidecars_.clear();
  if (method->reactor_fallbacks) method->reactor_fallbacks->Increment();
  return false;
}

int RpcContext::AddOutboundSidecar(std::string data) {
  outbound_sidecars_.push_back(std::move(data));
  return int(outbound_sidecars_.size()) - 1;
}

Status RpcContext::GetInboundSidecar(int idx, Slice* out) const {
  if (idx < 0 || idx >= int(inbound_sidecars_.size())) {
    return Status::InvalidArgument("no request sidecar " + std::to_string(idx));
  }
  *out = inbound_sidecars_[idx];
  return Status::OK();
}

void RpcContext::RespondSuccess() { SendResponse(false, *response_); }

void RpcContext::RespondSuccessWithSerializedBody(Slice serialized_body) {
  // The frame SerializeFrame would build for a body of these bytes.
  ResponseHeaderPB header;
  header.set_call_id(call_id_);
  for (uint32_t off : SidecarOffsets(outbound_sidecars_)) header.add_sidecar_offsets(off);
  const size_t hlen = header.ByteSizeLong();
  const size_t blen = serialized_body.size();
  size_t sidecar_bytes = 0;
  for (const auto& s : outbound_sidecars_) sidecar_bytes += s.size();
  const size_t payload = VarintLength(hlen) + hlen + VarintLength(blen) + blen + sidecar_bytes;
  if (payload + kFrameLengthBytes > conn_->messenger()->max_message_size()) {
    RespondFailure(Status::InvalidArgument("response too large",
                                           std::to_string(payload + kFrameLengthBytes) + " bytes"));
    return;
  }
  OutboundFrame frame;
  frame.head.resize(kFrameLengthBytes + payload - sidecar_bytes);
  auto* p = reinterpret_cast<uint8_t*>(frame.head.data());
  EncodeFixed32BE(p, uint32_t(payload));
  p += kFrameLengthBytes;
  p = EncodeVarint64(p, hlen);
  p = header.SerializeWithCachedSizesToArray(p);
  p = EncodeVarint64(p, blen);
  if (blen > 0) memcpy(p, serialized_body.data(), blen);
  DCHECK_EQ(size_t(p + blen - reinterpret_cast<uint8_t*>(frame.head.data())), frame.head.size());
  frame.sidecars = std::move(outbound_sidecars_);
  conn_->Send(std::move(frame));
  if (method_) {
    if (method_->calls) method_->calls->Increment();
    if (method_->handler_latency_us && handler_start_.Initialized()) {
      RecordHandlerLatency();
    }
  }
  delete this;
}

void RpcContext::RespondFailure(const Status& status) {
  RespondRpcFailure(ErrorStatusPB::ERROR_APPLICATION, status);
}

void RpcContext::RespondRpcFailure(ErrorStatusPB::RpcErrorCodePB code, const Status& status) {
  ErrorStatusPB err;
  err.set_code(code);
  err.set_message(status.message());
  err.set_app_status_code(status.code());
  outbound_sidecars_.clear();
  SendResponse(true, err);
}

void RpcContext::SendResponse(bool is_error, const google::protobuf::MessageLite& body) {
  OutboundFrame frame;
  const uint32_t max_size = conn_->messenger()->max_message_size();
  Status s = SerializeResponseFrame(call_id_, is_error, body, std::move(outbound_sidecars_),
                                    max_size, &frame);
  if (!s.ok()) {
    LOG(WARNING) << service_name() << "." << method_name() << " response to " << remote_.ToString()
                 << " dropped: " << s.ToString();
    ErrorStatusPB err;
    err.set_code(ErrorStatusPB::ERROR_APPLICATION);
    err.set_message("response too large: " + s.message());
    err.set_app_status_code(Status::kInvalidArgument);
    CHECK_OK(SerializeResponseFrame(call_id_, /*is_error=*/true, err, {}, UINT32_MAX, &frame));
  }
  conn_->Send(std::move(frame));
  if (method_) {
    if (method_->calls) method_->calls->Increment();
    if (method_->handler_latency_us && handler_start_.Initialized()) {
      RecordHandlerLatency();
    }
  }
  delete this;
}

std::string RpcContext::ToString() const {
  const MonoTime now = MonoTime::Now();
  std::string out = service_name() + "." + method_name() + " from " + remote_.ToString() +
                    ", call " + std::to_string(call_id_) + ", running for " +
                    std::to_string((now - arrival_).ToMilliseconds()) + " ms";
  if (std::string trace = TraceDescription(now); !trace.empty()) out += ": " + trace;
  return out;
}

std::string RpcContext::TraceDescription(MonoTime now) const {
  const CallTrace* t = trace_.load(std::memory_order_acquire);
  return t != nullptr ? t->Describe(now) : std::string();
}

}  // namespace nyala::rpc
