// Tablet::Get: point lookups with one MultiGet, no snapshot, no iterator.
#include <glog/logging.h>

#include <mutex>

#include "common/key_encoding.h"
#include "common/row_block.h"
#include "nyala/arena.h"
#include "tserver/tablet.h"
#include "tserver/tablet_store.h"
#include "tserver/tserver_metrics.h"

namespace nyala::tserver {

namespace {

struct GetScratch {
  std::vector<Cell> key_cells;  // for checking that each key decodes
  std::string keys;
  std::vector<uint32_t> key_end;
  std::vector<Slice> key_slices;
  StoreMultiGet reads;
};

GetScratch* ThreadGetScratch() {
  thread_local GetScratch scratch;
  return &scratch;
}

}  // namespace

void Tablet::Get(const GetRequestPB& req, GetResponsePB* resp, std::string* rows,
                 std::string* indirect) {
  // Linearizable: confirmed leadership, and every write committed before now applied.
  // A read the client let any replica answer takes this replica's applied rows as they
  // are.
  if (TabletServerErrorPB err;
      state() == TabletState::kRunning &&
      (req.replica_selection() == LEADER_ONLY
           ? !replica_->WaitForLinearizableRead(MonoDelta::FromSeconds(10), &err)
           : !replica_->CheckFollowerRead(&err))) {
    *resp->mutable_error() = std::move(err);
    return;
  }
  SharedLock gate(ops_mu_);
  GetLocked(req, resp, rows, indirect, /*memory_only=*/false);
}

bool Tablet::TryGetWithoutBlocking(const GetRequestPB& req, GetResponsePB* resp, std::string* rows,
                                   std::string* indirect) {
  // Without a lease, confirming leadership may wait.
  if (req.replica_selection() == LEADER_ONLY && !replica_->CanReadNow()) return false;
  if (req.replica_selection() != LEADER_ONLY && state() == TabletState::kRunning) {
    if (TabletServerErrorPB err; !replica_->CheckFollowerRead(&err)) {
      *resp->mutable_error() = std::move(err);
      return true;
    }
  }
  if (!ops_mu_.TryLockShared()) return false;
  const bool done = GetLocked(req, resp, rows, indirect, /*memory_only=*/true);
  ops_mu_.UnlockShared();
  return done;
}

bool Tablet::GetLocked(const GetRequestPB& req, GetResponsePB* resp, std::string* rows,
                       std::string* indirect, bool memory_only, int attempt) {
  if (!CheckRunning(resp->mutable_error())) return true;
  resp->clear_error();
  const std::shared_ptr<const TabletSchema> ts = tablet_schema();
  const Schema& schema = ts->schema;
  auto proj_or = ts->MakeProjection(req.projected_columns());
  if (!proj_or.ok()) {
    SetError(TabletServerErrorPB::MISMATCHED_SCHEMA, proj_or.status(), resp->mutable_error());
    return true;
  }
  const std::shared_ptr<const Projection> proj = std::move(proj_or).value();

  GetScratch* g = ThreadGetScratch();
  const int n = req.keys_size();
  // A key that does not decode for the key columns (wrong length, trailing bytes) is
  // the caller's error, not a row that is absent.
  g->key_cells.resize(schema.num_key_columns());
  for (int i = 0; i < n; i++) {
    Arena arena;  // only strings with escaped zeros use it
    if (Status s = DecodeKey(schema, Slice(req.keys(i)), g->key_cells.data(), &arena); !s.ok()) {
      SetError(TabletServerErrorPB::INVALID_KEY,
               Status::InvalidArgument("key " + std::to_string(i) +
                                           " of the Get does not "
                                           "decode for the tablet's key columns",
                                       s.ToString()),
               resp->mutable_error());
      return true;
    }
  }
  g->keys.clear();
  g->key_end.resize(n);
  for (int i = 0; i < n; i++) {
    AppendTabletPrefix(row_prefix(), &g->keys);
    g->keys.append(req.keys(i));
    g->key_end[i] = static_cast<uint32_t>(g->keys.size());
  }
  g->key_slices.resize(n);
  for (int i = 0, start = 0; i < n; i++) {
    g->key_slices[i] = Slice(g->keys.data() + start, g->key_end[i] - start);
    start = static_cast<int>(g->key_end[i]);
  }
  store_->MultiGet(*rows_, nullptr, n, g->key_slices.data(), /*sorted=*/false, &g->reads,
                   memory_only);
  if (!g->reads.status().ok()) {
    g->reads.Clear();
    if (memory_only && g->reads.status().IsIncomplete()) return false;  // needs the disk
    SetError(TabletServerErrorPB::UNKNOWN_ERROR, g->reads.status(), resp->mutable_error());
    return true;
  }

  RowBlockEncoder enc(&proj->schema);
  Row row(&schema);
  auto* found = resp->mutable_found();
  found->Reserve(n);
  int num_found = 0;
  for (int i = 0; i < n; i++) {
    const bool f = g->reads.found(i);
    found->Add(f);
    if (!f) continue;
    row.arena()->Reset();
    Status s = ts->DecodeStoredRow(g->key_slices[i], g->reads.value(i), proj->needs_key, &row);
    if (!s.ok()) {
      g->reads.Clear();
      resp->clear_found();
      if (s.IsIllegalState() && attempt < 2 && tablet_schema() != ts) {
        // A row written under a schema change applied since this Get took its schema:
        // again with the new one.
        return GetLocked(req, resp, rows, indirect, memory_only, attempt + 1);
      }
      SetError(TabletServerErrorPB::UNKNOWN_ERROR,
               s.CloneAndPrepend("tablet " + tablet_id() + ": stored row"), resp->mutable_error());
      LOG(ERROR) << resp->error().status().message();
      return true;
    }
    enc.AppendRow(row.view().cells(), proj->source_index.data());
    num_found++;
  }
  g->reads.Clear();
  enc.Finish(rows, indirect);
  resp->mutable_data()->set_num_rows(num_found);
  // Echoed only for a projection the caller named: for every column (the client's
  // usual Get) the caller has the schema already, and copying, sending and parsing
  // it cost more than a memtable lookup.
  // So is a caller's whose schema is another version than the tablet's.
  if (req.projected_columns_size() > 0 || req.schema_version() != schema.version()) {
    *resp->mutable_projection() = proj->schema_pb;
  }
  if (tablet_metrics_) tablet_metrics_->get_requests->Increment();
  if (tablet_metrics_) tablet_metrics_->get_keys->Increment(n);
  if (metrics_) {
    metrics_->get_keys->Increment(n);
    metrics_->get_rows_found->Increment(num_found);
  }
  return true;
}

}  // namespace nyala::tserver
