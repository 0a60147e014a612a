#include "tserver/tablet_service.h"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/flag_tags.h"
#include "common/wire_protocol.h"
#include "consensus/peer_id.h"
#include "consensus/raft_group.h"
#include "rpc/rpc_context.h"
#include "tserver/request_tracker.h"
#include "tserver/scanners.h"
#include "tserver/tablet.h"
#include "tserver/tablet_copy_runner.h"
#include "tserver/tablet_manager.h"
#include "tserver/tserver.pb.h"
#include "tserver/tserver_metrics.h"
#include "tserver/write_trace.h"

DEFINE_int32(get_inject_latency_ms, 0,
             "Fault injection for tests: every Get waits this long on a service thread "
             "before it reads (the reactor fast path then declines all Gets). 0: off.");
TAG_FLAG(get_inject_latency_ms, unsafe);
TAG_FLAG(get_inject_latency_ms, hidden);

namespace nyala::tserver {

namespace {

void LogRejected(const rpc::RpcContext* ctx, const std::string& tablet_id,
                 const TabletServerErrorPB& err, TServerMetrics* metrics) {
  if (metrics) metrics->rejected_requests->Increment();
  LOG(WARNING) << ctx->method_name() << " from " << ctx->remote_address().ToString()
               << (tablet_id.empty() ? "" : " for tablet " + tablet_id)
               << " rejected: " << TabletServerErrorPB::Code_Name(err.code()) << ": "
               << err.status().message();
}

template <typename Resp>
void NoSuchTablet(const std::string& id, Resp* resp) {
  SetError(TabletServerErrorPB::TABLET_NOT_FOUND,
           Status::NotFound("tablet " + id + " is not on this server"), resp->mutable_error());
}

// Attaches the two row sidecars to the response.
template <typename Resp>
void AttachRows(rpc::RpcContext* ctx, std::string* rows, std::string* indirect, Resp* resp) {
  RowwiseRowBlockPB* data = resp->mutable_data();
  data->set_rows_sidecar(ctx->AddOutboundSidecar(std::move(*rows)));
  data->set_indirect_data_sidecar(ctx->AddOutboundSidecar(std::move(*indirect)));
}

int64_t Micros(MonoTime start) { return (MonoTime::Now() - start).ToMicroseconds(); }

}  // namespace

void TabletServiceImpl::Write(const WriteRequestPB* req, WriteResponsePB* resp,
                              rpc::RpcContext* ctx) {
  const MonoTime start = MonoTime::Now();
  TServerMetrics* m = deps_.metrics;
  if (m) m->write_requests->Increment();
  const rpc::RequestIdPB* rid = ctx->request_id();
  if (rid) {
    switch (deps_.tracker->Begin(*rid, resp, ctx)) {
      case RequestTracker::Outcome::kNew:
        break;
      case RequestTracker::Outcome::kAnswered:
        if (m) m->duplicate_requests->Increment();
        ctx->RespondSuccess();
        return;
      case RequestTracker::Outcome::kAttached:
        if (m) m->duplicate_requests->Increment();
        return;  // answered when the original finishes
      case RequestTracker::Outcome::kStale:
        LOG(WARNING) << "Write from " << ctx->remote_address().ToString()
                     << " rejected: stale request id " << rid->ShortDebugString();
        ctx->RespondFailure(Status::IllegalState(
            "request " + std::to_string(rid->seq_no()) + " of client " + rid->client_id() +
            " is below its first incomplete request and was forgotten"));
        return;
    }
  }
  std::shared_ptr<Tablet> tablet = deps_.tablets->Lookup(req->tablet_id());
  // Answers the call once `resp` is final: here, or on the tablet's consensus worker
  // once the write replicated. Captures no pointer to this service: a write finishing
  // while the server shuts down outlives the services.
  auto finish = [tablet, req, resp, ctx, start, tracker = deps_.tracker,
                 m](const WriteTrace* trace) {
    if (resp->has_error()) LogRejected(ctx, req->tablet_id(), resp->error(), m);
    if (const rpc::RequestIdPB* id = ctx->request_id()) {
      const bool applied = !resp->has_error();
      tracker->Finish(*id, *resp, /*remember=*/applied,
                      applied ? RequestRecordLocation{tablet->store(), tablet->seq()}
                              : RequestRecordLocation{});
    }
    if (m) m->write_latency_us->Increment(Micros(start));
    if (trace) trace->Record(m);
    ctx->RespondSuccess();
  };
  if (!tablet) {
    NoSuchTablet(req->tablet_id(), resp);
    return finish(nullptr);
  }
  // Shown on /rpcz until the call is answered; freed after that.
  auto trace = std::make_shared<WriteTrace>(ctx->arrival_time());
  ctx->set_trace(trace.get());
  WriteTrace* t = trace.get();
  // With rid, the write stores the response with the rows.
  tablet->WriteAsync(*req, resp, rid, t, [finish, trace] { finish(trace.get()); });
}

void TabletServiceImpl::Get(const GetRequestPB* req, GetResponsePB* resp, rpc::RpcContext* ctx) {
  HandleGet(*req, resp, ctx, /*on_reactor=*/false);
}

bool TabletServiceImpl::TryGetOnReactor(const GetRequestPB* req, GetResponsePB* resp,
                                        rpc::RpcContext* ctx) {
  return HandleGet(*req, resp, ctx, /*on_reactor=*/true);
}

void TabletServiceImpl::Scan(const ScanRequestPB* req, ScanResponsePB* resp, rpc::RpcContext* ctx) {
  const MonoTime start = MonoTime::Now();
  TServerMetrics* m = deps_.metrics;
  if (m) m->scan_requests->Increment();
  std::string rows, indirect;
  const std::string& tablet_id = req->new_scan_request().tablet_id();
  if (!req->scanner_id().empty()) {
    deps_.scanners->ContinueScan(*req, resp, &rows, &indirect);
  } else if (!req->has_new_scan_request()) {
    SetError(TabletServerErrorPB::INVALID_SCAN_SPEC,
             Status::InvalidArgument("Scan without scanner_id or new_scan_request"),
             resp->mutable_error());
  } else if (std::shared_ptr<Tablet> tablet = deps_.tablets->Lookup(tablet_id)) {
    deps_.scanners->StartScan(std::move(tablet), *req, resp, &rows, &indirect);
  } else {
    NoSuchTablet(tablet_id, resp);
  }
  if (resp->has_error()) {
    LogRejected(ctx, tablet_id, resp->error(), m);
  } else {
    AttachRows(ctx, &rows, &indirect, resp);
  }
  if (m) m->scan_latency_us->Increment(Micros(start));
  ctx->RespondSuccess();
}

void TabletServiceImpl::ScannerKeepAlive(const ScannerKeepAliveRequestPB* req,
                                         ScannerKeepAliveResponsePB* resp, rpc::RpcContext* ctx) {
  if (Status s = deps_.scanners->KeepAlive(req->scanner_id()); !s.ok()) {
    SetError(TabletServerErrorPB::SCANNER_EXPIRED, s, resp->mutable_error());
    LogRejected(ctx, "", resp->error(), deps_.metrics);
  }
  ctx->RespondSuccess();
}

void TabletServiceImpl::Ping(const PingRequestPB*, PingResponsePB*, rpc::RpcContext* ctx) {
  ctx->RespondSuccess();
}

bool TabletServiceImpl::HandleGet(const GetRequestPB& req, GetResponsePB* resp,
                                  rpc::RpcContext* ctx, bool on_reactor) {
  constexpr int kMaxKeysOnReactor = 32;
  if (on_reactor && req.keys_size() > kMaxKeysOnReactor) return false;
  if (FLAGS_get_inject_latency_ms > 0) {
    if (on_reactor) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(FLAGS_get_inject_latency_ms));
  }
  const MonoTime start = MonoTime::Now();
  std::string rows, indirect;
  std::shared_ptr<Tablet> tablet = deps_.tablets->Lookup(req.tablet_id());
  if (on_reactor) {
    // Errors go to a service thread, which logs them.
    if (!tablet || !tablet->TryGetWithoutBlocking(req, resp, &rows, &indirect) ||
        resp->has_error()) {
      return false;
    }
  } else if (tablet) {
    tablet->Get(req, resp, &rows, &indirect);
  } else {
    NoSuchTablet(req.tablet_id(), resp);
  }
  TServerMetrics* m = deps_.metrics;
  if (m) m->get_requests->Increment();
  if (resp->has_error()) {
    LogRejected(ctx, req.tablet_id(), resp->error(), m);
  } else {
    AttachRows(ctx, &rows, &indirect, resp);
  }
  if (m) m->get_latency_us->Increment(Micros(start));
  ctx->RespondSuccess();
  return true;
}

bool TabletAdminServiceImpl::WrongServer(const std::string& dest, TabletServerErrorPB* err) const {
  if (dest.empty() || dest == uuid_) return false;
  SetError(TabletServerErrorPB::WRONG_SERVER_UUID,
           Status::InvalidArgument("request for server " + dest + " reached server " + uuid_), err);
  return true;
}

void TabletAdminServiceImpl::CreateTablet(const CreateTabletRequestPB* req,
                                          CreateTabletResponsePB* resp, rpc::RpcContext* ctx) {
  if (WrongServer(req->dest_uuid(), resp->mutable_error())) {
    LogRejected(ctx, req->tablet_id(), resp->error(), metrics_);
    return ctx->RespondSuccess();
  }
  resp->clear_error();
  // Answered from the tablet manager's admin thread, which creates the tablets of
  // every call queued meanwhile together. `req`, `resp` and `ctx` live until then.
  tablets_->CreateTabletAsync(req, [this, req, resp, ctx](const Status& s,
                                                          TabletServerErrorPB::Code code) {
    if (!s.ok()) {
      SetError(code, s, resp->mutable_error());
      LogRejected(ctx, req->tablet_id(), resp->error(), metrics_);
    }
    ctx->RespondSuccess();
  });
}

void TabletAdminServiceImpl::DeleteTablet(const DeleteTabletRequestPB* req,
                                          DeleteTabletResponsePB* resp, rpc::RpcContext* ctx) {
  if (WrongServer(req->dest_uuid(), resp->mutable_error())) {
    LogRejected(ctx, req->tablet_id(), resp->error(), metrics_);
    return ctx->RespondSuccess();
  }
  resp->clear_error();
  auto fail = [this, req, resp, ctx](const Status& s) {
    SetError(
        s.IsNotFound() ? TabletServerErrorPB::TABLET_NOT_FOUND : TabletServerErrorPB::UNKNOWN_ERROR,
        s, resp->mutable_error());
    LogRejected(ctx, req->tablet_id(), resp->error(), metrics_);
  };
  if (req->delete_type() == TABLET_DATA_TOMBSTONED) {
    LOG(INFO) << "tombstoning tablet " << req->tablet_id() << " on request of "
              << ctx->remote_address().ToString() << ": " << req->reason();
    if (Status s = tablets_->TombstoneTablet(req->tablet_id()); !s.ok()) fail(s);
    return ctx->RespondSuccess();
  }
  LOG(INFO) << "deleting tablet " << req->tablet_id() << " on request of "
            << ctx->remote_address().ToString() << ": " << req->reason();
  // Answered from the tablet manager's admin thread, as CreateTablet.
  tablets_->DeleteTabletAsync(req->tablet_id(), [ctx, fail](const Status& s) {
    if (!s.ok()) fail(s);
    ctx->RespondSuccess();
  });
}

void TabletAdminServiceImpl::ListTablets(const ListTabletsRequestPB*, ListTabletsResponsePB* resp,
                                         rpc::RpcContext* ctx) {
  for (const auto& t : tablets_->GetTablets()) {
    auto* info = resp->add_tablets();
    const TabletMetadataPB& m = t->metadata();
    info->set_tablet_id(m.tablet_id());
    info->set_table_id(m.table_id());
    info->set_table_name(m.table_name());
    *info->mutable_partition() = m.partition();
    *info->mutable_schema() = m.schema();
    *info->mutable_partition_schema() = m.partition_schema();
    info->set_state(t->state() == TabletState::kDeleted      ? TABLET_DATA_DELETED
                    : t->state() == TabletState::kTombstoned ? TABLET_DATA_TOMBSTONED
                    : t->state() == TabletState::kRunning    ? TABLET_DATA_READY
                                                             : TABLET_DATA_UNKNOWN);
    info->set_estimated_on_disk_size(t->OnDiskSize());
    if (t->state() == TabletState::kFailed) StatusToPB(t->failure(), info->mutable_failure());
    master::ConsensusStatePB consensus;
    if (tablets_->ConsensusStateOf(*t, &consensus)) *info->mutable_consensus() = std::move(consensus);
  }
  if (copies_ != nullptr) {
    for (const TabletCopyRunner::Running& c : copies_->RunningCopies()) {
      ListTabletsResponsePB::TabletInfo* info = nullptr;
      for (auto& t : *resp->mutable_tablets()) {
        if (t.tablet_id() == c.tablet_id) info = &t;
      }
      if (info == nullptr) {
        info = resp->add_tablets();
        info->set_tablet_id(c.tablet_id);
        info->set_state(TABLET_DATA_COPYING);
      }
      info->mutable_copy()->set_source_uuid(c.source_uuid);
      info->mutable_copy()->set_bytes_done(c.bytes_done);
      info->mutable_copy()->set_bytes_total(c.bytes_total);
    }
  }
  ctx->RespondSuccess();
}

void TabletAdminServiceImpl::StartTabletCopy(const StartTabletCopyRequestPB* req,
                                             StartTabletCopyResponsePB* resp,
                                             rpc::RpcContext* ctx) {
  if (WrongServer(req->dest_uuid(), resp->mutable_error())) {
    LogRejected(ctx, req->tablet_id(), resp->error(), metrics_);
    return ctx->RespondSuccess();
  }
  resp->clear_error();
  if (copies_ == nullptr) {
    SetError(TabletServerErrorPB::TABLET_NOT_RUNNING,
             Status::NotSupported("this server does not take tablet copies"),
             resp->mutable_error());
    LogRejected(ctx, req->tablet_id(), resp->error(), metrics_);
    return ctx->RespondSuccess();
  }
  copies_->Start(*req, resp);
  ctx->RespondSuccess();
}

void TabletAdminServiceImpl::ChecksumTablet(const ChecksumTabletRequestPB* req,
                                            ChecksumTabletResponsePB* resp, rpc::RpcContext* ctx) {
  if (WrongServer(req->dest_uuid(), resp->mutable_error())) {
    LogRejected(ctx, req->tablet_id(), resp->error(), metrics_);
    return ctx->RespondSuccess();
  }
  resp->clear_error();
  const int64_t timeout_ms = std::clamp<int64_t>(req->timeout_ms(), 1, 60'000);
  tablets_->Checksum(req->tablet_id(), req->at_index(), MonoDelta::FromMilliseconds(timeout_ms),
                     resp);
  if (resp->has_error()) LogRejected(ctx, req->tablet_id(), resp->error(), metrics_);
  ctx->RespondSuccess();
}

void TabletAdminServiceImpl::ChangeConfig(const ChangeConfigRequestPB* req,
                                          ChangeConfigResponsePB* resp, rpc::RpcContext* ctx) {
  auto reject = [&](TabletServerErrorPB::Code code, const Status& s) {
    SetError(code, s, resp->mutable_error());
    LogRejected(ctx, req->tablet_id(), resp->error(), metrics_);
    ctx->RespondSuccess();
  };
  if (WrongServer(req->dest_uuid(), resp->mutable_error())) {
    LogRejected(ctx, req->tablet_id(), resp->error(), metrics_);
    return ctx->RespondSuccess();
  }
  resp->clear_error();
  consensus::ConfigChange change;
  switch (req->type()) {
    case ADD_LEARNER:
      change = consensus::ConfigChange::kAddLearner;
      break;
    case PROMOTE_LEARNER:
      change = consensus::ConfigChange::kPromoteLearner;
      break;
    case REMOVE_PEER:
      change = consensus::ConfigChange::kRemovePeer;
      break;
    default:
      return reject(TabletServerErrorPB::INVALID_CONFIG,
                    Status::InvalidArgument("unknown configuration change type " +
                                            std::to_string(int(req->type()))));
  }
  const RaftPeerPB& peer = req->peer();
  if (peer.permanent_uuid().empty()) {
    return reject(TabletServerErrorPB::INVALID_CONFIG,
                  Status::InvalidArgument("a configuration change names no server uuid"));
  }
  if (change == consensus::ConfigChange::kAddLearner &&
      (peer.host().empty() || peer.port() == 0 || peer.port() > 65535)) {
    return reject(TabletServerErrorPB::INVALID_CONFIG,
                  Status::InvalidArgument("adding server " + peer.permanent_uuid() +
                                          " needs its host and port"));
  }
  std::shared_ptr<Tablet> tablet = tablets_->Lookup(req->tablet_id());
  if (!tablet) {
    NoSuchTablet(req->tablet_id(), resp);
    LogRejected(ctx, req->tablet_id(), resp->error(), metrics_);
    return ctx->RespondSuccess();
  }
  std::shared_ptr<consensus::RaftGroup> group = tablet->replica().group();
  if (tablet->state() != TabletState::kRunning || !group) {
    return reject(TabletServerErrorPB::TABLET_NOT_RUNNING,
                  Status::ServiceUnavailable("tablet " + req->tablet_id() + " is not running"));
  }
  // NOT_THE_LEADER, naming the leader when known.
  if (TabletServerErrorPB not_leader; !tablet->replica().CheckLeader(&not_leader)) {
    *resp->mutable_error() = std::move(not_leader);
    LogRejected(ctx, req->tablet_id(), resp->error(), metrics_);
    return ctx->RespondSuccess();
  }
  if (change == consensus::ConfigChange::kAddLearner) {
    tablets_->AddPeerAddress(peer.permanent_uuid(), peer.host(), peer.port());
  }
  LOG(INFO) << "tablet " << req->tablet_id() << ": " << ChangeConfigTypePB_Name(req->type())
            << " of server " << peer.permanent_uuid() << " asked by " << ctx->remote_address().ToString();
  group->ChangeConfig(
      change, consensus::PeerIdFromUuid(peer.permanent_uuid()),
      [resp, ctx, metrics = metrics_, id = req->tablet_id(), type = req->type(),
       who = peer.permanent_uuid()](const Status& s, uint64_t index) {
        if (s.ok()) {
          LOG(INFO) << "tablet " << id << ": " << ChangeConfigTypePB_Name(type) << " of server "
                    << who << " committed at index " << index;
          resp->set_index(index);
        } else {
          const auto code = s.IsServiceUnavailable() ? TabletServerErrorPB::TABLET_NOT_RUNNING
                            : s.IsAborted()          ? TabletServerErrorPB::NOT_THE_LEADER
                                                     : TabletServerErrorPB::INVALID_CONFIG;
          SetError(code, s.CloneAndPrepend("tablet " + id), resp->mutable_error());
          LogRejected(ctx, id, resp->error(), metrics);
        }
        ctx->RespondSuccess();
      });
}

void TabletAdminServiceImpl::AlterSchema(const AlterSchemaRequestPB* req,
                                         AlterSchemaResponsePB* resp, rpc::RpcContext* ctx) {
  if (WrongServer(req->dest_uuid(), resp->mutable_error())) {
    LogRejected(ctx, req->tablet_id(), resp->error(), metrics_);
    return ctx->RespondSuccess();
  }
  resp->clear_error();
  std::shared_ptr<Tablet> tablet = tablets_->Lookup(req->tablet_id());
  if (!tablet) {
    NoSuchTablet(req->tablet_id(), resp);
    LogRejected(ctx, req->tablet_id(), resp->error(), metrics_);
    return ctx->RespondSuccess();
  }
  Tablet* t = tablet.get();
  t->AlterSchemaAsync(*req, resp,
                      [tablet = std::move(tablet), req, resp, ctx, metrics = metrics_] {
                        if (resp->has_error()) {
                          LogRejected(ctx, req->tablet_id(), resp->error(), metrics);
                        }
                        ctx->RespondSuccess();
                      });
}

void TabletAdminServiceImpl::LeaderStepDown(const LeaderStepDownRequestPB* req,
                                            LeaderStepDownResponsePB* resp, rpc::RpcContext* ctx) {
  auto reject = [&](TabletServerErrorPB::Code code, const Status& s) {
    SetError(code, s, resp->mutable_error());
    LogRejected(ctx, req->tablet_id(), resp->error(), metrics_);
    ctx->RespondSuccess();
  };
  if (WrongServer(req->dest_uuid(), resp->mutable_error())) {
    LogRejected(ctx, req->tablet_id(), resp->error(), metrics_);
    return ctx->RespondSuccess();
  }
  resp->clear_error();
  std::shared_ptr<Tablet> tablet = tablets_->Lookup(req->tablet_id());
  if (!tablet) {
    NoSuchTablet(req->tablet_id(), resp);
    LogRejected(ctx, req->tablet_id(), resp->error(), metrics_);
    return ctx->RespondSuccess();
  }
  std::shared_ptr<consensus::RaftGroup> group = tablet->replica().group();
  if (tablet->state() != TabletState::kRunning || !group) {
    return reject(TabletServerErrorPB::TABLET_NOT_RUNNING,
                  Status::ServiceUnavailable("tablet " + req->tablet_id() + " is not running"));
  }
  const consensus::GroupInfo info = group->info();
  const consensus::PeerId self = consensus::PeerIdFromUuid(uuid_);
  if (info.role != consensus::RaftRole::kLeader) {
    const std::string leader =
        info.leader == consensus::kNoPeer ? "" : tablets_->UuidOfPeer(info.leader);
    resp->mutable_error()->set_leader_uuid(leader);
    return reject(TabletServerErrorPB::NOT_THE_LEADER,
                  Status::IllegalState("tablet " + req->tablet_id() +
                                           ": this replica is not the leader",
                                       leader.empty() ? "no leader is known" : "the leader is " + leader));
  }
  std::string target_uuid = req->new_leader_uuid();
  consensus::PeerId target = consensus::kNoPeer;
  if (!target_uuid.empty()) {
    target = consensus::PeerIdFromUuid(target_uuid);
    bool voter = false;
    for (uint64_t v : info.config.voters()) voter |= v == target;
    if (!voter || target == self) {
      return reject(TabletServerErrorPB::INVALID_CONFIG,
                    Status::InvalidArgument("tablet " + req->tablet_id() + ": " + target_uuid +
                                            " is not another voter of the tablet"));
    }
  } else {
    // The first other voter whose server is known (a known server is one the
    // transport can reach).
    for (uint64_t v : info.config.voters()) {
      if (v == self) continue;
      std::string uuid = tablets_->UuidOfPeer(v);
      if (uuid.empty()) continue;
      target = v;
      target_uuid = std::move(uuid);
      break;
    }
    if (target == consensus::kNoPeer) {
      return reject(TabletServerErrorPB::INVALID_CONFIG,
                    Status::IllegalState("tablet " + req->tablet_id() +
                                         " has no other voter to hand leadership to"));
    }
  }
  LOG(INFO) << "tablet " << req->tablet_id() << ": handing leadership to " << target_uuid
            << " on request of " << ctx->remote_address().ToString();
  resp->set_new_leader_uuid(target_uuid);
  TServerMetrics* metrics = metrics_;
  const std::string tablet_id = req->tablet_id();
  group->TransferLeadership(target, [ctx, resp, metrics, tablet_id](const Status& s) {
    if (!s.ok()) {
      resp->clear_new_leader_uuid();
      SetError(s.IsIllegalState()       ? TabletServerErrorPB::NOT_THE_LEADER
               : s.IsInvalidArgument() ? TabletServerErrorPB::INVALID_CONFIG
                                       : TabletServerErrorPB::TABLET_NOT_RUNNING,
               s, resp->mutable_error());
      LogRejected(ctx, tablet_id, resp->error(), metrics);
    } else if (metrics != nullptr) {
      metrics->leader_step_downs->Increment();
    }
    ctx->RespondSuccess();
  });
}

}  // namespace nyala::tserver
