// SharedLog's write path: appends and their validation, the writer thread and its
// batches, checkpoints, segment creation, roll, preallocation and trim, and the release
// and deletion of old segments.
#include "common/status.h"
#include "consensus/log.h"

#include <fcntl.h>
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
#include <thread>

#include "common/crc32c.h"
#include "common/histogram.h"
#include "consensus/log_format.h"
#include "consensus/log_internal.h"
#include "nyala/monotime.h"

DECLARE_int32(fault_injection_log_sync_delay_ms);

namespace nyala::consensus {

// ---------------------------------------------------------------------------------
// Appending.

namespace {

// A group as the appends accepted so far leave it: what the next one is checked against.
struct SubmitView {
  uint64_t group;
  uint64_t last;
  uint64_t snapshot;
  uint64_t durable;
};

Status Invalid(uint64_t group, const std::string& what) {
  return Status::InvalidArgument("consensus log: group " + std::to_string(group) + ": " + what);
}

// Checks one record against `v` and advances `v` past it.
Status CheckAndAdvance(const LogRecord& r, SubmitView* v) {
  if (r.PayloadSize() > kMaxPayload) {
    return Invalid(r.group, "payload of " + std::to_string(r.PayloadSize()) + " bytes");
  }
  switch (r.type) {
    case RecordType::kEntry:
      if (r.index != v->last + 1) {
        return Invalid(r.group, "entry index " + std::to_string(r.index) +
                                    " is not the last index " + std::to_string(v->last) + " + 1");
      }
      v->last = r.index;
      return Status::OK();
    case RecordType::kHardState:
      if (r.message || r.payload.size() < kHardStateFixedSize) {
        return Invalid(r.group, "HARD_STATE record not made by MakeHardState");
      }
      return Status::OK();
    case RecordType::kTruncate: {
      const uint64_t floor = std::max(v->snapshot, v->durable);
      if (r.index == 0 || r.index <= floor) {
        return Invalid(r.group, "TRUNCATE at " + std::to_string(r.index) +
                                    " is at or below the snapshot mark or durable index " +
                                    std::to_string(floor));
      }
      v->last = std::min(v->last, r.index - 1);
      return Status::OK();
    }
    case RecordType::kSnapshotMark:
      if (r.index < v->snapshot) {
        return Invalid(r.group, "SNAPSHOT_MARK at " + std::to_string(r.index) +
                                    " is below the snapshot mark " + std::to_string(v->snapshot));
      }
      v->snapshot = r.index;
      v->last = std::max(v->last, r.index);
      return Status::OK();
    default:
      return Invalid(r.group,
                     std::string("record type ") + RecordTypeName(r.type) + " may not be appended");
  }
}

}  // namespace

Status SharedLog::ValidateLocked(const std::vector<LogRecord>& records) {
  // This call's effect, committed only if every record is valid. Few groups per call:
  // a linear search.
  std::vector<SubmitView> views;
  for (const LogRecord& r : records) {
    auto v = std::find_if(views.begin(), views.end(),
                          [&](const SubmitView& x) { return x.group == r.group; });
    if (v == views.end()) {
      SubmitView fresh{r.group, 0, 0, 0};
      auto it = groups_.find(r.group);
      if (it != groups_.end()) {
        const Group& g = it->second;
        if (!g.failed.ok()) return g.failed;
        fresh = SubmitView{r.group, g.sub_last, g.sub_snapshot, g.durable};
      }
      views.push_back(fresh);
      v = views.end() - 1;
    }
    RETURN_NOT_OK(CheckAndAdvance(r, &*v));
  }
  for (const SubmitView& v : views) {
    Group& g = GroupLocked(v.group);
    g.sub_exists = true;
    g.sub_last = v.last;
    g.sub_snapshot = v.snapshot;
  }
  return Status::OK();
}

bool SharedLog::EnqueueLocked(std::vector<LogRecord>* records,
                              std::function<void(const Status&)>* done, Status* s) {
  if (stopping_) {
    *s = Status::Aborted("consensus log is shutting down");
  } else if (!error_.ok()) {
    *s = error_;
  } else {
    *s = ValidateLocked(*records);
  }
  if (!s->ok()) return false;
  stats_.appends++;
  queue_.push_back(Pending{std::move(*records), std::move(*done),
                           opts_.append_latency != nullptr ? GetMonoTimeMicros() : 0});
  return true;
}

void SharedLog::AppendAsync(std::vector<LogRecord> records,
                            std::function<void(const Status&)> done) {
  Status s;
  {
    MutexLock l(mu_);
    if (EnqueueLocked(&records, &done, &s)) {
      if (!writing_) writer_cv_.notify_one();
      return;
    }
  }
  if (done) done(s);
}

void SharedLog::AppendHereIfIdle(std::vector<LogRecord> records,
                                 std::function<void(const Status&)> done) {
  Status s;
  Batch b;
  {
    MutexLock l(mu_);
    if (EnqueueLocked(&records, &done, &s)) {
      if (writing_ || queue_.size() > 1) {
        if (!writing_) writer_cv_.notify_one();
        return;
      }
      writing_ = true;
      TakeBatchLocked(&b);
    }
  }
  if (!s.ok()) {
    if (done) done(s);
    return;
  }
  RunBatch(&b, /*wake_writer=*/true);
}

Status SharedLog::Append(std::vector<LogRecord> records) {
  std::promise<Status> p;
  std::future<Status> f = p.get_future();
  AppendAsync(std::move(records), [&p](const Status& s) { p.set_value(s); });
  return f.get();
}

Status SharedLog::RemoveGroup(uint64_t group) {
  std::promise<Status> p;
  std::future<Status> f = p.get_future();
  {
    MutexLock l(mu_);
    auto it = groups_.find(group);
    if (it == groups_.end() || !it->second.sub_exists) return Status::OK();
    if (stopping_) return Status::Aborted("consensus log is shutting down");
    if (!error_.ok()) return error_;
    Group& g = it->second;
    g.sub_exists = false;
    g.sub_last = 0;
    g.sub_snapshot = 0;
    g.durable = 0;
    std::vector<LogRecord> rec;
    rec.push_back(Record(RecordType::kRemoveGroup, group, 0, 0));
    stats_.appends++;
    queue_.push_back(Pending{std::move(rec), [&p](const Status& s) { p.set_value(s); }});
    writer_cv_.notify_one();
  }
  return f.get();
}

void SharedLog::AppendCheckpointLocked(std::vector<LogRecord>* out) {
  for (auto& [id, g] : groups_) {
    if (!g.live() || !g.failed.ok()) continue;
    if (g.hard_state) out->push_back(LogRecord::MakeHardState(id, *g.hard_state));
    SnapshotMark mark = g.snapshot.value_or(SnapshotMark{});
    const uint64_t target = std::min(g.durable, g.last_index);
    if (target > mark.index) {
      std::optional<uint64_t> term = g.TermAt(target);
      if (term) mark = SnapshotMark{*term, target};
    }
    if (mark.index > 0) {
      out->push_back(LogRecord::MakeSnapshotMark(id, mark.term, mark.index));
      g.sub_snapshot = std::max(g.sub_snapshot, mark.index);
      g.sub_last = std::max(g.sub_last, mark.index);
    }
  }
}

void SharedLog::PlanLocked(bool checkpoint, Batch* b) {
  b->pending.swap(queue_);
  if (checkpoint) AppendCheckpointLocked(&b->ckpt);
  // b->ckpt is complete: pointers into it stay valid.
  for (const LogRecord& r : b->ckpt) {
    b->plan.push_back(Planned{&r, ++GroupLocked(r.group).last_seq});
  }
  for (const Pending& p : b->pending) {
    for (const LogRecord& r : p.records) {
      b->plan.push_back(Planned{&r, ++GroupLocked(r.group).last_seq});
    }
  }
}

Status SharedLog::WriteBatch(bool roll, std::vector<Planned>* plan) {
  // A roll comes once the active segment is written past its size, so the one left
  // behind has no preallocated space: only the newest segment may end in zeros.
  if (roll) RETURN_NOT_OK(CreateSegment(last_segment_seq_ + 1));
  buf_.clear();
  for (Planned& p : *plan) {
    const LogRecord& r = *p.rec;
    const size_t header_at = buf_.size();
    p.buf_offset = header_at + kRecordHeaderSize;
    p.length = uint32_t(r.PayloadSize());
    if (r.message) {
      buf_.resize(p.buf_offset + p.length);
      char* payload = buf_.data() + p.buf_offset;
      CHECK(r.message->SerializeToArray(payload, int(p.length)))
          << "consensus log: group " << r.group << ": the message of entry " << r.index
          << " changed size after its record was made";
    } else {
      buf_.resize(p.buf_offset);
      buf_.append(r.payload);
    }
    RecordHeader h;
    h.length = p.length;
    h.payload_crc = Crc32c(0, buf_.data() + p.buf_offset, p.length);
    h.type = uint8_t(r.type);
    h.group = r.group;
    h.seq = p.seq;
    h.term = r.term;
    h.index = r.index;
    EncodeRecordHeader(h, reinterpret_cast<uint8_t*>(buf_.data() + header_at));
    p.segment = active_->seq;
    p.offset = active_size_ + p.buf_offset;
    p.crc = h.payload_crc;
  }
  if (!buf_.empty()) {
    RETURN_NOT_OK(WriteAt(*active_, active_size_, buf_));
    active_size_ += buf_.size();
  }
  if (opts_.fsync) RETURN_NOT_OK(SyncFile(*active_));
  MutexLock l(mu_);
  stats_.writes++;
  stats_.records += plan->size();
  stats_.bytes += buf_.size();
  return Status::OK();
}

Status SharedLog::CreateSegment(uint64_t seq) {
  const std::string path = SegmentPath(seq);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(path, "create", errno);
  auto seg = std::make_shared<Segment>(seq, path, fd);
  bool preallocated = false;
  if (preallocate_) {
    const int r = fallocate(fd, 0, 0, off_t(opts_.segment_size_bytes));
    if (r == 0) {
      preallocated = true;
    } else if (errno == EOPNOTSUPP || errno == ENOSYS) {
      LOG(WARNING) << "consensus log: " << opts_.dir << " cannot preallocate segments ("
                   << strerror(errno) << "); they grow as they are written";
      preallocate_ = false;
    } else {
      // No room for a whole segment (ENOSPC, a quota) need not stop the log: the
      // segment grows as written, and a write that finds no room fails as it would.
      LOG(WARNING) << "consensus log: " << path << ": cannot preallocate "
                   << opts_.segment_size_bytes << " bytes (" << strerror(errno)
                   << "); this segment grows as it is written";
      // Let go of whatever the failed call reserved past the end of the empty file.
      if (ftruncate(fd, 0) != 0) {
        const int err = errno;
        seg.reset();  // closes it
        unlink(path.c_str());
        return ErrnoStatus(path, "truncate", err);
      }
    }
  }
  RETURN_NOT_OK(WriteAt(*seg, 0, EncodeSegmentHeader(seq)));
  if (opts_.fsync) RETURN_NOT_OK(SyncDir());
  last_segment_seq_ = seq;
  active_ = seg;
  active_size_ = kSegmentHeaderSize;
  active_preallocated_ = preallocated;
  MutexLock l(mu_);
  segments_[seq] = std::move(seg);
  active_seq_ = seq;
  stats_.segments_live = segments_.size();
  release_check_needed_ = true;
  return Status::OK();
}

Status SharedLog::TrimActiveSegment() {
  if (active_ == nullptr || !active_preallocated_) return Status::OK();
  if (ftruncate(active_->fd, off_t(active_size_)) != 0) {
    return ErrnoStatus(active_->path, "cut preallocated space", errno);
  }
  // fsync, not fdatasync: the new size is all there is to write.
  if (opts_.fsync && fsync(active_->fd) != 0) return ErrnoStatus(active_->path, "fsync", errno);
  active_preallocated_ = false;
  return Status::OK();
}

Status SharedLog::WriteAt(const Segment& seg, uint64_t offset, Slice data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = pwrite(seg.fd, data.data() + done, data.size() - done, off_t(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(seg.path, "write", errno);
    done += size_t(n);
  }
  return Status::OK();
}

Status SharedLog::SyncFile(const Segment& seg) {
  {
    MutexLock l(mu_);
    stats_.fsyncs++;
  }
  if (const int delay_ms = FLAGS_fault_injection_log_sync_delay_ms; delay_ms > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));  // a slow disk
  }
  const int64_t start = opts_.sync_latency != nullptr ? GetMonoTimeMicros() : 0;
  if (fdatasync(seg.fd) != 0) return ErrnoStatus(seg.path, "fdatasync", errno);
  if (opts_.sync_latency != nullptr) opts_.sync_latency->Increment(GetMonoTimeMicros() - start);
  return Status::OK();
}

Status SharedLog::SyncDir() {
  const int fd = open(opts_.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(opts_.dir, "open directory", errno);
  const int r = fsync(fd);
  const int err = errno;
  close(fd);
  if (r != 0) return ErrnoStatus(opts_.dir, "fsync directory", err);
  return Status::OK();
}

void SharedLog::ApplyPlanLocked(const std::vector<Planned>& plan) {
  for (const Planned& p : plan) {
    const LogRecord& r = *p.rec;
    Group& g = GroupLocked(r.group);
    if (r.type != RecordType::kEntry) release_check_needed_ = true;
    if (r.type == RecordType::kRemoveGroup) {
      g.Reset();
      continue;
    }
    g.removed = false;
    if (!g.failed.ok()) continue;
    // The payload as written (WriteBatch left it in buf_).
    Status s =
        ApplyRecordLocked(&g, r.type, r.term, r.index, Slice(buf_.data() + p.buf_offset, p.length),
                          p.crc, p.segment, p.offset);
    if (!s.ok()) {
      // Validation should make this impossible: a caller broke a REQUIRES.
      s = s.CloneAndPrepend("group " + std::to_string(r.group) + ": record at " +
                            Where(SegmentName(p.segment), p.offset - kRecordHeaderSize));
      LOG(ERROR) << "consensus log: " << s.ToString();
      FailGroup(&g, r.group, p.segment, s);
    }
  }
}

void SharedLog::LatchErrorLocked(const Status& s) {
  if (!error_.ok()) return;
  error_ = s;
  LOG(ERROR) << "consensus log: " << s.ToString() << "; every later append fails";
}

void SharedLog::WriterLoop() {
  pthread_setname_np(pthread_self(), "log-writer");
  while (true) {
    Batch b;
    if (!TakeBatch(&b)) return;
    RunBatch(&b, /*wake_writer=*/false);
  }
}

void SharedLog::RunBatch(Batch* b, bool wake_writer) {
  if (b->status.ok()) b->status = WriteBatch(b->roll, &b->plan);
  DeleteSegments(FinishBatch(*b));
  if (opts_.append_latency != nullptr && b->status.ok()) {
    const int64_t now = GetMonoTimeMicros();
    for (const Pending& p : b->pending) {
      if (!p.records.empty()) opts_.append_latency->Increment(now - p.enqueued_us);
    }
  }
  for (Pending& p : b->pending) {
    if (p.done) p.done(b->status);
  }
  MutexLock l(mu_);
  writing_ = false;
  if (wake_writer && (stopping_ || !queue_.empty() || checkpoint_requested_)) {
    writer_cv_.notify_one();
  }
}

bool SharedLog::TakeBatch(Batch* b) {
  UniqueLock l(mu_);
  writer_cv_.wait(l, [this]() REQUIRES(mu_) {
    return !writing_ && (stopping_ || !queue_.empty() || checkpoint_requested_);
  });
  if (stopping_) {
    b->pending.swap(queue_);
    l.Unlock();
    for (Pending& p : b->pending) {
      if (p.done) p.done(Status::Aborted("consensus log is shutting down"));
    }
    return false;
  }
  writing_ = true;
  TakeBatchLocked(b);
  return true;
}

void SharedLog::TakeBatchLocked(Batch* b) {
  if (!error_.ok()) {  // appends accepted before the error latched
    b->pending.swap(queue_);
    b->status = error_;
  } else {
    b->roll = active_size_ >= opts_.segment_size_bytes;
    PlanLocked(b->roll || checkpoint_requested_, b);
  }
  checkpoint_requested_ = false;
}

std::vector<std::shared_ptr<SharedLog::Segment>> SharedLog::FinishBatch(const Batch& b) {
  MutexLock l(mu_);
  if (!b.status.ok()) {
    LatchErrorLocked(b.status);
    return {};
  }
  ApplyPlanLocked(b.plan);
  if (!release_check_needed_) return {};
  release_check_needed_ = false;
  auto dead = TakeReleasableLocked();
  if (CheckpointWouldReleaseLocked()) checkpoint_requested_ = true;
  return dead;
}

SharedLog::~SharedLog() {
  {
    MutexLock l(mu_);
    stopping_ = true;
    writer_cv_.notify_one();
  }
  if (writer_.joinable()) writer_.join();
  // The writer is gone and AppendHereIfIdle callers have returned: the turn is ours.
  // After a write error the file stays as it is, for the next Open to recover (and
  // report) whatever the failed write left; a failure to cut leaves zeros that the
  // next Open cuts off.
  bool failed;
  {
    MutexLock l(mu_);
    failed = !error_.ok();
  }
  if (!failed) {
    Status s = TrimActiveSegment();
    LOG_IF(WARNING, !s.ok()) << "consensus log: " << s.ToString();
  }
}

// ---------------------------------------------------------------------------------
// Release: what pins a segment, and deleting released ones (SetDurableIndex and
// GroupsPinning are in log.cc).

uint64_t SharedLog::PinLocked(const Group& g, bool with_durable) const {
  uint64_t pin = UINT64_MAX;
  if (g.removed) return pin;
  const bool failed = !g.failed.ok();
  if (failed) pin = g.failed_segment;
  if (!g.entries.empty()) {
    if (!with_durable || failed || g.durable < g.first_entry) {
      pin = std::min(pin, g.entries.front().segment);
    } else if (g.durable - g.first_entry + 1 < g.entries.size()) {
      pin = std::min(pin, g.entries[g.durable - g.first_entry + 1].segment);
    }
  }
  // A checkpoint writes hard state and snapshot mark anew, except for failed groups.
  if (!with_durable || failed) {
    if (g.hard_state) pin = std::min(pin, g.hard_state_segment);
    if (g.snapshot) pin = std::min(pin, g.snapshot_segment);
  }
  return pin;
}

bool SharedLog::CheckpointWouldReleaseLocked() const {
  if (segments_.empty() || segments_.begin()->first >= active_seq_) return false;
  const uint64_t oldest = segments_.begin()->first;
  uint64_t now = UINT64_MAX;
  uint64_t after = UINT64_MAX;
  for (const auto& [id, g] : groups_) {
    now = std::min(now, PinLocked(g, false));
    after = std::min(after, PinLocked(g, true));
  }
  return now <= oldest && after > oldest;
}

std::vector<std::shared_ptr<SharedLog::Segment>> SharedLog::TakeReleasableLocked() {
  uint64_t bound = active_seq_;
  for (const auto& [id, g] : groups_) bound = std::min(bound, PinLocked(g, false));
  std::vector<std::shared_ptr<Segment>> dead;
  while (!segments_.empty() && segments_.begin()->first < bound) {
    dead.push_back(std::move(segments_.begin()->second));
    segments_.erase(segments_.begin());
  }
  stats_.segments_live = segments_.size();
  return dead;
}

void SharedLog::DeleteSegments(const std::vector<std::shared_ptr<Segment>>& segs) {
  if (segs.empty()) return;
  for (const auto& seg : segs) {
    if (unlink(seg->path.c_str()) != 0) {
      // Deleting newer ones would leave a hole (read as lost records on restart): the
      // rest stay on disk, and are read and released again after a restart.
      PLOG(WARNING) << "consensus log: cannot delete released segment " << seg->path;
      break;
    }
  }
  if (opts_.fsync) WARN_NOT_OK(SyncDir(), "consensus log: fsync after deleting segments");
}

}  // namespace nyala::consensus
