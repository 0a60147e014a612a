#include "tserver/tablet_copy_service.h"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <random>

#include "common/flag_tags.h"
#include "common/wire_protocol.h"
#include "rpc/messenger.h"
#include "rpc/rpc_context.h"
#include "tserver/tablet_copy_source.h"

DEFINE_int32(fault_injection_tablet_copy_fail_fetch_one_in, 0,
             "Fault injection, for tests only: one tablet copy FetchData call in this many, at "
             "random, fails at the RPC level (ERROR_UNAVAILABLE), as a dropped connection "
             "would, so that the copying server retries the chunk. 0: never.");
DEFINE_validator(fault_injection_tablet_copy_fail_fetch_one_in,
                 [](const char*, int32_t v) { return v >= 0; });
TAG_FLAG(fault_injection_tablet_copy_fail_fetch_one_in, runtime);
TAG_FLAG(fault_injection_tablet_copy_fail_fetch_one_in, unsafe);
TAG_FLAG(fault_injection_tablet_copy_fail_fetch_one_in, hidden);

DEFINE_int32(fault_injection_tablet_copy_corrupt_fetch_one_in, 0,
             "Fault injection, for tests only: one tablet copy chunk in this many, at random, "
             "is sent with one byte flipped after its CRC-32C was computed, so that the copying "
             "server must detect it and fetch the chunk again. 0: never.");
DEFINE_validator(fault_injection_tablet_copy_corrupt_fetch_one_in,
                 [](const char*, int32_t v) { return v >= 0; });
TAG_FLAG(fault_injection_tablet_copy_corrupt_fetch_one_in, runtime);
TAG_FLAG(fault_injection_tablet_copy_corrupt_fetch_one_in, unsafe);
TAG_FLAG(fault_injection_tablet_copy_corrupt_fetch_one_in, hidden);

namespace nyala::tserver {

namespace {

// True one time in `n` at random (never for n <= 0).
bool OneIn(int32_t n) {
  if (n <= 0) return false;
  thread_local std::mt19937 rng(std::random_device{}());
  return std::uniform_int_distribution<int32_t>(0, n - 1)(rng) == 0;
}

void SetCopyError(TabletCopyErrorPB::Code code, const Status& s, TabletCopyErrorPB* err) {
  err->set_code(code);
  StatusToPB(s, err->mutable_status());
}

}  // namespace

void TabletCopyServiceImpl::BeginTabletCopySession(const BeginTabletCopySessionRequestPB* req,
                                                   BeginTabletCopySessionResponsePB* resp,
                                                   rpc::RpcContext* ctx) {
  // `req`, `resp` and `ctx` live until ctx answers, from the snapshot thread.
  manager_->BeginSessionAsync(
      req->tablet_id(), req->requestor_uuid(), ctx->remote_address().ToString(), ctx->deadline(),
      [resp, ctx](const Status& s, TabletCopyErrorPB::Code code, TabletCopySessionInfo info) {
        if (!s.ok()) {
          SetCopyError(code, s, resp->mutable_error());
        } else {
          resp->set_session_id(std::move(info.session_id));
          resp->set_idle_timeout_ms(info.idle_timeout.ToMilliseconds());
          resp->set_superblock(std::move(info.superblock));
          for (TabletCopyFilePB& f : info.files) *resp->add_files() = std::move(f);
        }
        ctx->RespondSuccess();
      });
}

void TabletCopyServiceImpl::FetchData(const FetchDataRequestPB* req, FetchDataResponsePB* resp,
                                      rpc::RpcContext* ctx) {
  if (OneIn(FLAGS_fault_injection_tablet_copy_fail_fetch_one_in)) {
    ctx->RespondRpcFailure(rpc::ErrorStatusPB::ERROR_UNAVAILABLE,
                           Status::ServiceUnavailable(
                               "fault injection: --fault_injection_tablet_copy_fail_fetch_one_in"));
    return;
  }
  // The chunk must fit in one response frame of this messenger.
  const uint64_t max_message = ctx->messenger()->max_message_size();
  const uint64_t frame_room = max_message > 2 * kFetchResponseOverheadBytes
                                  ? max_message - kFetchResponseOverheadBytes
                                  : max_message / 2;
  const uint64_t max_length = std::min<uint64_t>(req->max_length(), frame_room);
  TabletCopyChunk chunk;
  TabletCopyErrorPB::Code code = TabletCopyErrorPB::UNKNOWN_ERROR;
  Status s = manager_->FetchData(req->session_id(), req->file_name(), req->offset(), max_length,
                                 ctx->remote_address().ToString(), &chunk, &code);
  if (!s.ok()) {
    SetCopyError(code, s, resp->mutable_error());
    return ctx->RespondSuccess();
  }
  if (!chunk.data.empty() && OneIn(FLAGS_fault_injection_tablet_copy_corrupt_fetch_one_in)) {
    chunk.data[chunk.data.size() / 2] ^= 0x20;
  }
  resp->set_data_crc32c(chunk.crc32c);
  resp->set_file_size(chunk.file_size);
  resp->set_data_sidecar(ctx->AddOutboundSidecar(std::move(chunk.data)));
  ctx->RespondSuccess();
}

void TabletCopyServiceImpl::EndTabletCopySession(const EndTabletCopySessionRequestPB* req,
                                                 EndTabletCopySessionResponsePB* resp,
                                                 rpc::RpcContext* ctx) {
  TabletCopyErrorPB::Code code = TabletCopyErrorPB::UNKNOWN_ERROR;
  Status s = manager_->EndSession(req->session_id(), ctx->remote_address().ToString(), &code);
  if (!s.ok()) SetCopyError(code, s, resp->mutable_error());
  ctx->RespondSuccess();
}

}  // namespace nyala::tserver
