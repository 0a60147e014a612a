// Session and Session::Data: buffering, flush policy, batches in flight.
#include "client/session.h"

#include <glog/logging.h>

#include "client/client-internal.h"
#include "client/latch.h"
#include "common/row_operations.h"
#include "common/status.h"

namespace nyala::client {

using internal::Batcher;

Session::Data::Data(std::shared_ptr<Client> client)
    : client_(std::move(client)), cd_(internal::DataOf(*client_)) {
  MutexLock l(mu_);
  timeout_ = cd_->rpc_timeout();
  current_ = std::make_shared<Batcher>(cd_, &errors_);
}

Session::Data::~Data() {
  UniqueLock l(mu_);
  closed_ = true;
  cv_.wait(l, [this]() REQUIRES(mu_) { return in_flight_ == 0; });
}

Status Session::Data::SetFlushMode(FlushMode mode) {
  MutexLock l(mu_);
  if (!current_->empty()) {
    return Status::IllegalState("cannot change the flush mode with operations buffered");
  }
  mode_ = mode;
  if (mode == FlushMode::kAutoFlushBackground && !timer_running_) {
    timer_running_ = true;
    cd_->timers()->Schedule(MonoDelta(), [w = weak_from_this()] {
      if (auto d = w.lock()) d->ScheduleFlushTimer();
    });
  }
  return Status::OK();
}

Session::FlushMode Session::Data::flush_mode() const {
  MutexLock l(mu_);
  return mode_;
}

Status Session::Data::SetBufferSpace(size_t bytes) {
  MutexLock l(mu_);
  if (!current_->empty()) return Status::IllegalState("operations are buffered");
  if (bytes == 0) return Status::InvalidArgument("buffer space must be positive");
  buffer_space_ = bytes;
  return Status::OK();
}

Status Session::Data::SetWatermark(double fraction) {
  if (!(fraction > 0 && fraction <= 1)) {
    return Status::InvalidArgument("flush watermark must be in (0, 1]");
  }
  MutexLock l(mu_);
  watermark_ = fraction;
  return Status::OK();
}

Status Session::Data::SetMaxNum(int n) {
  if (n < 1) return Status::InvalidArgument("mutation buffer max num must be >= 1");
  MutexLock l(mu_);
  max_num_ = n;
  return Status::OK();
}

Status Session::Data::SetFlushInterval(MonoDelta interval) {
  if (interval <= MonoDelta()) return Status::InvalidArgument("flush interval must be positive");
  MutexLock l(mu_);
  flush_interval_ = interval;
  return Status::OK();
}

void Session::Data::SetTimeout(MonoDelta timeout) {
  MutexLock l(mu_);
  timeout_ = timeout;
}

std::shared_ptr<Batcher> Session::Data::TakeCurrentLocked() {
  std::shared_ptr<Batcher> b = std::move(current_);
  current_ = std::make_shared<Batcher>(cd_, &errors_);
  in_flight_++;
  batches_flushed_++;
  return b;
}

void Session::Data::StartFlush(std::shared_ptr<Batcher> b,
                               std::function<void(const Status&)> extra_done) {
  MonoDelta timeout;
  {
    MutexLock l(mu_);
    timeout = timeout_;
  }
  Batcher* raw = b.get();
  raw->Flush(MonoTime::Now() + timeout,
             [this, b = std::move(b), extra = std::move(extra_done)](const Status& s) mutable {
               std::function<void(const Status&)> extra_cb = std::move(extra);
               OnBatchDone(s, b);
               b.reset();
               // After OnBatchDone the session may be gone: only the callback's own state.
               if (extra_cb) extra_cb(s);
             });
}

void Session::Data::OnBatchDone(const Status& s, const std::shared_ptr<Batcher>& b) {
  MutexLock l(mu_);
  write_rpcs_ += b->num_write_rpcs();
  counts_.succeeded += b->num_ops() - b->num_failed_ops();
  counts_.failed += b->num_failed_ops() - b->num_timed_out_ops();
  counts_.timed_out += b->num_timed_out_ops();
  if (!s.ok()) failed_batches_++;
  in_flight_--;
  cv_.notify_all();
}

Status Session::Data::Apply(std::unique_ptr<WriteOperation> op) {
  if (!op) return Status::InvalidArgument("null operation");
  if (internal::DataOf(*op->table().client()) != cd_) {
    return Status::InvalidArgument("operation of a table opened by another client");
  }
  const RowView row = op->row().view();
  RETURN_NOT_OK(ValidateRowOperation(op->type(), row));
  // Reused by every Apply of this thread: most partition keys fit in the string's
  // inline buffer anyway, but a long string key would allocate each time.
  thread_local std::string partition_key;
  partition_key.clear();
  RETURN_NOT_OK(op->table().partition_schema().EncodePartitionKey(row, &partition_key));
  const size_t size = internal::EstimateOpSize(row);

  std::shared_ptr<Batcher> to_flush;
  {
    UniqueLock l(mu_);
    if (closed_) return Status::IllegalState("session is closed");
    if (mode_ == FlushMode::kAutoFlushSync) {
      l.Unlock();
      return ApplySync(std::move(op), partition_key);
    }
    if (mode_ == FlushMode::kManualFlush) {
      if (!current_->empty() && current_->buffer_bytes() + size > buffer_space_) {
        return Status::Incomplete("mutation buffer full (" +
                                  std::to_string(current_->buffer_bytes()) + " of " +
                                  std::to_string(buffer_space_) + " bytes): call Flush()");
      }
      return current_->Add(std::move(op), partition_key);
    }
    // Background: make room, waiting for a batch in flight when all buffers are used.
    while (!current_->empty() && current_->buffer_bytes() + size > buffer_space_) {
      if (in_flight_ < MaxInFlightLocked()) {
        to_flush = TakeCurrentLocked();
        l.Unlock();
        StartFlush(std::move(to_flush), nullptr);
        l.Lock();
        continue;
      }
      cv_.wait(l);  // a batch completes by its deadline at the latest
    }
    RETURN_NOT_OK(current_->Add(std::move(op), partition_key));
    if (current_->buffer_bytes() >= watermark_ * buffer_space_ &&
        in_flight_ < MaxInFlightLocked()) {
      to_flush = TakeCurrentLocked();
    }
  }
  if (to_flush) StartFlush(std::move(to_flush), nullptr);
  return Status::OK();
}

Status Session::Data::ApplySync(std::unique_ptr<WriteOperation> op, Slice partition_key) {
  auto b = std::make_shared<Batcher>(cd_, &errors_);
  RETURN_NOT_OK(b->Add(std::move(op), partition_key));
  {
    MutexLock l(mu_);
    in_flight_++;
    batches_flushed_++;
  }
  internal::CountDownLatch latch(1);
  Status result;
  StartFlush(std::move(b), [&](const Status& s) {
    result = s;
    latch.CountDown();
  });
  latch.Wait();
  return result;
}

Status Session::Data::Flush() {
  std::shared_ptr<Batcher> b;
  int64_t failed_before;
  {
    MutexLock l(mu_);
    failed_before = failed_batches_;
    if (!current_->empty()) b = TakeCurrentLocked();
  }
  if (b) StartFlush(std::move(b), nullptr);
  UniqueLock l(mu_);
  cv_.wait(l, [this]() REQUIRES(mu_) { return in_flight_ == 0; });
  if (failed_batches_ != failed_before) {
    return Status::IOError("some operations failed: see GetPendingErrors (" +
                           std::to_string(errors_.Count()) + " pending errors)");
  }
  return Status::OK();
}

void Session::Data::FlushAsync(std::function<void(const Status&)> done) {
  std::shared_ptr<Batcher> b;
  {
    MutexLock l(mu_);
    if (!current_->empty()) b = TakeCurrentLocked();
  }
  if (!b) {
    if (done) done(Status::OK());
    return;
  }
  StartFlush(std::move(b), std::move(done));
}

Status Session::Data::Close() {
  Status s = Flush();
  MutexLock l(mu_);
  closed_ = true;
  return s;
}

bool Session::Data::HasPending() const {
  MutexLock l(mu_);
  return in_flight_ > 0 || !current_->empty();
}

int Session::Data::CountBuffered() const {
  MutexLock l(mu_);
  return current_->num_ops();
}

void Session::Data::ScheduleFlushTimer() {
  MonoDelta tick;
  {
    MutexLock l(mu_);
    if (closed_ || mode_ != FlushMode::kAutoFlushBackground) {
      timer_running_ = false;
      return;
    }
    tick =
        MonoDelta::FromNanoseconds(std::max<int64_t>(flush_interval_.ToNanoseconds() / 4, 1000000));
  }
  cd_->timers()->Schedule(tick, [w = weak_from_this()] {
    if (auto d = w.lock()) {
      d->OnFlushTimer();
      d->ScheduleFlushTimer();
    }
  });
}

void Session::Data::OnFlushTimer() {
  std::shared_ptr<Batcher> b;
  {
    MutexLock l(mu_);
    if (current_->empty() || in_flight_ >= MaxInFlightLocked()) return;
    if (MonoTime::Now() - current_->first_op_time() < flush_interval_) return;
    b = TakeCurrentLocked();
  }
  StartFlush(std::move(b), nullptr);
}

Session::WriteCounts Session::Data::write_counts() const {
  MutexLock l(mu_);
  return counts_;
}

int Session::Data::NumBatchesInFlightForTests() const {
  MutexLock l(mu_);
  return in_flight_;
}
int64_t Session::Data::NumBatchesFlushedForTests() const {
  MutexLock l(mu_);
  return batches_flushed_;
}
int64_t Session::Data::NumWriteRpcsForTests() const {
  MutexLock l(mu_);
  return write_rpcs_;
}

// ---- Session --------------------------------------------------------------------------

Session::Session(std::shared_ptr<Client> client)
    : data_(std::make_shared<Data>(std::move(client))) {}

Session::~Session() { WARN_NOT_OK(data_->Flush(), "flushing a session being destroyed"); }

Status Session::SetFlushMode(FlushMode mode) { return data_->SetFlushMode(mode); }
Session::FlushMode Session::flush_mode() const { return data_->flush_mode(); }
Status Session::SetMutationBufferSpace(size_t bytes) { return data_->SetBufferSpace(bytes); }
Status Session::SetMutationBufferFlushWatermark(double f) { return data_->SetWatermark(f); }
Status Session::SetMutationBufferMaxNum(int n) { return data_->SetMaxNum(n); }
Status Session::SetFlushInterval(MonoDelta interval) { return data_->SetFlushInterval(interval); }
Status Session::SetTimeout(MonoDelta timeout) {
  if (timeout <= MonoDelta()) return Status::InvalidArgument("session timeout must be positive");
  data_->SetTimeout(timeout);
  return Status::OK();
}
Status Session::Apply(std::unique_ptr<WriteOperation> op) { return data_->Apply(std::move(op)); }
Status Session::Flush() { return data_->Flush(); }
void Session::FlushAsync(std::function<void(const Status&)> done) {
  data_->FlushAsync(std::move(done));
}
Status Session::Close() { return data_->Close(); }
bool Session::HasPendingOperations() const { return data_->HasPending(); }
int Session::CountBufferedOperations() const { return data_->CountBuffered(); }
int Session::CountPendingErrors() const { return data_->errors()->Count(); }
Session::WriteCounts Session::GetWriteCounts() const { return data_->write_counts(); }
void Session::GetPendingErrors(std::vector<std::unique_ptr<WriteError>>* errors, bool* overflowed) {
  data_->errors()->Take(errors, overflowed);
}

}  // namespace nyala::client
