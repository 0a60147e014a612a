// Scanner and Scanner::Data: planning (pruning) and the per-tablet Scan calls.
#include "client/scanner.h"

#include <glog/logging.h>

#include "client/client-internal.h"
#include "client/key_util.h"
#include "client/partition_pruner.h"
#include "client/scan_batch_data.h"
#include "client/tablet_rpc.h"
#include "common/result.h"
#include "rpc/retry.h"
#include "tserver/tserver.pb.h"
#include "tserver/tserver.proxy.h"

namespace nyala::client {

using internal::LookupMode;
using internal::TabletPtr;
using internal::TabletRpcAction;

namespace {
struct ScanCallState {
  rpc::RpcController rpc;
  tserver::ScanResponsePB resp;
};
}  // namespace

Scanner::Data::Data(std::shared_ptr<const Table> table)
    : table_(std::move(table)),
      cd_(internal::DataOf(*table_->client())),
      timeout_(cd_->rpc_timeout()),
      keep_alive_(std::make_shared<internal::KeepAliveState>()) {}

Scanner::Data::~Data() { Close(); }

Status Scanner::Data::Open() {
  RETURN_NOT_OK(CheckNotOpen());
  const Schema& schema = table_->schema();
  std::vector<std::string> names = projection_;
  if (names.empty()) {
    for (const ColumnSchema& c : schema.columns()) names.push_back(c.name());
  }
  ASSIGN_OR_RETURN(Schema proj, schema.Project(names));
  projection_ = std::move(names);
  proj_schema_ = std::make_shared<const Schema>(std::move(proj));
  key_range_ = KeyRangeFromPredicates(schema, predicates_);
  IntersectKeyRange(lower_key_, upper_key_, &key_range_);
  if (!lower_key_.empty() && !upper_key_.empty() && lower_key_ >= upper_key_) {
    key_range_.empty = true;
  }
  RETURN_NOT_OK(PlanTablets());
  open_ = true;
  StartKeepAliveTimer();
  return Status::OK();
}

Status Scanner::Data::PlanTablets() {
  auto pruner = internal::PartitionPruner::Create(table_->schema(), table_->partition_schema(),
                                                  predicates_, key_range_);
  const MonoTime deadline = MonoTime::Now() + cd_->admin_timeout();
  std::string key = partition_key_start_;
  plan_.clear();
  for (size_t i = 0; i <= PartitionSchema::kMaxPartitions; i++) {
    ASSIGN_OR_RETURN(TabletPtr t, cd_->meta_cache()->LookupTabletSync(table_->id(), key, deadline,
                                                                      LookupMode::kOrNext));
    if (!t) break;
    if (!partition_key_end_.empty() &&
        Slice(t->partition.partition_key_start).compare(Slice(partition_key_end_)) >= 0) {
      break;
    }
    if (pruner.ShouldScan(t->partition)) plan_.push_back(t);
    if (t->partition.partition_key_end.empty()) break;
    key = t->partition.partition_key_end;
  }
  return Status::OK();
}

bool Scanner::Data::HasMoreRows() const {
  if (!open_ || (limit_ > 0 && rows_returned_ >= limit_)) return false;
  return current_ != nullptr || next_tablet_ < plan_.size();
}

Status Scanner::Data::NextBatch(ScanBatch* batch) {
  if (!open_) return Status::IllegalState("scanner not open");
  if (!HasMoreRows()) {
    internal::ScanBatchData::MakeEmpty(proj_schema_, batch);
    return Status::OK();
  }
  if (!current_) {
    current_ = plan_[next_tablet_++];
    scanner_id_.clear();
    call_seq_id_ = 0;
    resume_key_.clear();
  }
  return ScanCall(batch);
}

Status Scanner::Data::ScanCall(ScanBatch* batch) {
  const bool new_scan = scanner_id_.empty();
  tserver::ScanRequestPB req;
  if (new_scan) {
    auto* ns = req.mutable_new_scan_request();
    ns->set_tablet_id(current_->tablet_id);
    for (const std::string& n : projection_) ns->add_projected_columns(n);
    for (const ColumnPredicate& p : predicates_) p.ToPB(ns->add_predicates());
    ns->set_start_primary_key(Slice(resume_key_).compare(Slice(key_range_.start)) > 0
                                  ? resume_key_
                                  : key_range_.start);
    ns->set_stop_primary_key(key_range_.stop);
    if (limit_ > 0) ns->set_limit(uint64_t(limit_ - rows_returned_));
    ns->set_read_mode(read_mode_ == ReadMode::kReadAtSnapshot ? tserver::READ_AT_SNAPSHOT
                                                              : tserver::READ_LATEST);
    ns->set_schema_version(table_->schema().version());
    if (selection_ != ReplicaSelection::kLeaderOnly) {
      ns->set_replica_selection(tserver::ANY_REPLICA);
    }
  } else {
    req.set_scanner_id(scanner_id_);
    req.set_call_seq_id(call_seq_id_);
  }
  req.set_batch_size_bytes(batch_size_bytes_);

  const MonoTime deadline = MonoTime::Now() + timeout_;
  std::shared_ptr<ScanCallState> st;
  for (int attempt = 0;; attempt++) {
    if (new_scan) {
      current_server_ = selection_ == ReplicaSelection::kLeaderOnly
                            ? current_->leader()
                            : current_->ClosestReplica(cd_->replica_pick() + replicas_failed_);
    }
    std::shared_ptr<tserver::TabletServerServiceProxy> proxy;
    internal::TabletRpcVerdict v{
        TabletRpcAction::kRelookup,
        Status::NotFound("tablet " + current_->tablet_id + " has no live replica")};
    if (current_server_) {
      auto p = current_server_->GetProxy(cd_->messenger());
      if (p.ok()) {
        proxy = *p;
      } else {
        v.status = p.status();
      }
    }
    if (proxy) {
      st = std::make_shared<ScanCallState>();
      st->rpc.set_timeout(internal::AttemptTimeout(*current_, timeout_, deadline));
      (void)proxy->Scan(req, &st->resp, &st->rpc);
      // A scan continues on its scanner's server; a new one goes to the leader.
      const tserver::TabletServerErrorPB* err = st->resp.has_error() ? &st->resp.error() : nullptr;
      v = new_scan ? internal::ClassifyReplicaRpc(*current_, current_server_.get(), st->rpc, err)
                   : internal::ClassifyTabletRpc(st->rpc, err);
    }
    if (v.action == TabletRpcAction::kSuccess) {
      MutexLock l(keep_alive_->mu);
      keep_alive_->proxy = proxy;
      keep_alive_->last_used = MonoTime::Now();
      break;
    }
    const std::string where =
        "scan of tablet " + current_->tablet_id + " on tablet server " +
        (current_server_ ? current_server_->ToString() : std::string("(none)"));
    if (!new_scan) {
      if (st && st->resp.has_error() &&
          st->resp.error().code() == tserver::TabletServerErrorPB::SCANNER_EXPIRED) {
        return Status::NotFound(where + ": the scanner expired", v.status.ToString());
      }
      // A timed-out call may have advanced the scanner; a new scan from the last key
      // returned does not depend on what it did.
      const bool lost = v.action == TabletRpcAction::kRelookup ||
                        (st && st->rpc.status().IsTimedOut()) ||
                        (st && st->resp.has_error() &&
                         (st->resp.error().code() == tserver::TabletServerErrorPB::TABLET_NOT_RUNNING ||
                          st->resp.error().code() == tserver::TabletServerErrorPB::TABLET_FAILED));
      if (lost && current_->replicas.size() > 1) {
        // Another replica leads now, or will: a new scan there, from the key after the
        // last row returned (client.h says what a resumed scan guarantees).
        LOG(INFO) << where << " failed (" << v.status.ToString() << "); resuming on the leader after "
                  << rows_returned_ << " rows";
        current_->MarkFollower(current_server_.get());
        replicas_failed_++;
        scanner_id_.clear();
        call_seq_id_ = 0;
        return ScanCall(batch);
      }
      if (v.action == TabletRpcAction::kRelookup) {
        return Status::NetworkError(where +
                                        ": tablet server lost in the middle of the scan after " +
                                        std::to_string(rows_returned_) + " rows",
                                    v.status.ToString());
      }
    }
    if (v.action == TabletRpcAction::kFail) return v.status.CloneAndPrepend(where);
    if (v.action == TabletRpcAction::kRelookup) {
      cd_->meta_cache()->InvalidateTablet(table_->id(), current_->tablet_id);
      auto t = cd_->meta_cache()->LookupTabletSync(
          table_->id(), current_->partition.partition_key_start, deadline, LookupMode::kExact);
      if (!t.ok() && internal::IsNoCoveringTablet(t.status())) {
        // The tablet's range partition was dropped: its rows are gone, and the scan
        // goes on with the next tablet.
        LOG(INFO) << where << ": its range partition was dropped; skipping it";
        current_ = nullptr;
        scanner_id_.clear();
        internal::ScanBatchData::MakeEmpty(proj_schema_, batch);
        return Status::OK();
      }
      if (!t.ok() && t.status().IsNotFound()) {
        return Status::NotFound("table " + table_->name() + " was deleted during the scan",
                                t.status().ToString());
      }
      if (t.ok()) {
        if ((*t)->tablet_id != current_->tablet_id) {
          // Another tablet holds the partition now: a new scan there, from the key
          // after the last row returned.
          scanner_id_.clear();
          call_seq_id_ = 0;
          current_ = *t;
          return ScanCall(batch);
        }
        current_ = *t;
      }
    }
    if (new_scan && selection_ != ReplicaSelection::kLeaderOnly) replicas_failed_++;
    if (!rpc::BackoffBeforeRetry(attempt, deadline,
                                 v.next_replica ? internal::LeaderSearchMaxBackoff()
                                                : MonoDelta::FromSeconds(2))) {
      return Status::TimedOut(where + ": no answer before the deadline", v.status.ToString());
    }
  }

  const tserver::ScanResponsePB& resp = st->resp;
  if (new_scan) scanner_id_ = resp.scanner_id();
  int64_t max_rows = limit_ > 0 ? limit_ - rows_returned_ : -1;
  RETURN_NOT_OK_PREPEND(
      internal::DecodeRowBlock(st->rpc, resp.data(), proj_schema_, st, batch, max_rows),
      "scan of tablet " + current_->tablet_id);
  rows_returned_ += batch->num_rows();
  if (!resp.last_primary_key().empty()) {
    resume_key_ = resp.last_primary_key();
    resume_key_.push_back('\0');
  }
  if (!resp.has_more_results() || scanner_id_.empty()) {
    current_ = nullptr;
    scanner_id_.clear();
  } else {
    call_seq_id_++;
    if (limit_ > 0 && rows_returned_ >= limit_) Close();
  }
  {
    MutexLock l(keep_alive_->mu);
    keep_alive_->scanner_id = scanner_id_;
  }
  return Status::OK();
}

Status Scanner::Data::KeepAlive() {
  if (scanner_id_.empty() || !current_server_) return Status::OK();
  ASSIGN_OR_RETURN(auto proxy, current_server_->GetProxy(cd_->messenger()));
  tserver::ScannerKeepAliveRequestPB req;
  req.set_scanner_id(scanner_id_);
  tserver::ScannerKeepAliveResponsePB resp;
  rpc::RpcController rpc;
  rpc.set_timeout(timeout_);
  RETURN_NOT_OK(proxy->ScannerKeepAlive(req, &resp, &rpc));
  if (resp.has_error()) {
    Status s = internal::TabletServerErrorToStatus(resp.error());
    if (resp.error().code() == tserver::TabletServerErrorPB::SCANNER_EXPIRED) {
      return Status::NotFound("scanner expired", s.ToString());
    }
    return s;
  }
  MutexLock l(keep_alive_->mu);
  keep_alive_->last_used = MonoTime::Now();
  return Status::OK();
}

void Scanner::Data::Close() {
  {
    MutexLock l(keep_alive_->mu);
    keep_alive_->scanner_id.clear();
  }
  if (!scanner_id_.empty() && current_server_) {
    auto proxy = current_server_->GetProxy(cd_->messenger());
    if (proxy.ok()) {
      tserver::ScanRequestPB req;
      req.set_scanner_id(scanner_id_);
      req.set_call_seq_id(call_seq_id_);
      req.set_close_scanner(true);
      tserver::ScanResponsePB resp;
      rpc::RpcController rpc;
      rpc.set_timeout(std::min(timeout_, MonoDelta::FromSeconds(2)));
      WARN_NOT_OK((*proxy)->Scan(req, &resp, &rpc), "closing a scanner");
    }
  }
  scanner_id_.clear();
  current_ = nullptr;
  next_tablet_ = plan_.size();
}

void Scanner::Data::StartKeepAliveTimer() {
  if (keep_alive_period_ <= MonoDelta()) return;
  {
    MutexLock l(keep_alive_->mu);
    keep_alive_->period = keep_alive_period_;
  }
  struct Tick {
    static void Run(std::weak_ptr<internal::KeepAliveState> w, internal::TimerQueue* timers) {
      auto ka = w.lock();
      if (!ka) return;
      MonoDelta period;
      {
        MutexLock l(ka->mu);
        period = ka->period;
        if (!ka->scanner_id.empty() && ka->proxy && MonoTime::Now() - ka->last_used >= period) {
          struct Call {
            tserver::ScannerKeepAliveRequestPB req;
            tserver::ScannerKeepAliveResponsePB resp;
            rpc::RpcController rpc;
          };
          auto call = std::make_shared<Call>();
          call->req.set_scanner_id(ka->scanner_id);
          call->rpc.set_timeout(period);
          ka->last_used = MonoTime::Now();
          ka->keep_alives_sent++;
          ka->proxy->ScannerKeepAliveAsync(call->req, &call->resp, &call->rpc, [call] {});
        }
      }
      timers->Schedule(MonoDelta::FromNanoseconds(period.ToNanoseconds() / 2),
                       [w, timers] { Run(w, timers); });
    }
  };
  internal::TimerQueue* timers = cd_->timers();
  std::weak_ptr<internal::KeepAliveState> w = keep_alive_;
  timers->Schedule(keep_alive_period_, [w, timers] { Tick::Run(w, timers); });
}

// ---- Scanner ------------------------------------------------------------------------

Scanner::Scanner(std::shared_ptr<const Table> table)
    : data_(std::make_unique<Data>(std::move(table))) {}
Scanner::~Scanner() = default;

Status Scanner::SetProjectedColumnNames(std::vector<std::string> names) {
  RETURN_NOT_OK(data_->CheckNotOpen());
  RETURN_NOT_OK(data_->table_->schema().ColumnIndexes(names).status());
  data_->projection_ = std::move(names);
  return Status::OK();
}

Status Scanner::AddPredicate(ColumnPredicate predicate) {
  RETURN_NOT_OK(data_->CheckNotOpen());
  const Schema& s = data_->table_->schema();
  if (predicate.column() < 0 || predicate.column() >= s.num_columns() ||
      s.column(predicate.column()).name() != predicate.column_name()) {
    return Status::InvalidArgument("predicate on " + predicate.column_name() +
                                   " was not built for this table");
  }
  data_->predicates_.push_back(std::move(predicate));
  return Status::OK();
}

Status Scanner::AddLowerBound(const Row& key) {
  RETURN_NOT_OK(data_->CheckNotOpen());
  std::string enc;
  RETURN_NOT_OK(internal::EncodePrimaryKey(data_->table_->schema(), key, &enc));
  if (enc > data_->lower_key_) data_->lower_key_ = std::move(enc);
  return Status::OK();
}

Status Scanner::AddExclusiveUpperBound(const Row& key) {
  RETURN_NOT_OK(data_->CheckNotOpen());
  std::string enc;
  RETURN_NOT_OK(internal::EncodePrimaryKey(data_->table_->schema(), key, &enc));
  if (data_->upper_key_.empty() || enc < data_->upper_key_) data_->upper_key_ = std::move(enc);
  return Status::OK();
}

Status Scanner::SetLimit(int64_t limit) {
  RETURN_NOT_OK(data_->CheckNotOpen());
  if (limit < 0) return Status::InvalidArgument("negative limit");
  data_->limit_ = limit;
  return Status::OK();
}

Status Scanner::SetPartitionKeyRange(std::string start, std::string end) {
  RETURN_NOT_OK(data_->CheckNotOpen());
  if (!end.empty() && Slice(start).compare(Slice(end)) >= 0) {
    return Status::InvalidArgument("partition key range: start must be below end");
  }
  data_->partition_key_start_ = std::move(start);
  data_->partition_key_end_ = std::move(end);
  return Status::OK();
}

Status Scanner::SetBatchSizeBytes(uint32_t bytes) {
  RETURN_NOT_OK(data_->CheckNotOpen());
  data_->batch_size_bytes_ = bytes;
  return Status::OK();
}

Status Scanner::SetReadMode(ReadMode mode) {
  RETURN_NOT_OK(data_->CheckNotOpen());
  if (mode == ReadMode::kReadAtSnapshot) {
    // Tablet servers keep no history to read a snapshot from yet; answering with the
    // latest rows instead would break the caller's assumption silently.
    return Status::NotSupported("snapshot scans (kReadAtSnapshot) are not supported yet",
                                "scan with kReadLatest");
  }
  data_->read_mode_ = mode;
  return Status::OK();
}

Status Scanner::SetSelection(ReplicaSelection selection) {
  RETURN_NOT_OK(data_->CheckNotOpen());
  data_->selection_ = selection;
  return Status::OK();
}

Status Scanner::SetTimeout(MonoDelta timeout) {
  RETURN_NOT_OK(data_->CheckNotOpen());
  if (timeout <= MonoDelta()) return Status::InvalidArgument("scan timeout must be positive");
  data_->timeout_ = timeout;
  return Status::OK();
}

Status Scanner::SetKeepAlivePeriod(MonoDelta period) {
  RETURN_NOT_OK(data_->CheckNotOpen());
  if (period < MonoDelta()) return Status::InvalidArgument("keep-alive period is negative");
  data_->keep_alive_period_ = period;
  return Status::OK();
}

Status Scanner::Open() { return data_->Open(); }
bool Scanner::HasMoreRows() const { return data_->HasMoreRows(); }
Status Scanner::NextBatch(ScanBatch* batch) { return data_->NextBatch(batch); }
Status Scanner::KeepAlive() { return data_->KeepAlive(); }
void Scanner::Close() { data_->Close(); }
int Scanner::NumTabletsToScanForTests() const { return int(data_->plan_.size()); }

}  // namespace nyala::client
