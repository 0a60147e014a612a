// SharedLog: the durable, group-committed consensus log of a server. One append-only
// log of segment files in one directory (--fs_wal_dir) holds the records of every
// Raft consensus group (tablet) of the server, instead of a file per tablet: a write
// of many groups is one sequential write and one fdatasync. An in-memory index per
// group finds its entries again.
//
// Contract:
//  - Durable by default: AppendAsync() reports an append done only after its records
//    are fdatasync'ed (LogOptions::fsync, --log_fsync). One fdatasync covers every
//    record of every group appended while the previous one ran (group commit).
//  - Appends of one group are applied to its index in the order they were submitted.
//    An append that breaks a group's log (a gap in its entry indexes) is refused with
//    InvalidArgument and nothing of it is written.
//  - A write or fdatasync error latches: that append and every later one fail with an
//    IOError naming the file.
//  - Open() recovers: a torn write at the end of the last segment is truncated away and
//    reported; corruption anywhere else fails only the groups whose records it hit
//    (their reads return Corruption naming the file and offset), never the whole log.
//  - Segments are deleted, oldest first, once no group needs their records. A group
//    needs its live entries above its durable index (SetDurableIndex) and its newest
//    hard state and snapshot mark. GroupsPinning() names the groups that keep old
//    segments alive, for the caller to ask them to flush or snapshot. A damaged
//    group's records are kept (so its damage is found again after a restart) until
//    RemoveGroup, the way back for it being a new replica.
//
// A gap in a group's entry indexes on recovery is damage unless a later snapshot mark
// covers it (entries released behind a mark written after them, see log_internal.h's
// Group::gap_below): the group's log then starts after the mark.
//
// Limitation of the attribution: damage is pinned on a group by a CRC failure of its
// record's payload (the header intact) or by a gap in its sequence numbers. A record
// whose header is unreadable and after which its group wrote nothing more (in the
// newest segment: every older segment is followed by a checkpoint, which carries a
// record of every group with a hard state) is reported as a corrupt region but fails
// no group.
//
// Thread-safety: every public method may be called from any thread at once. The log
// owns one writer thread (started by Open, joined by the destructor), which writes,
// syncs and runs the `done` callbacks of AppendAsync. A callback must not destroy the
// log. Destroying the log finishes the batch being written and fails the appends still
// queued with Aborted. AppendHereIfIdle lets its caller take the writer thread's place
// for one batch; the caller must return before the log is destroyed.
//
// The on-disk format (segment files, record layout, record types), the checkpoints,
// preallocation, and the rules by which recovery reads the segments and release
// deletes them are in log_format.h.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <google/protobuf/message_lite.h>

#include "common/mutex.h"
#include "common/result.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "nyala/slice.h"

namespace nyala {
class Histogram;
}  // namespace nyala

namespace nyala::consensus {

enum class RecordType : uint8_t {
  kEntry = 1,
  kHardState = 2,
  kTruncate = 3,
  kSnapshotMark = 4,
  kRemoveGroup = 5,  // written by SharedLog::RemoveGroup only
};
const char* RecordTypeName(RecordType type);

// A group's Raft hard state: its current term, its vote in that term (a peer id, empty
// for none) and its commit index.
struct HardState {
  uint64_t term = 0;
  std::string voted_for;
  uint64_t commit_index = 0;
  friend bool operator==(const HardState&, const HardState&) = default;
};

// One record to append; build it with the Make* functions.
struct LogRecord {
  RecordType type = RecordType::kEntry;
  uint64_t group = 0;
  uint64_t term = 0;
  uint64_t index = 0;
  std::string payload;
  // Instead of `payload`: a message whose serialization is the payload. The thread
  // that writes the record serializes it straight into the log's buffer: no copy on
  // the caller's thread. It must not change once the record is made.
  std::shared_ptr<const google::protobuf::MessageLite> message;
  size_t message_size = 0;  // its serialized size, taken when the record was made

  size_t PayloadSize() const { return message ? message_size : payload.size(); }

  static LogRecord MakeEntry(uint64_t group, uint64_t term, uint64_t index, std::string data);
  static LogRecord MakeEntry(uint64_t group, uint64_t term, uint64_t index,
                             std::shared_ptr<const google::protobuf::MessageLite> data);
  static LogRecord MakeHardState(uint64_t group, const HardState& hs);
  static LogRecord MakeTruncate(uint64_t group, uint64_t index);
  static LogRecord MakeSnapshotMark(uint64_t group, uint64_t term, uint64_t index);
};

// One entry read back.
struct LogEntry {
  uint64_t term = 0;
  uint64_t index = 0;
  std::string data;
};

struct SnapshotMark {
  uint64_t term = 0;
  uint64_t index = 0;
  friend bool operator==(const SnapshotMark&, const SnapshotMark&) = default;
};

// What the log holds of one group. Entries first_index..last_index are readable (none
// when first_index > last_index).
struct GroupState {
  bool exists = false;  // false: the log has nothing of this group
  uint64_t first_index = 1;
  uint64_t last_index = 0;
  uint64_t last_term = 0;  // the term of last_index (of the snapshot mark if no entries)
  std::optional<HardState> hard_state;
  std::optional<SnapshotMark> snapshot;
  uint64_t durable_index = 0;  // as last set by SetDurableIndex (not kept across restarts)
  Status status;               // Corruption when recovery found the group damaged
};

struct LogOptions {
  std::string dir;
  // fdatasync each batch before reporting it done; false also skips the fsyncs of the
  // directory (segment creation and deletion) and of a truncated tail.
  bool fsync = true;
  uint64_t segment_size_bytes = uint64_t{64} << 20;
  // Give each new segment its segment_size_bytes of disk when it is created (see
  // "Preallocation" in log_format.h). Where the file system cannot, or the disk has no
  // room for a whole segment, the segment grows as it is written.
  bool preallocate = true;
  // Where to record each fdatasync's duration and each append's time from
  // AppendAsync to durable (microseconds); none when null. Must outlive the log.
  Histogram* sync_latency = nullptr;
  Histogram* append_latency = nullptr;

  // `dir` with the rest from --log_fsync, --log_segment_size_mb and
  // --log_preallocate_segments.
  static LogOptions FromFlags(std::string dir);
};

// What Open() found and did. ToString() is a one-paragraph summary for the server log.
struct RecoveryReport {
  struct TornTail {  // the end of the last segment, cut off
    std::string segment;
    uint64_t offset = 0;
    uint64_t bytes_dropped = 0;
    uint64_t trailing_zeros = 0;   // of bytes_dropped, the run of zeros ending the file
    std::vector<uint64_t> groups;  // whose record was cut, when its header was intact
  };
  struct CorruptRegion {  // damaged bytes before the tail, skipped
    std::string segment;
    uint64_t offset = 0;
    uint64_t length = 0;
    std::string reason;
  };
  struct FailedGroup {
    uint64_t group = 0;
    Status status;
  };

  int segments_read = 0;
  uint64_t records_read = 0;
  std::optional<TornTail> torn_tail;
  std::vector<CorruptRegion> corruptions;
  std::vector<FailedGroup> failed_groups;

  bool clean() const { return !torn_tail && corruptions.empty() && failed_groups.empty(); }
  std::string ToString() const;
};

struct LogStats {
  uint64_t appends = 0;  // append calls accepted
  uint64_t records = 0;  // records written, checkpoints included
  uint64_t bytes = 0;    // bytes written, headers included
  uint64_t writes = 0;   // batches written (one write call each, usually)
  uint64_t fsyncs = 0;   // fdatasync calls on segment files
  uint64_t segments_live = 0;
};

class SharedLog {
 public:
  // Opens the log in opts.dir, creating the directory if missing, and recovers what is
  // there (see the file comment, and "Recovery" in log_format.h). Fills `report` (may
  // be null). Fails only when the directory cannot be read or written; damage to
  // records is reported, not fatal.
  static Result<std::unique_ptr<SharedLog>> Open(const LogOptions& opts, RecoveryReport* report);
  ~SharedLog();
  SharedLog(const SharedLog&) = delete;
  SharedLog& operator=(const SharedLog&) = delete;

  // Queues `records` to be written by the writer thread with whatever else is queued,
  // and runs `done` with the outcome once they are durable (written, without fsync),
  // on the writer thread. Refused at once, with `done` run on the calling thread, when
  // the records are invalid (InvalidArgument: an ENTRY index that is not the group's
  // last index + 1, a TRUNCATE or SNAPSHOT_MARK below the group's snapshot mark, a
  // REMOVE_GROUP), when a group is damaged (its Corruption), when an earlier write
  // failed (IOError) or when the log is shutting down (Aborted).
  // An empty `records` is a barrier: its `done` runs once everything submitted before
  // it is durable and the segments it released are deleted.
  // REQUIRES: the caller never truncates at or below an index it reported durable.
  void AppendAsync(std::vector<LogRecord> records, std::function<void(const Status&)> done)
      EXCLUDES(mu_);
  // AppendAsync, except that when the writer thread is idle and nothing else is queued,
  // the calling thread writes and fdatasyncs the records itself (with a checkpoint, a
  // segment roll or segment deletions that fall due) and runs `done` before returning:
  // no wakeup of the writer thread on the way. Otherwise as AppendAsync. For a caller
  // that may block for a write and an fdatasync; the same REQUIRES as Append for
  // `done` callbacks apply. Appends meanwhile queue up for the writer thread, which
  // takes over once the caller is done.
  void AppendHereIfIdle(std::vector<LogRecord> records, std::function<void(const Status&)> done)
      EXCLUDES(mu_);
  // AppendAsync, waiting for the outcome. REQUIRES: not called from a `done` callback
  // (the writer thread would wait for itself).
  Status Append(std::vector<LogRecord> records) EXCLUDES(mu_);

  // Appends to `out` the group's entries from `from_index` on, read from the segment
  // files: as many as fit in `max_bytes` of entry data, and at least one if there is
  // one. NotFound when the group is unknown or from_index is below its first index;
  // Corruption when the group is damaged or a checksum fails on the read.
  Status ReadEntries(uint64_t group, uint64_t from_index, uint64_t max_bytes,
                     std::vector<LogEntry>* out) EXCLUDES(mu_);
  // The term of the group's entry `index` (or of its snapshot mark, or 0 for index 0).
  Result<uint64_t> TermAt(uint64_t group, uint64_t index) EXCLUDES(mu_);
  GroupState GetGroupState(uint64_t group) EXCLUDES(mu_);
  // Every group the log holds (removed ones not), ascending.
  std::vector<uint64_t> Groups() EXCLUDES(mu_);

  // The group's applied state is durable up to `index`: its records at or below it are
  // no longer needed, except its newest hard state and snapshot mark. Not persisted by
  // itself: the next checkpoint records it (see "Checkpoint" in log_format.h); after a
  // restart the caller reports it again. A lower index than before is ignored.
  void SetDurableIndex(uint64_t group, uint64_t index) EXCLUDES(mu_);
  // The group was deleted: writes a REMOVE_GROUP record (durably) and forgets the
  // group; its records no longer keep segments alive. OK if the group is unknown.
  Status RemoveGroup(uint64_t group) EXCLUDES(mu_);
  // The groups that keep more than `max_segments` old (not active) segments alive, the
  // one pinning the oldest segment first.
  std::vector<uint64_t> GroupsPinning(size_t max_segments) EXCLUDES(mu_);

  LogStats Stats() const EXCLUDES(mu_);

 private:
  struct Segment;
  struct EntryLoc;
  struct Group;
  struct Pending;
  struct Planned;
  struct Batch;
  struct Scan;

  explicit SharedLog(LogOptions opts);

  // --- Recovery (Open only, before the writer thread starts).
  Status Recover(RecoveryReport* report) EXCLUDES(mu_);
  // `last_corruption` ("wal-N.log offset M" of the newest corrupt region, or empty)
  // is carried from segment to segment, for the messages of sequence gaps.
  Status RecoverSegment(uint64_t seq, const std::string& path, bool last,
                        std::string* last_corruption, RecoveryReport* report) REQUIRES(mu_);
  Status ScanSegment(const std::string& path, bool last, Scan* scan, RecoveryReport* report)
      REQUIRES(mu_);
  void RecoverRecord(Scan* scan, size_t offset, RecoveryReport* report) REQUIRES(mu_);
  void FailGroup(Group* g, uint64_t id, uint64_t segment, Status status) REQUIRES(mu_);

  // --- Appending.
  Status ValidateLocked(const std::vector<LogRecord>& records) REQUIRES(mu_);
  // Accepts `records` into the queue (true), or returns why not (`s`).
  bool EnqueueLocked(std::vector<LogRecord>* records, std::function<void(const Status&)>* done,
                     Status* s) REQUIRES(mu_);
  void WriterLoop() EXCLUDES(mu_);
  // Waits for work and the writing turn (writing_) and takes both: false when the log
  // is stopping (the queued appends then failed with Aborted).
  bool TakeBatch(Batch* b) EXCLUDES(mu_);
  // With the writing turn: takes the queue into `b` (and what falls due with it).
  void TakeBatchLocked(Batch* b) REQUIRES(mu_);
  // With the writing turn: writes and syncs `b`, finishes it, runs its callbacks, and
  // gives the turn back (waking the writer thread if work came meanwhile when
  // `wake_writer`).
  void RunBatch(Batch* b, bool wake_writer) EXCLUDES(mu_);
  // Takes the queue into `b` and plans it: checkpoint records if `checkpoint`, then
  // the queued records, each with its group sequence number.
  void PlanLocked(bool checkpoint, Batch* b) REQUIRES(mu_);
  // After the write: applies the batch to the index (or latches its error) and returns
  // the segments it released, for the caller to delete.
  std::vector<std::shared_ptr<Segment>> FinishBatch(const Batch& b) EXCLUDES(mu_);
  void AppendCheckpointLocked(std::vector<LogRecord>* out) REQUIRES(mu_);
  Status WriteBatch(bool roll, std::vector<Planned>* plan) EXCLUDES(mu_);
  Status CreateSegment(uint64_t seq) EXCLUDES(mu_);
  // Cuts the active segment's unused preallocated space off (closing the log).
  Status TrimActiveSegment();
  Status WriteAt(const Segment& seg, uint64_t offset, Slice data);
  Status SyncFile(const Segment& seg);
  Status SyncDir();
  void ApplyPlanLocked(const std::vector<Planned>& plan) REQUIRES(mu_);
  void LatchErrorLocked(const Status& s) REQUIRES(mu_);

  // --- Group state (shared by recovery and the writer).
  Group& GroupLocked(uint64_t id) REQUIRES(mu_);
  Status ApplyRecordLocked(Group* g, RecordType type, uint64_t term, uint64_t index, Slice payload,
                           uint32_t crc, uint64_t segment, uint64_t payload_offset) REQUIRES(mu_);
  Status CheckGroupReadable(uint64_t group, const Group** g) REQUIRES(mu_);

  // --- Release.
  // The oldest segment `g` needs now (`with_durable`: once a checkpoint records its
  // durable index); UINT64_MAX when none.
  uint64_t PinLocked(const Group& g, bool with_durable) const REQUIRES(mu_);
  // Whether a checkpoint would let the oldest segment go.
  bool CheckpointWouldReleaseLocked() const REQUIRES(mu_);
  // Removes from segments_ the old segments no group needs; the caller deletes them.
  std::vector<std::shared_ptr<Segment>> TakeReleasableLocked() REQUIRES(mu_);
  void DeleteSegments(const std::vector<std::shared_ptr<Segment>>& segs) EXCLUDES(mu_);

  std::string SegmentPath(uint64_t seq) const;

  const LogOptions opts_;

  mutable Mutex mu_;
  CondVar writer_cv_;
  std::map<uint64_t, Group> groups_ GUARDED_BY(mu_);  // removed groups stay as tombstones
  std::map<uint64_t, std::shared_ptr<Segment>> segments_ GUARDED_BY(mu_);  // by sequence
  uint64_t active_seq_ GUARDED_BY(mu_) = 0;
  std::vector<Pending> queue_ GUARDED_BY(mu_);
  bool checkpoint_requested_ GUARDED_BY(mu_) = false;
  bool release_check_needed_ GUARDED_BY(mu_) = false;
  bool stopping_ GUARDED_BY(mu_) = false;
  // One thread at a time writes: the writer thread, or a caller of AppendHereIfIdle.
  // The fields below marked "writer thread only" belong to whoever holds this turn.
  bool writing_ GUARDED_BY(mu_) = false;
  Status error_ GUARDED_BY(mu_);  // the latched write error
  LogStats stats_ GUARDED_BY(mu_);

  // Writer thread only, or whoever holds the writing turn (and Open before the writer
  // starts).
  std::shared_ptr<Segment> active_;
  uint64_t active_size_ = 0;
  bool active_preallocated_ = false;  // the active segment has space past active_size_
  bool preallocate_ = false;          // opts_.preallocate, until the file system refuses
  uint64_t last_segment_seq_ = 0;     // the newest segment file created or found
  std::string buf_;

  std::thread writer_;
};

}  // namespace nyala::consensus
