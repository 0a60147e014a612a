// RpcController: the caller's handle on one outbound call: timeout, sidecars in and
// out, and the outcome. Reuse it for another call only after Reset().
//
// Thread-safety: owned by one caller. While a call is in flight the framework writes
// it from a reactor thread; the caller reads status() after the callback ran (async)
// or after SyncRequest returned.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "nyala/monotime.h"
#include "nyala/slice.h"
#include "rpc/rpc_header.pb.h"

namespace nyala::rpc {

class RpcController {
 public:
  RpcController() = default;
  RpcController(const RpcController&) = delete;
  RpcController& operator=(const RpcController&) = delete;

  // Clears everything for another call.
  void Reset();

  // The call fails with TimedOut when no answer arrived within the timeout. A call
  // without a timeout (zero, the default) waits until the connection fails; one with a
  // negative timeout has expired already and fails with TimedOut.
  void set_timeout(MonoDelta timeout) { timeout_ = timeout; }
  MonoDelta timeout() const { return timeout_; }

  // Carried to the server so it can recognise a retried request.
  void set_request_id(RequestIdPB id) { request_id_ = std::move(id); }
  const std::optional<RequestIdPB>& request_id() const { return request_id_; }

  // Attaches `data` to the request without copying it into the body. Returns its index.
  int AddOutboundSidecar(std::string data);

  // After completion: OK, or why the call failed. A server-side RPC error keeps its
  // nyala code where the server sent one (e.g. TimedOut), else maps the RPC code:
  // SERVER_TOO_BUSY -> ServiceUnavailable, NO_SUCH_* -> NotSupported (see ErrorToStatus).
  const Status& status() const { return status_; }
  bool finished() const { return finished_; }
  // The server's error, when it answered with one (nullptr otherwise).
  const ErrorStatusPB* error_response() const { return error_ ? error_.get() : nullptr; }
  // True when the server said it was too busy: back off and retry.
  bool server_too_busy() const {
    return error_ && error_->code() == ErrorStatusPB::ERROR_SERVER_TOO_BUSY;
  }

  int num_inbound_sidecars() const { return int(inbound_sidecars_.size()); }
  // REQUIRES: finished() and status().ok(). The Slice is valid until Reset().
  Status GetInboundSidecar(int idx, Slice* out) const;

 private:
  friend class OutboundCall;

  MonoDelta timeout_;
  std::optional<RequestIdPB> request_id_;
  std::vector<std::string> outbound_sidecars_;

  bool finished_ = false;
  Status status_;
  std::unique_ptr<ErrorStatusPB> error_;
  std::string response_payload_;  // owns the bytes the inbound sidecars point into
  std::vector<Slice> inbound_sidecars_;
};

// The Status a caller sees for an ErrorStatusPB from the server.
Status ErrorToStatus(const ErrorStatusPB& err);

}  // namespace nyala::rpc
