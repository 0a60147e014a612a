// SharedLog (log.h): records and options, the index of each group and reads from it.
// Recovery is in log_recovery.cc; appending, the writer thread, segments and their
// release in log_writer.cc; the on-disk format in log_format.{h,cc}.
#include "consensus/log.h"
#include "common/status.h"

#include <gflags/gflags.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/crc32c.h"
#include "common/flag_tags.h"
#include "consensus/log_format.h"
#include "consensus/log_internal.h"

DEFINE_bool(log_fsync, true,
            "fdatasync the consensus log (--fs_wal_dir) after every group-committed batch, "
            "before the batch's appends are reported done: an entry is then on stable "
            "storage before it is acknowledged or counted toward a majority, and a vote "
            "before it is sent, so an acknowledged write survives a power loss. false skips "
            "the fdatasync (Kudu's default): acknowledged entries survive a crash of the "
            "process but not of the machine. For tests, and for operators who choose that.");
DEFINE_int32(log_segment_size_mb, 64,
             "Size in MiB at which the consensus log starts a new segment file. Segments are "
             "deleted whole, oldest first, once no consensus group needs their records.");

DEFINE_bool(log_preallocate_segments, true,
            "Give each new consensus log segment its --log_segment_size_mb of disk when it "
            "is created (fallocate), so that appends do not grow the file and an fdatasync "
            "need not write its size: fewer writes per sync and faster syncs on ext4 and "
            "xfs. A segment is rolled once full; the newest one's unused end is cut off when "
            "the log is closed, or after a crash by the next start's recovery. "
            "Where the file system cannot preallocate, or the disk has no room for a whole "
            "segment, the segment grows as it is written (with a warning).");

DEFINE_int32(fault_injection_log_sync_delay_ms, 0,
             "Fault injection, for tests only: every fdatasync of the consensus log waits this "
             "long first, as a slow disk would (changeable while the server runs). 0: off");
TAG_FLAG(fault_injection_log_sync_delay_ms, runtime);
TAG_FLAG(fault_injection_log_sync_delay_ms, unsafe);
TAG_FLAG(fault_injection_log_sync_delay_ms, hidden);

namespace nyala::consensus {

namespace {

Status PreadFull(int fd, const std::string& path, uint64_t offset, size_t n, std::string* out) {
  out->resize(n);
  size_t done = 0;
  while (done < n) {
    ssize_t r = pread(fd, out->data() + done, n - done, off_t(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return ErrnoStatus(path, "pread", errno);
    if (r == 0)
      return Status::Corruption(path + ": unexpected end of file at offset",
                                std::to_string(offset + done));
    done += size_t(r);
  }
  return Status::OK();
}

}  // namespace

std::string Where(const std::string& segment, uint64_t offset) {
  return segment + " offset " + std::to_string(offset);
}

Status ErrnoStatus(const std::string& path, const char* op, int err) {
  return Status::IOError(path + ": " + op, strerror(err), err);
}

// ---------------------------------------------------------------------------------
// Records and options.

LogRecord Record(RecordType type, uint64_t group, uint64_t term, uint64_t index,
                 std::string payload) {
  LogRecord r;
  r.type = type;
  r.group = group;
  r.term = term;
  r.index = index;
  r.payload = std::move(payload);
  return r;
}

LogRecord LogRecord::MakeEntry(uint64_t group, uint64_t term, uint64_t index, std::string data) {
  return Record(RecordType::kEntry, group, term, index, std::move(data));
}

LogRecord LogRecord::MakeEntry(uint64_t group, uint64_t term, uint64_t index,
                               std::shared_ptr<const google::protobuf::MessageLite> data) {
  LogRecord r = Record(RecordType::kEntry, group, term, index);
  r.message_size = data->ByteSizeLong();
  r.message = std::move(data);
  return r;
}

LogRecord LogRecord::MakeHardState(uint64_t group, const HardState& hs) {
  return Record(RecordType::kHardState, group, hs.term, hs.commit_index, EncodeHardState(hs));
}

LogRecord LogRecord::MakeTruncate(uint64_t group, uint64_t index) {
  return Record(RecordType::kTruncate, group, 0, index);
}

LogRecord LogRecord::MakeSnapshotMark(uint64_t group, uint64_t term, uint64_t index) {
  return Record(RecordType::kSnapshotMark, group, term, index);
}

LogOptions LogOptions::FromFlags(std::string dir) {
  LogOptions o;
  o.dir = std::move(dir);
  o.fsync = FLAGS_log_fsync;
  o.segment_size_bytes = uint64_t(std::max(1, FLAGS_log_segment_size_mb)) << 20;
  o.preallocate = FLAGS_log_preallocate_segments;
  return o;
}

// ---------------------------------------------------------------------------------
// Construction and the index of each group.

SharedLog::SharedLog(LogOptions opts) : opts_(std::move(opts)), preallocate_(opts_.preallocate) {}

std::string SharedLog::SegmentPath(uint64_t seq) const {
  return opts_.dir + "/" + SegmentName(seq);
}

SharedLog::Group& SharedLog::GroupLocked(uint64_t id) { return groups_[id]; }

Status SharedLog::ApplyRecordLocked(Group* g, RecordType type, uint64_t term, uint64_t index,
                                    Slice payload, uint32_t crc, uint64_t segment,
                                    uint64_t payload_offset) {
  switch (type) {
    case RecordType::kEntry: {
      // A group seen from the middle of its log (older segments released) starts
      // wherever its first surviving entry is.
      const bool fresh = g->entries.empty() && !g->snapshot && g->last_index == 0;
      if (!fresh && index != g->last_index + 1) {
        return Status::Corruption("entry " + std::to_string(index) + " follows last index " +
                                  std::to_string(g->last_index));
      }
      if (g->entries.empty()) g->first_entry = index;
      g->entries.push_back(EntryLoc{term, segment, payload_offset, uint32_t(payload.size()), crc});
      g->last_index = index;
      g->last_term = term;
      return Status::OK();
    }
    case RecordType::kHardState: {
      HardState hs;
      if (!DecodeHardState(payload, &hs)) return Status::Corruption("short HARD_STATE payload");
      g->hard_state = std::move(hs);
      g->hard_state_segment = segment;
      return Status::OK();
    }
    case RecordType::kTruncate: {
      if (index == 0) return Status::Corruption("TRUNCATE at index 0");
      if (g->snapshot && index <= g->snapshot->index) index = g->snapshot->index + 1;
      if (index > g->last_index) return Status::OK();
      if (!g->entries.empty() && index > g->first_entry) {
        g->entries.resize(index - g->first_entry);
        g->last_index = index - 1;
        g->last_term = g->entries.back().term;
      } else {
        g->entries.clear();
        g->last_index = g->snapshot ? g->snapshot->index : 0;
        g->last_term = g->snapshot ? g->snapshot->term : 0;
      }
      return Status::OK();
    }
    case RecordType::kSnapshotMark: {
      if (g->snapshot && index < g->snapshot->index) return Status::OK();  // superseded
      if (index >= g->last_index) {
        g->entries.clear();
        g->last_index = index;
        g->last_term = term;
      } else if (!g->entries.empty() && index >= g->first_entry) {
        g->entries.erase(g->entries.begin(), g->entries.begin() + (index - g->first_entry + 1));
        g->first_entry = index + 1;
      }
      g->snapshot = SnapshotMark{term, index};
      g->snapshot_segment = segment;
      return Status::OK();
    }
    case RecordType::kRemoveGroup:
      g->Reset();
      return Status::OK();
  }
  return Status::Corruption("unknown record type " + std::to_string(int(type)));
}

Status SharedLog::CheckGroupReadable(uint64_t group, const Group** out) {
  auto it = groups_.find(group);
  if (it == groups_.end() || !it->second.live()) {
    return Status::NotFound("consensus log: no group", std::to_string(group));
  }
  if (!it->second.failed.ok()) return it->second.failed;
  *out = &it->second;
  return Status::OK();
}

// ---------------------------------------------------------------------------------
// Reads.

Status SharedLog::ReadEntries(uint64_t group, uint64_t from_index, uint64_t max_bytes,
                              std::vector<LogEntry>* out) {
  struct ToRead {
    uint64_t index;
    EntryLoc loc;
    std::shared_ptr<Segment> seg;
  };
  std::vector<ToRead> reads;
  {
    MutexLock l(mu_);
    const Group* g = nullptr;
    RETURN_NOT_OK(CheckGroupReadable(group, &g));
    if (from_index < g->first_index()) {
      return Status::NotFound("group " + std::to_string(group) + ": entry " +
                              std::to_string(from_index) + " is below the first index " +
                              std::to_string(g->first_index()));
    }
    uint64_t bytes = 0;
    for (uint64_t i = from_index; !g->entries.empty() && i <= g->last_index; i++) {
      const EntryLoc& loc = g->entries[i - g->first_entry];
      if (!reads.empty() && bytes + loc.length > max_bytes) break;
      auto sit = segments_.find(loc.segment);
      if (sit == segments_.end()) {
        return Status::Corruption("group " + std::to_string(group) + ": entry " +
                                  std::to_string(i) + " is in deleted segment " +
                                  SegmentName(loc.segment));
      }
      bytes += loc.length;
      reads.push_back(ToRead{i, loc, sit->second});
    }
  }
  for (const ToRead& r : reads) {
    LogEntry e;
    e.term = r.loc.term;
    e.index = r.index;
    RETURN_NOT_OK(PreadFull(r.seg->fd, r.seg->path, r.loc.offset, r.loc.length, &e.data));
    if (Crc32c(0, e.data.data(), e.data.size()) != r.loc.crc) {
      return Status::Corruption("group " + std::to_string(group) + ": entry " +
                                std::to_string(r.index) + " at " +
                                Where(SegmentName(r.seg->seq), r.loc.offset - kRecordHeaderSize) +
                                ": payload checksum mismatch on read");
    }
    out->push_back(std::move(e));
  }
  return Status::OK();
}

Result<uint64_t> SharedLog::TermAt(uint64_t group, uint64_t index) {
  MutexLock l(mu_);
  const Group* g = nullptr;
  RETURN_NOT_OK(CheckGroupReadable(group, &g));
  std::optional<uint64_t> term = g->TermAt(index);
  if (!term) {
    return Status::NotFound("group " + std::to_string(group) + ": no entry " +
                            std::to_string(index));
  }
  return *term;
}

GroupState SharedLog::GetGroupState(uint64_t group) {
  MutexLock l(mu_);
  GroupState st;
  auto it = groups_.find(group);
  if (it == groups_.end() || !it->second.live()) return st;
  const Group& g = it->second;
  st.exists = true;
  st.first_index = g.first_index();
  st.last_index = g.last_index;
  st.last_term = g.last_term;
  st.hard_state = g.hard_state;
  st.snapshot = g.snapshot;
  st.durable_index = g.durable;
  st.status = g.failed;
  return st;
}

std::vector<uint64_t> SharedLog::Groups() {
  MutexLock l(mu_);
  std::vector<uint64_t> out;
  for (const auto& [id, g] : groups_) {
    if (g.live()) out.push_back(id);
  }
  return out;
}

LogStats SharedLog::Stats() const {
  MutexLock l(mu_);
  return stats_;
}

// ---------------------------------------------------------------------------------
// Release (what pins a segment, and the deletion, are in log_writer.cc).

void SharedLog::SetDurableIndex(uint64_t group, uint64_t index) {
  MutexLock l(mu_);
  auto it = groups_.find(group);
  if (it == groups_.end() || !it->second.live() || index <= it->second.durable) return;
  it->second.durable = index;
  if (CheckpointWouldReleaseLocked()) {
    checkpoint_requested_ = true;
    writer_cv_.notify_one();
  }
}

std::vector<uint64_t> SharedLog::GroupsPinning(size_t max_segments) {
  MutexLock l(mu_);
  std::vector<std::pair<uint64_t, uint64_t>> pins;  // (pin, group)
  for (const auto& [id, g] : groups_) {
    const uint64_t pin = PinLocked(g, true);
    if (pin >= active_seq_) continue;
    size_t kept = 0;
    for (auto it = segments_.lower_bound(pin); it != segments_.end() && it->first < active_seq_;
         ++it) {
      kept++;
    }
    if (kept > max_segments) pins.emplace_back(pin, id);
  }
  std::sort(pins.begin(), pins.end());
  std::vector<uint64_t> out;
  for (const auto& [pin, id] : pins) out.push_back(id);
  return out;
}

}  // namespace nyala::consensus
