// Scanner::Data: a scan's plan (the pruned tablets in partition-key order) and the
// server-side scanner currently open on one of them.
//
// Thread-safety: driven by the Scanner's single caller thread. The periodic
// keep-alive runs on the timer thread and shares only KeepAliveState (own lock).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "client/meta_cache.h"
#include "common/mutex.h"
#include "nyala/client.h"
#include "nyala/predicate.h"

namespace nyala::tserver {
class TabletServerServiceProxy;
}  // namespace nyala::tserver

namespace nyala::client {

namespace internal {
class ClientData;

// What the keep-alive timer needs: the open scanner and when it was last used.
struct KeepAliveState {
  Mutex mu;
  std::shared_ptr<tserver::TabletServerServiceProxy> proxy GUARDED_BY(mu);
  std::string scanner_id GUARDED_BY(mu);  // empty: none open
  MonoTime last_used GUARDED_BY(mu);
  MonoDelta period GUARDED_BY(mu);
  int64_t keep_alives_sent GUARDED_BY(mu) = 0;
};
}  // namespace internal

class Scanner::Data {
 public:
  explicit Data(std::shared_ptr<const Table> table);
  ~Data();

  Status CheckNotOpen() const {
    return open_ ? Status::IllegalState("scanner already open") : Status::OK();
  }

  Status Open();
  Status NextBatch(ScanBatch* batch);
  bool HasMoreRows() const;
  Status KeepAlive();
  void Close();

  // Configuration, set before Open().
  std::shared_ptr<const Table> table_;
  internal::ClientData* cd_;
  std::vector<std::string> projection_;  // empty: every column
  std::vector<ColumnPredicate> predicates_;
  std::string lower_key_;  // encoded primary key, inclusive; "" = none
  std::string upper_key_;  // exclusive; "" = none
  std::string partition_key_start_;  // SetPartitionKeyRange; "" = from the first tablet
  std::string partition_key_end_;    // "" = to the last tablet
  int64_t limit_ = 0;
  uint32_t batch_size_bytes_ = 0;
  ReadMode read_mode_ = ReadMode::kReadLatest;
  ReplicaSelection selection_ = ReplicaSelection::kLeaderOnly;
  MonoDelta timeout_;
  MonoDelta keep_alive_period_;

  // State after Open().
  bool open_ = false;
  std::shared_ptr<const Schema> proj_schema_;
  KeyRange key_range_;
  std::vector<internal::TabletPtr> plan_;
  size_t next_tablet_ = 0;       // index in plan_ of the tablet to scan next
  internal::TabletPtr current_;  // tablet with an open server-side scanner
  std::shared_ptr<internal::RemoteTabletServer> current_server_;
  // kClosestReplica: replicas given up on so far, so the next scan tries another.
  size_t replicas_failed_ = 0;
  std::string scanner_id_;
  uint32_t call_seq_id_ = 0;
  // The encoded primary key just after the last row returned from current_ (its key
  // with a 0 byte appended): where a scan resumes on another replica. "" until a row
  // came back.
  std::string resume_key_;
  int64_t rows_returned_ = 0;
  std::shared_ptr<internal::KeepAliveState> keep_alive_;

 private:
  Status PlanTablets();
  // One Scan call: the first of a tablet (new scan) or a continuation.
  Status ScanCall(ScanBatch* batch);
  void StartKeepAliveTimer();
};

}  // namespace nyala::client
