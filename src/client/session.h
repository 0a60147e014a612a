// Session::Data: a session's buffer (the current Batcher), its flush policy and the
// batches in flight. See client.h for the flush modes.
//
// Thread-safety: the public Session is thread-compatible; Data's state is guarded
// by mu_ because batch completions (reactor threads) and the flush timer (timer
// thread) reach it too. Completions hold a raw pointer: the destructor waits until
// no batch is in flight. The timer holds a weak_ptr.
#pragma once

#include <condition_variable>
#include <memory>

#include "client/batcher.h"
#include "client/error_collector.h"
#include "common/mutex.h"
#include "nyala/client.h"

namespace nyala::client {

class Session::Data : public std::enable_shared_from_this<Session::Data> {
 public:
  explicit Data(std::shared_ptr<Client> client);
  ~Data();  // waits for the batches in flight

  Status SetFlushMode(FlushMode mode);
  FlushMode flush_mode() const;
  Status SetBufferSpace(size_t bytes);
  Status SetWatermark(double fraction);
  Status SetMaxNum(int n);
  Status SetFlushInterval(MonoDelta interval);
  void SetTimeout(MonoDelta timeout);

  Status Apply(std::unique_ptr<WriteOperation> op);
  Status Flush();
  void FlushAsync(std::function<void(const Status&)> done);
  Status Close();
  bool HasPending() const;
  int CountBuffered() const;
  internal::ErrorCollector* errors() { return &errors_; }
  WriteCounts write_counts() const;

  // Test hooks.
  int NumBatchesInFlightForTests() const;
  int64_t NumBatchesFlushedForTests() const;
  int64_t NumWriteRpcsForTests() const;

 private:
  // Batches that may be in flight while another one fills.
  int MaxInFlightLocked() const REQUIRES(mu_) { return max_num_ > 1 ? max_num_ - 1 : 1; }
  // Takes the current batch for flushing (in_flight_ counted); a new one replaces it.
  std::shared_ptr<internal::Batcher> TakeCurrentLocked() REQUIRES(mu_);
  // Sends `b`, taken with TakeCurrentLocked. Not under mu_.
  void StartFlush(std::shared_ptr<internal::Batcher> b,
                  std::function<void(const Status&)> extra_done);
  void OnBatchDone(const Status& s, const std::shared_ptr<internal::Batcher>& b);
  void ScheduleFlushTimer();
  void OnFlushTimer();
  Status ApplySync(std::unique_ptr<WriteOperation> op, Slice partition_key);

  const std::shared_ptr<Client> client_;
  internal::ClientData* const cd_;
  internal::ErrorCollector errors_;

  mutable Mutex mu_;
  CondVar cv_;
  FlushMode mode_ GUARDED_BY(mu_) = FlushMode::kAutoFlushSync;
  size_t buffer_space_ GUARDED_BY(mu_) = 7 * 1024 * 1024;
  double watermark_ GUARDED_BY(mu_) = 0.5;
  int max_num_ GUARDED_BY(mu_) = 2;
  MonoDelta flush_interval_ GUARDED_BY(mu_) = MonoDelta::FromMilliseconds(1000);
  MonoDelta timeout_ GUARDED_BY(mu_);
  std::shared_ptr<internal::Batcher> current_ GUARDED_BY(mu_);
  int in_flight_ GUARDED_BY(mu_) = 0;
  int64_t failed_batches_ GUARDED_BY(mu_) = 0;
  int64_t batches_flushed_ GUARDED_BY(mu_) = 0;
  int64_t write_rpcs_ GUARDED_BY(mu_) = 0;
  // The outcomes of the operations of every finished batch.
  WriteCounts counts_ GUARDED_BY(mu_);
  bool closed_ GUARDED_BY(mu_) = false;
  bool timer_running_ GUARDED_BY(mu_) = false;
};

}  // namespace nyala::client
