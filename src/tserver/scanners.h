// Scanners: the server side of Scan. A new scan builds a Scanner (projection,
// predicates checked against the tablet schema, key bounds from the predicates and
// the start/stop keys, one RocksDB snapshot and an iterator over it) and returns the
// first batch. If rows remain, the ScannerManager keeps the scanner under a random
// id for continuations; if the first batch finishes the scan, nothing is kept.
//
// Continuations carry call_seq_id: the previous number + 1 returns the next batch;
// the previous number again returns the previous batch again (the iterator seeks
// back to where that batch started; the snapshot makes the rows identical); any
// other number is INVALID_SCAN_CALL_SEQ_ID. The batch that finishes a scan drops
// its scanner. A scanner idle for --scanner_ttl_ms is dropped by a background
// reaper (and refused on access); an unknown or dropped id gets SCANNER_EXPIRED.
//
// Rows pass every predicate before they are copied into the batch (the row-block
// layout, common/row_block.h). A batch is cut after the row that brings it to
// batch_size_bytes (default 1 MiB, at most 8 MiB), so every batch has a row unless
// the scan is done.
//
// Thread-safety: ScannerManager is thread-safe. One scanner serves one call at a
// time (a concurrent call on the same id waits for the first).
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "nyala/monotime.h"
#include "tserver/tablet.h"
#include "tserver/tserver.pb.h"

namespace nyala::tserver {

class Scanner;
struct TServerMetrics;

// What /scans shows about one open scanner.
struct ScannerInfo {
  std::string id;
  std::string tablet_id;
  std::string table_name;
  std::string projection;  // column names
  std::string predicates;
  int64_t rows_returned = 0;
  int64_t rows_scanned = 0;
  MonoDelta age;
  MonoDelta idle;
};

class ScannerManager {
 public:
  static constexpr uint32_t kDefaultBatchSizeBytes = 1 << 20;
  static constexpr uint32_t kMaxBatchSizeBytes = 8 << 20;

  // `metrics` must outlive the manager (may be null). Starts the reaper thread.
  explicit ScannerManager(TServerMetrics* metrics);
  ~ScannerManager();
  // Stops the reaper and drops every scanner (their snapshots). Idempotent.
  void Shutdown();

  // A new scan of `tablet` (req.new_scan_request()). The batch goes to
  // `rows`/`indirect` (the caller attaches them as sidecars and sets the indexes in
  // resp->data()); errors go to resp->error().
  void StartScan(std::shared_ptr<Tablet> tablet, const ScanRequestPB& req, ScanResponsePB* resp,
                 std::string* rows, std::string* indirect);
  // A continuation (req.scanner_id() set), or a close when req.close_scanner().
  void ContinueScan(const ScanRequestPB& req, ScanResponsePB* resp, std::string* rows,
                    std::string* indirect);
  // Resets the idle time of `id`. NotFound when there is no such scanner.
  Status KeepAlive(const std::string& id);

  size_t NumScanners() const;
  std::vector<ScannerInfo> ListScanners() const;
  // Drops the scanners idle longer than --scanner_ttl_ms now (the reaper's pass).
  void ExpireIdleScannersForTests() { ExpireIdleScanners(); }

 private:
  void ReaperLoop();
  void ExpireIdleScanners();
  std::shared_ptr<Scanner> Find(const std::string& id);
  void Remove(const std::string& id);

  TServerMetrics* const metrics_;

  mutable Mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<Scanner>> scanners_ GUARDED_BY(mu_);
  bool shutting_down_ GUARDED_BY(mu_) = false;
  CondVar reaper_cv_;
  std::thread reaper_;
};

}  // namespace nyala::tserver
