#include "master/tablet_rpc_tasks.h"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include "common/flag_tags.h"
#include "common/wire_protocol.h"
#include "rpc/retry.h"
#include "rpc/rpc_controller.h"
#include "rpc/sockaddr.h"
#include "tserver/tserver_admin.proxy.h"

DEFINE_int32(master_tablet_rpc_timeout_ms, 10000,
             "Timeout of each CreateTablet / DeleteTablet / ChangeConfig call from the master "
             "to a tablet server.");
DEFINE_validator(master_tablet_rpc_timeout_ms, [](const char*, int32_t v) { return v > 0; });
TAG_FLAG(master_tablet_rpc_timeout_ms, runtime);

namespace nyala::master {

using tserver::TabletServerErrorPB;

namespace {

// The outcome of an admin call: the RPC status, else the response's error.
Status CallOutcome(const rpc::RpcController& rpc, const TabletServerErrorPB* err,
                   bool not_found_is_ok) {
  if (!rpc.status().ok()) return rpc.status();
  if (err == nullptr) return Status::OK();
  if (not_found_is_ok && err->code() == TabletServerErrorPB::TABLET_NOT_FOUND) return Status::OK();
  Status s = StatusFromPB(err->status());
  if (s.ok()) s = Status::RuntimeError("tablet server error without status");
  return s.CloneAndPrepend(TabletServerErrorPB::Code_Name(err->code()));
}

template <typename Req, typename Resp>
struct Call {
  Req req;
  Resp resp;
  rpc::RpcController rpc;
};

}  // namespace

bool TabletRpcTasks::IsDue(const Key& key, MonoTime now) const {
  MutexLock l(mu_);
  auto it = tasks_.find(key);
  return it == tasks_.end() || (!it->second.in_flight && it->second.next_attempt <= now);
}

bool TabletRpcTasks::Start(const Key& key, MonoTime now) {
  MutexLock l(mu_);
  TaskState& t = tasks_[key];
  if (t.in_flight || t.next_attempt > now) return false;
  t.in_flight = true;
  t.attempts++;
  return true;
}

void TabletRpcTasks::Finish(const Key& key, Status s,
                            std::optional<tserver::TabletServerErrorPB::Code> ts_error,
                            uint32_t schema_version) {
  {
    MutexLock l(mu_);
    auto it = tasks_.find(key);
    if (it != tasks_.end()) {
      if (s.ok()) {
        tasks_.erase(it);
      } else {
        it->second.in_flight = false;
        it->second.next_attempt =
            MonoTime::Now() + rpc::ComputeBackoff(it->second.attempts - 1,
                                                  MonoDelta::FromMilliseconds(100),
                                                  MonoDelta::FromSeconds(5));
      }
    }
    results_.push_back(Result{key, std::move(s), ts_error, schema_version});
  }
  Wake();
}

void TabletRpcTasks::SendCreate(const std::string& address, tserver::CreateTabletRequestPB req,
                                MonoTime now) {
  Key key{Kind::kCreate, req.dest_uuid(), req.tablet_id()};
  if (!Start(key, now)) return;
  auto addr = rpc::ResolveAddress(address);
  if (!addr.ok()) return Finish(key, addr.status());
  using C = Call<tserver::CreateTabletRequestPB, tserver::CreateTabletResponsePB>;
  auto call = std::make_shared<C>();
  call->req = std::move(req);
  call->rpc.set_timeout(MonoDelta::FromMilliseconds(FLAGS_master_tablet_rpc_timeout_ms));
  tserver::TabletServerAdminServiceProxy proxy(messenger_, *addr);
  auto self = shared_from_this();
  proxy.CreateTabletAsync(call->req, &call->resp, &call->rpc, [self, call, key] {
    self->Finish(key, CallOutcome(call->rpc, call->resp.has_error() ? &call->resp.error() : nullptr,
                                  /*not_found_is_ok=*/false));
  });
}

void TabletRpcTasks::SendDelete(const std::string& address, tserver::DeleteTabletRequestPB req,
                                MonoTime now) {
  Key key{Kind::kDelete, req.dest_uuid(), req.tablet_id()};
  if (!Start(key, now)) return;
  auto addr = rpc::ResolveAddress(address);
  if (!addr.ok()) return Finish(key, addr.status());
  using C = Call<tserver::DeleteTabletRequestPB, tserver::DeleteTabletResponsePB>;
  auto call = std::make_shared<C>();
  call->req = std::move(req);
  call->rpc.set_timeout(MonoDelta::FromMilliseconds(FLAGS_master_tablet_rpc_timeout_ms));
  tserver::TabletServerAdminServiceProxy proxy(messenger_, *addr);
  auto self = shared_from_this();
  proxy.DeleteTabletAsync(call->req, &call->resp, &call->rpc, [self, call, key] {
    self->Finish(key, CallOutcome(call->rpc, call->resp.has_error() ? &call->resp.error() : nullptr,
                                  /*not_found_is_ok=*/true));
  });
}

template <typename Req, typename Resp, typename AsyncMethod>
void TabletRpcTasks::SendToLeader(Kind kind, const std::string& address, Req req, MonoTime now,
                                  AsyncMethod method) {
  Key key{kind, req.dest_uuid(), req.tablet_id()};
  if (!Start(key, now)) return;
  auto addr = rpc::ResolveAddress(address);
  if (!addr.ok()) return Finish(key, addr.status());
  auto call = std::make_shared<Call<Req, Resp>>();
  call->req = std::move(req);
  call->rpc.set_timeout(MonoDelta::FromMilliseconds(FLAGS_master_tablet_rpc_timeout_ms));
  tserver::TabletServerAdminServiceProxy proxy(messenger_, *addr);
  auto self = shared_from_this();
  (proxy.*method)(call->req, &call->resp, &call->rpc, [self, call, key] {
    const TabletServerErrorPB* err = call->resp.has_error() ? &call->resp.error() : nullptr;
    std::optional<TabletServerErrorPB::Code> code;
    if (call->rpc.status().ok() && err != nullptr) code = err->code();
    self->Finish(key, CallOutcome(call->rpc, err, /*not_found_is_ok=*/false), code);
  });
}

void TabletRpcTasks::SendChangeConfig(const std::string& address,
                                      tserver::ChangeConfigRequestPB req, MonoTime now) {
  SendToLeader<tserver::ChangeConfigRequestPB, tserver::ChangeConfigResponsePB>(
      Kind::kChangeConfig, address, std::move(req), now,
      &tserver::TabletServerAdminServiceProxy::ChangeConfigAsync);
}

void TabletRpcTasks::SendStepDown(const std::string& address, tserver::LeaderStepDownRequestPB req,
                                  MonoTime now) {
  SendToLeader<tserver::LeaderStepDownRequestPB, tserver::LeaderStepDownResponsePB>(
      Kind::kStepDown, address, std::move(req), now,
      &tserver::TabletServerAdminServiceProxy::LeaderStepDownAsync);
}

void TabletRpcTasks::SendAlterSchema(const std::string& address,
                                     tserver::AlterSchemaRequestPB req, MonoTime now) {
  Key key{Kind::kAlterSchema, req.dest_uuid(), req.tablet_id()};
  if (!Start(key, now)) return;
  auto addr = rpc::ResolveAddress(address);
  if (!addr.ok()) return Finish(key, addr.status());
  using C = Call<tserver::AlterSchemaRequestPB, tserver::AlterSchemaResponsePB>;
  auto call = std::make_shared<C>();
  call->req = std::move(req);
  call->rpc.set_timeout(MonoDelta::FromMilliseconds(FLAGS_master_tablet_rpc_timeout_ms));
  tserver::TabletServerAdminServiceProxy proxy(messenger_, *addr);
  auto self = shared_from_this();
  proxy.AlterSchemaAsync(call->req, &call->resp, &call->rpc, [self, call, key] {
    const TabletServerErrorPB* err = call->resp.has_error() ? &call->resp.error() : nullptr;
    std::optional<TabletServerErrorPB::Code> code;
    if (call->rpc.status().ok() && err != nullptr) code = err->code();
    self->Finish(key, CallOutcome(call->rpc, err, /*not_found_is_ok=*/false), code,
                 call->resp.schema_version());
  });
}

std::vector<TabletRpcTasks::Result> TabletRpcTasks::TakeResults() {
  MutexLock l(mu_);
  std::vector<Result> out;
  out.swap(results_);
  return out;
}

size_t TabletRpcTasks::NumInFlight() const {
  MutexLock l(mu_);
  size_t n = 0;
  for (const auto& [k, t] : tasks_) n += t.in_flight ? 1 : 0;
  return n;
}

std::map<std::string, int> TabletRpcTasks::InFlightPerServer() const {
  MutexLock l(mu_);
  std::map<std::string, int> out;
  for (const auto& [k, t] : tasks_) {
    if (t.in_flight) out[k.ts_uuid]++;
  }
  return out;
}

size_t TabletRpcTasks::NumTasks() const {
  MutexLock l(mu_);
  return tasks_.size();
}

void TabletRpcTasks::Wake() {
  {
    MutexLock l(wake_mu_);
    woken_ = true;
  }
  wake_cv_.notify_one();
}

void TabletRpcTasks::WaitForWork(MonoDelta max_wait) {
  UniqueLock l(wake_mu_);
  wake_cv_.wait_for(l, std::chrono::nanoseconds(max_wait.ToNanoseconds()),
                    [this]() REQUIRES(wake_mu_) { return woken_; });
  woken_ = false;
}

}  // namespace nyala::master
