// Table::Get and Table::MultiGet: keys grouped per tablet, one Get RPC per tablet,
// sent in parallel (a sync call when there is only one); failed groups retried until
// the deadline. A one-key Get of every column first tries the tablet's shared RPC
// (get_coalescer.h).
#include <unordered_map>

#include "client/client-internal.h"
#include "client/get_coalescer.h"
#include "client/key_util.h"
#include "client/latch.h"
#include "client/scan_batch_data.h"
#include "client/tablet_rpc.h"
#include "common/result.h"
#include "common/semaphore.h"
#include "nyala/client.h"
#include "tserver/tserver.pb.h"
#include "tserver/tserver.proxy.h"

namespace nyala::client {
namespace internal {

// A caller in a GetCoalescer queue; lives on its stack.
struct GetCoalescer::Waiter {
  const std::string* key = nullptr;  // encoded primary key
  Semaphore wake;
  // Written under the queue's mutex or before `wake` is released; read after.
  bool lead = false;                   // this caller sends the next RPC
  std::shared_ptr<const void> answer;  // the shared RPC's outcome (a GetCall::Shared)
  int index = -1;                      // this caller's key in it
};

class GetCall {
 public:
  static Result<GetResult> Run(const Table& table, const std::vector<Row>& keys,
                               const std::vector<std::string>& projection,
                               ReplicaSelection selection);

 private:
  struct Group {
    TabletPtr tablet;
    std::shared_ptr<RemoteTabletServer> server;  // the replica asked
    std::vector<int> key_indexes;
    tserver::GetRequestPB req;
    tserver::GetResponsePB resp;
    rpc::RpcController rpc;
  };
  // The outcome of a shared RPC, read by every caller it carried.
  struct SharedCall {
    tserver::GetRequestPB req;
    tserver::GetResponsePB resp;
    rpc::RpcController rpc;
  };
  struct Shared {
    bool ok = false;          // answered, and the answer is well formed
    std::vector<int> row_of;  // per key: its row in `batch`, or -1 when missing
    ScanBatch batch;          // the rows found (owned by the SharedCall)
  };
  // A one-key Get of every column through the tablet's queue. True when `result` is
  // filled; false when the shared RPC failed and the caller should retry alone.
  static bool RunShared(ClientData* data, const std::string& table_id, const TabletPtr& tablet,
                        const std::string& key, const std::shared_ptr<const Schema>& proj,
                        int schema_version, MonoTime deadline, GetResult* result);
  // Sends the keys of `self` and of the callers queued behind it; answers them all
  // and hands the queue on.
  static void Lead(ClientData* data, const std::string& table_id, const TabletPtr& tablet,
                   GetCoalescer::Queue* q, GetCoalescer::Waiter* self,
                   const std::shared_ptr<const Schema>& proj, int schema_version,
                   MonoTime deadline);

  // Records the rows of a successful group's response in `result`.
  static Status AddGroupRows(const std::shared_ptr<Group>& g,
                             const std::shared_ptr<const Schema>& proj, GetResult* result);
};

Status GetCall::AddGroupRows(const std::shared_ptr<Group>& g,
                             const std::shared_ptr<const Schema>& proj, GetResult* result) {
  const tserver::GetResponsePB& resp = g->resp;
  if (resp.found_size() != int(g->key_indexes.size())) {
    return Status::Corruption("Get response has " + std::to_string(resp.found_size()) +
                              " found flags for " + std::to_string(g->key_indexes.size()) +
                              " keys");
  }
  int num_found = 0;
  for (bool f : resp.found()) num_found += f;
  if (resp.data().num_rows() != num_found) {
    return Status::Corruption("Get response has " + std::to_string(resp.data().num_rows()) +
                              " rows for " + std::to_string(num_found) + " found keys");
  }
  if (num_found == 0) return Status::OK();
  ScanBatch batch;
  RETURN_NOT_OK(DecodeRowBlock(g->rpc, resp.data(), proj, g, &batch));
  const int b = int(result->batches_.size());
  result->batches_.push_back(std::move(batch));
  int row = 0;
  for (size_t i = 0; i < g->key_indexes.size(); i++) {
    if (resp.found(int(i))) result->locations_[g->key_indexes[i]] = GetResult::Location{b, row++};
  }
  return Status::OK();
}

bool GetCall::RunShared(ClientData* data, const std::string& table_id, const TabletPtr& tablet,
                        const std::string& key, const std::shared_ptr<const Schema>& proj,
                        int schema_version, MonoTime deadline, GetResult* result) {
  GetCoalescer::Queue* q = data->get_coalescer()->QueueFor(tablet->tablet_id);
  GetCoalescer::Waiter me;
  me.key = &key;
  bool queued;
  {
    MutexLock l(q->mu);
    queued = q->busy;
    if (queued) {
      q->waiting.push_back(&me);
    } else {
      q->busy = true;
      me.lead = true;
    }
  }
  // A queued caller always waits for its wake-up, even when me.lead already reads
  // true: a leader sets it under the queue's mutex and releases `wake` after. A caller
  // that went ahead on `lead` alone could return, and a later Waiter on the same
  // stack address would take that late release for its own answer.
  if (queued) me.wake.Acquire();  // answered, or made the next leader
  if (me.lead) Lead(data, table_id, tablet, q, &me, proj, schema_version, deadline);
  const auto* shared = static_cast<const Shared*>(me.answer.get());
  if (!shared->ok) return false;
  result->locations_.assign(1, GetResult::Location{});
  const int row = shared->row_of[me.index];
  if (row >= 0) {
    result->batches_.emplace_back();
    ScanBatchData::Share(shared->batch, &result->batches_.back());
    result->locations_[0] = GetResult::Location{0, row};
  }
  return true;
}

void GetCall::Lead(ClientData* data, const std::string& table_id, const TabletPtr& tablet,
                   GetCoalescer::Queue* q, GetCoalescer::Waiter* self,
                   const std::shared_ptr<const Schema>& proj, int schema_version,
                   MonoTime deadline) {
  std::vector<GetCoalescer::Waiter*> batch{self};
  {
    MutexLock l(q->mu);
    while (!q->waiting.empty() && batch.size() < size_t(GetCoalescer::kMaxKeys)) {
      batch.push_back(q->waiting.front());
      q->waiting.pop_front();
    }
  }
  auto call = std::make_shared<SharedCall>();
  auto shared = std::make_shared<Shared>();
  call->req.set_tablet_id(tablet->tablet_id);
  call->req.set_schema_version(schema_version);
  for (GetCoalescer::Waiter* w : batch) call->req.add_keys(*w->key);
  auto server = tablet->leader();
  auto proxy = server ? server->GetProxy(data->messenger())
                      : Result<std::shared_ptr<tserver::TabletServerServiceProxy>>(
                            Status::NotFound("no replica"));
  if (proxy.ok()) {
    call->rpc.set_timeout(AttemptTimeout(*tablet, data->rpc_timeout(), deadline));
    (void)(*proxy)->Get(call->req, &call->resp, &call->rpc);  // verdict below
    data->get_coalescer()->Count(int64_t(batch.size()));
    TabletRpcVerdict v = ClassifyReplicaRpc(*tablet, server.get(), call->rpc,
                                            call->resp.has_error() ? &call->resp.error() : nullptr);
    const tserver::GetResponsePB& resp = call->resp;
    if (v.action == TabletRpcAction::kRelookup) {
      data->meta_cache()->InvalidateTablet(table_id, tablet->tablet_id);
    }
    if (v.action == TabletRpcAction::kSuccess && resp.found_size() == int(batch.size())) {
      shared->row_of.resize(batch.size(), -1);
      int rows = 0;
      for (size_t i = 0; i < batch.size(); i++) {
        if (resp.found(int(i))) shared->row_of[i] = rows++;
      }
      // A projection in the answer: the tablet has another schema version, and its
      // columns may not be the Table's (Run asks again, naming them).
      shared->ok =
          rows == resp.data().num_rows() && !resp.has_projection() &&
          (rows == 0 || DecodeRowBlock(call->rpc, resp.data(), proj, call, &shared->batch).ok());
    }
  }
  // Answer everyone before waking anyone: a woken caller's Waiter may go at once.
  for (size_t i = 0; i < batch.size(); i++) {
    batch[i]->answer = shared;
    batch[i]->index = int(i);
  }
  GetCoalescer::Waiter* next = nullptr;
  {
    MutexLock l(q->mu);
    if (q->waiting.empty()) {
      q->busy = false;
    } else {
      next = q->waiting.front();
      q->waiting.pop_front();
      next->lead = true;
    }
  }
  // The next leader first: its RPC can be out while the callers answered here are
  // still being woken, one system call each.
  if (next) next->wake.Release();
  for (size_t i = 1; i < batch.size(); i++) batch[i]->wake.Release();
}

Result<GetResult> GetCall::Run(const Table& table, const std::vector<Row>& keys,
                               const std::vector<std::string>& projection,
                               ReplicaSelection selection) {
  ClientData* data = DataOf(*table.client());
  const Schema& schema = table.schema();
  // Every column: the table's ready-made projection, and no names on the wire (the
  // server's default is every column, with a projection it does not rebuild either).
  std::shared_ptr<const Schema> proj_schema = table.full_projection_;
  if (!projection.empty()) {
    ASSIGN_OR_RETURN(Schema proj, schema.Project(projection));
    proj_schema = std::make_shared<const Schema>(std::move(proj));
  }

  std::vector<std::string> enc_keys(keys.size()), pkeys(keys.size());
  for (size_t i = 0; i < keys.size(); i++) {
    RETURN_NOT_OK_PREPEND(EncodePrimaryKey(schema, keys[i], &enc_keys[i]),
                          "key " + std::to_string(i));
    RETURN_NOT_OK(table.partition_schema().EncodePartitionKey(keys[i], &pkeys[i]));
  }

  // The columns named on the wire: none for every column, until a tablet answers with
  // a projection of its own (its schema is another version than the Table's): then
  // the Table's columns, by name.
  std::vector<std::string> wire_projection = projection;
  GetResult result;
  const MonoTime deadline = MonoTime::Now() + data->rpc_timeout();
  const bool leader_only = selection == ReplicaSelection::kLeaderOnly;
  if (keys.size() == 1 && projection.empty() && leader_only && data->get_coalescer()) {
    TabletPtr tablet = data->meta_cache()->LookupFast(table.id(), pkeys[0]);
    if (tablet && tablet->leader() &&
        RunShared(data, table.id(), tablet, enc_keys[0], proj_schema, schema.version(), deadline,
                  &result)) {
      return result;
    }
  }
  result.locations_.assign(keys.size(), GetResult::Location{});
  std::vector<int> pending(keys.size());
  for (size_t i = 0; i < keys.size(); i++) pending[i] = int(i);
  Status last_error;
  bool leader_search = false;  // the last round moved a tablet's leader hint
  for (int attempt = 0; !pending.empty(); attempt++) {
    if (attempt > 0) {
      if (!rpc::BackoffBeforeRetry(attempt, deadline,
                                   leader_search ? LeaderSearchMaxBackoff()
                                                 : MonoDelta::FromSeconds(2))) {
        return Status::TimedOut("Get did not finish before its deadline", last_error.ToString());
      }
    }
    leader_search = false;
    // Group the pending keys by tablet.
    std::unordered_map<std::string, std::shared_ptr<Group>> groups;
    for (int k : pending) {
      TabletPtr tablet = data->meta_cache()->LookupFast(table.id(), pkeys[k]);
      if (!tablet) {
        auto r = data->meta_cache()->LookupTabletSync(table.id(), pkeys[k], deadline,
                                                      LookupMode::kExact);
        if (!r.ok() && IsNoCoveringTablet(r.status())) continue;  // no tablet: no row
        // Anything else, a NotFound from the master too (the table is gone), is an
        // error, never an absent row.
        RETURN_NOT_OK_PREPEND(r.status(), "looking up the tablet of a key");
        tablet = *r;
      }
      auto& g = groups[tablet->tablet_id];
      if (!g) {
        g = std::make_shared<Group>();
        g->tablet = tablet;
        g->req.set_tablet_id(tablet->tablet_id);
        for (const std::string& n : wire_projection) g->req.add_projected_columns(n);
        g->req.set_schema_version(schema.version());
        if (!leader_only) g->req.set_replica_selection(tserver::ANY_REPLICA);
      }
      g->key_indexes.push_back(k);
      g->req.add_keys(enc_keys[k]);
    }
    pending.clear();
    // One tablet (a single Get, or keys of one tablet): a sync call, whose caller
    // reads its own answer (one thread wakeup less than going through a reactor).
    const bool sync = groups.size() == 1;
    CountDownLatch latch(int(groups.size()));
    for (auto& [id, g] : groups) {
      g->server = leader_only ? g->tablet->leader()
                              : g->tablet->ClosestReplica(data->replica_pick() + size_t(attempt));
      Result<std::shared_ptr<tserver::TabletServerServiceProxy>> proxy =
          g->server ? g->server->GetProxy(data->messenger())
                 : Result<std::shared_ptr<tserver::TabletServerServiceProxy>>(
                       Status::NotFound("no replica"));
      if (!proxy.ok()) {
        g->rpc.Reset();
        latch.CountDown();
        continue;
      }
      g->rpc.set_timeout(AttemptTimeout(*g->tablet, data->rpc_timeout(), deadline));
      if (sync) {
        (void)(*proxy)->Get(g->req, &g->resp, &g->rpc);  // verdict below
        latch.CountDown();
      } else {
        (*proxy)->GetAsync(g->req, &g->resp, &g->rpc, [&latch] { latch.CountDown(); });
      }
    }
    latch.Wait();
    for (auto& [id, g] : groups) {
      if (!g->rpc.finished()) {  // no usable replica: look it up again
        data->meta_cache()->InvalidateTablet(table.id(), id);
        last_error = Status::ServiceUnavailable("no reachable replica of tablet " + id);
        pending.insert(pending.end(), g->key_indexes.begin(), g->key_indexes.end());
        continue;
      }
      TabletRpcVerdict v = ClassifyReplicaRpc(*g->tablet, g->server.get(), g->rpc,
                                              g->resp.has_error() ? &g->resp.error() : nullptr);
      if (v.action == TabletRpcAction::kFail) {
        return v.status.CloneAndPrepend("Get from tablet " + id);
      }
      if (v.action != TabletRpcAction::kSuccess) {
        if (v.action == TabletRpcAction::kRelookup) {
          data->meta_cache()->InvalidateTablet(table.id(), id);
        }
        last_error = v.status;
        leader_search |= v.next_replica;
        pending.insert(pending.end(), g->key_indexes.begin(), g->key_indexes.end());
        continue;
      }
      if (g->req.projected_columns_size() == 0 && g->resp.has_projection()) {
        if (wire_projection.empty()) {
          for (const ColumnSchema& c : proj_schema->columns()) wire_projection.push_back(c.name());
        }
        last_error = Status::IllegalState("tablet " + id + " has another schema version");
        pending.insert(pending.end(), g->key_indexes.begin(), g->key_indexes.end());
        continue;
      }
      RETURN_NOT_OK(AddGroupRows(g, proj_schema, &result));
    }
  }
  return result;
}

}  // namespace internal

Result<GetResult> Table::Get(const Row& key, const std::vector<std::string>& projection,
                             ReplicaSelection selection) const {
  return internal::GetCall::Run(*this, std::vector<Row>{key}, projection, selection);
}

Result<GetResult> Table::MultiGet(const std::vector<Row>& keys,
                                  const std::vector<std::string>& projection,
                                  ReplicaSelection selection) const {
  return internal::GetCall::Run(*this, keys, projection, selection);
}

}  // namespace nyala::client
