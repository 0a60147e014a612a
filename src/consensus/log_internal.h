// Internal to the SharedLog implementation (log.cc, log_recovery.cc, log_writer.cc):
// the private structs that log.h only declares, and the helpers those files share.
// Nothing else includes it. The locking rules are SharedLog's (log.h): a struct here
// reached through SharedLog's members is guarded as that member is.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "consensus/log.h"

namespace nyala::consensus {

// "<segment> offset <offset>", naming a place in the log for messages.
std::string Where(const std::string& segment, uint64_t offset);
// An IOError naming `path`, the operation `op` and errno `err`.
Status ErrnoStatus(const std::string& path, const char* op, int err);
// A record with a plain payload (the Make* functions, and RemoveGroup's REMOVE_GROUP).
LogRecord Record(RecordType type, uint64_t group, uint64_t term, uint64_t index,
                 std::string payload = "");

// ---------------------------------------------------------------------------------
// Internal state.

struct SharedLog::Segment {
  Segment(uint64_t s, std::string p, int f) : seq(s), path(std::move(p)), fd(f) {}
  ~Segment() {
    if (fd >= 0) close(fd);
  }
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;

  const uint64_t seq;
  const std::string path;
  const int fd;
};

struct SharedLog::EntryLoc {
  uint64_t term;
  uint64_t segment;
  uint64_t offset;  // of the payload
  uint32_t length;
  uint32_t crc;
};

struct SharedLog::Group {
  // Submission view: the group as of every accepted append, written or still queued.
  // AppendAsync validates against it.
  bool sub_exists = false;  // an accepted append names it, after any REMOVE_GROUP
  uint64_t sub_last = 0;
  uint64_t sub_snapshot = 0;

  // What is written (applied in file order).
  uint64_t last_seq = 0;     // 0: no record yet
  bool removed = false;      // a tombstone: keeps last_seq for a recreated group
  uint64_t first_entry = 0;  // index of entries[0]
  std::deque<EntryLoc> entries;
  uint64_t last_index = 0;
  uint64_t last_term = 0;
  std::optional<HardState> hard_state;
  uint64_t hard_state_segment = 0;
  std::optional<SnapshotMark> snapshot;
  uint64_t snapshot_segment = 0;
  uint64_t durable = 0;
  Status failed;                // Corruption once damage was found
  uint64_t failed_segment = 0;  // the oldest segment holding the evidence
  // Recovery only: entries resumed after a gap (index `gap_below` + 1 followed a lower
  // last index). Legitimate when a later snapshot mark reaches `gap_below`: the entries
  // between were released with their segments once that mark was written (a checkpoint
  // before it had carried an older mark). Damage otherwise, found at `gap_where`.
  uint64_t gap_below = 0;
  std::string gap_where;
  uint64_t gap_segment = 0;
  uint64_t last_record_segment = 0;

  bool live() const { return last_seq > 0 && !removed; }
  uint64_t first_index() const { return entries.empty() ? last_index + 1 : first_entry; }
  std::optional<uint64_t> TermAt(uint64_t index) const {
    if (index == 0) return 0;
    if (!entries.empty() && index >= first_entry && index <= last_index) {
      return entries[index - first_entry].term;
    }
    if (index == last_index) return last_term;
    if (snapshot && index == snapshot->index) return snapshot->term;
    return std::nullopt;
  }
  // Forgets everything but the sequence numbers (REMOVE_GROUP).
  void Reset() {
    const uint64_t seq = last_seq;
    *this = Group();
    last_seq = seq;
    removed = true;
  }
};

struct SharedLog::Pending {
  std::vector<LogRecord> records;
  std::function<void(const Status&)> done;
  int64_t enqueued_us = 0;  // when queued, if LogOptions::append_latency is set
};

struct SharedLog::Planned {
  const LogRecord* rec;
  uint64_t seq;
  uint64_t segment = 0;
  uint64_t offset = 0;  // of the payload
  uint32_t crc = 0;
  size_t buf_offset = 0;  // of the payload in buf_, once WriteBatch put it there
  uint32_t length = 0;    // of the payload
};

// What the writer takes off the queue and writes at once.
struct SharedLog::Batch {
  std::vector<Pending> pending;
  std::vector<LogRecord> ckpt;  // the checkpoint records, if any, written first
  std::vector<Planned> plan;    // every record in file order
  bool roll = false;            // start a new segment first
  Status status;
};

// Recovery's cursor.
struct SharedLog::Scan {
  uint64_t seq = 0;
  std::string name;
  std::string data;
  std::string last_corruption;  // "wal-... offset N" of the newest corrupt region
};

}  // namespace nyala::consensus
