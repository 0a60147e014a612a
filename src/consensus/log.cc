#include "consensus/log.h"

#include <fcntl.h>
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <deque>
#include <filesystem>
#include <future>
#include <sstream>

#include "common/coding.h"
#include "common/crc32c.h"

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

namespace nyala::consensus {

namespace {

constexpr char kMagic[8] = {'N', 'Y', 'W', 'A', 'L', '0', '0', '1'};
constexpr uint32_t kFormatVersion = 1;
constexpr size_t kSegmentHeaderSize = 24;
constexpr size_t kRecordHeaderSize = 45;
constexpr size_t kRecordHeaderCrcOffset = 41;
constexpr size_t kHardStateFixedSize = 16;
constexpr size_t kMaxPayload = size_t{1} << 30;

bool ValidType(uint8_t t) { return t >= 1 && t <= 5; }

struct RecordHeader {
  uint32_t length = 0;
  uint32_t payload_crc = 0;
  uint8_t type = 0;
  uint64_t group = 0;
  uint64_t seq = 0;
  uint64_t term = 0;
  uint64_t index = 0;
};

void EncodeRecordHeader(const RecordHeader& h, uint8_t* p) {
  EncodeFixedLE<uint32_t>(p, h.length);
  EncodeFixedLE<uint32_t>(p + 4, h.payload_crc);
  p[8] = h.type;
  EncodeFixedLE<uint64_t>(p + 9, h.group);
  EncodeFixedLE<uint64_t>(p + 17, h.seq);
  EncodeFixedLE<uint64_t>(p + 25, h.term);
  EncodeFixedLE<uint64_t>(p + 33, h.index);
  EncodeFixedLE<uint32_t>(p + kRecordHeaderCrcOffset, Crc32c(0, p, kRecordHeaderCrcOffset));
}

// False when the header's CRC fails.
bool DecodeRecordHeader(const uint8_t* p, RecordHeader* h) {
  if (Crc32c(0, p, kRecordHeaderCrcOffset) != DecodeFixedLE<uint32_t>(p + kRecordHeaderCrcOffset)) {
    return false;
  }
  h->length = DecodeFixedLE<uint32_t>(p);
  h->payload_crc = DecodeFixedLE<uint32_t>(p + 4);
  h->type = p[8];
  h->group = DecodeFixedLE<uint64_t>(p + 9);
  h->seq = DecodeFixedLE<uint64_t>(p + 17);
  h->term = DecodeFixedLE<uint64_t>(p + 25);
  h->index = DecodeFixedLE<uint64_t>(p + 33);
  return true;
}

std::string EncodeSegmentHeader(uint64_t seq) {
  uint8_t b[kSegmentHeaderSize];
  memcpy(b, kMagic, 8);
  EncodeFixedLE<uint32_t>(b + 8, kFormatVersion);
  EncodeFixedLE<uint64_t>(b + 12, seq);
  EncodeFixedLE<uint32_t>(b + 20, Crc32c(0, b, 20));
  return std::string(reinterpret_cast<char*>(b), sizeof(b));
}

// Empty when `data` starts with a good header of segment `seq`, else what is wrong.
std::string CheckSegmentHeader(const std::string& data, uint64_t seq) {
  if (data.size() < kSegmentHeaderSize) return "short segment header";
  const auto* b = reinterpret_cast<const uint8_t*>(data.data());
  if (memcmp(b, kMagic, 8) != 0) return "bad segment magic";
  if (Crc32c(0, b, 20) != DecodeFixedLE<uint32_t>(b + 20))
    return "segment header checksum mismatch";
  if (DecodeFixedLE<uint32_t>(b + 8) != kFormatVersion) return "unknown segment format version";
  if (DecodeFixedLE<uint64_t>(b + 12) != seq) return "segment sequence differs from its file name";
  return "";
}

enum class RecordCheck { kValid, kShortHeader, kBadHeader, kShortPayload, kBadPayload, kBadType };

const char* CheckReason(RecordCheck c) {
  switch (c) {
    case RecordCheck::kValid:
      return "valid";
    case RecordCheck::kShortHeader:
      return "short record header";
    case RecordCheck::kBadHeader:
      return "record header checksum mismatch";
    case RecordCheck::kShortPayload:
      return "short record payload";
    case RecordCheck::kBadPayload:
      return "record payload checksum mismatch";
    case RecordCheck::kBadType:
      return "unknown record type";
  }
  return "?";
}

// Whether the header (so the group) of a record that failed `c` can be trusted.
bool HeaderIntact(RecordCheck c) {
  return c == RecordCheck::kShortPayload || c == RecordCheck::kBadPayload ||
         c == RecordCheck::kBadType;
}

RecordCheck CheckRecord(const std::string& data, size_t off, RecordHeader* h) {
  if (data.size() - off < kRecordHeaderSize) return RecordCheck::kShortHeader;
  const auto* p = reinterpret_cast<const uint8_t*>(data.data()) + off;
  if (!DecodeRecordHeader(p, h)) return RecordCheck::kBadHeader;
  if (data.size() - off - kRecordHeaderSize < h->length) return RecordCheck::kShortPayload;
  if (Crc32c(0, p + kRecordHeaderSize, h->length) != h->payload_crc) {
    return RecordCheck::kBadPayload;
  }
  if (!ValidType(h->type)) return RecordCheck::kBadType;
  return RecordCheck::kValid;
}

// The offset at or after `from` of the next whole, valid record; npos if none.
size_t FindNextValid(const std::string& data, size_t from) {
  const auto* p = reinterpret_cast<const uint8_t*>(data.data());
  for (size_t off = from; off + kRecordHeaderSize <= data.size(); off++) {
    // Cheap filters before the CRCs.
    if (!ValidType(p[off + 8])) continue;
    if (DecodeFixedLE<uint32_t>(p + off) > data.size() - off - kRecordHeaderSize) continue;
    RecordHeader h;
    if (CheckRecord(data, off, &h) == RecordCheck::kValid) return off;
  }
  return std::string::npos;
}

// Where the run of zeros that ends `data` starts (data.size() when none).
size_t StartOfTrailingZeros(const std::string& data) {
  size_t end = data.size();
  while (end > 0 && data[end - 1] == 0) end--;
  return end;
}

std::string SegmentName(uint64_t seq) {
  char name[32];
  snprintf(name, sizeof(name), "wal-%016" PRIu64 ".log", seq);
  return name;
}

// The sequence of a segment file name, or 0 when `name` is not one.
uint64_t ParseSegmentName(const std::string& name) {
  if (name.size() != 24 || name.compare(0, 4, "wal-") != 0 || name.compare(20, 4, ".log") != 0) {
    return 0;
  }
  uint64_t seq = 0;
  for (size_t i = 4; i < 20; i++) {
    if (name[i] < '0' || name[i] > '9') return 0;
    seq = seq * 10 + uint64_t(name[i] - '0');
  }
  return seq;
}

std::string Where(const std::string& segment, uint64_t offset) {
  return segment + " offset " + std::to_string(offset);
}

Status ErrnoStatus(const std::string& path, const char* op, int err) {
  return Status::IOError(path + ": " + op, strerror(err), err);
}

Status ReadWholeFile(const std::string& path, std::string* out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(path, "open", errno);
  out->clear();
  char buf[1 << 16];
  while (true) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      return ErrnoStatus(path, "read", err);
    }
    if (n == 0) break;
    out->append(buf, size_t(n));
  }
  close(fd);
  return Status::OK();
}

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

// Cuts the file at `size`, fsync'ed if `sync`.
Status TruncateFile(const std::string& path, uint64_t size, bool sync) {
  if (truncate(path.c_str(), off_t(size)) != 0) return ErrnoStatus(path, "truncate", errno);
  if (!sync) return Status::OK();
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(path, "open", errno);
  const int r = fsync(fd);
  const int err = errno;
  close(fd);
  if (r != 0) return ErrnoStatus(path, "fsync", err);
  return Status::OK();
}

std::string EncodeHardState(const HardState& hs) {
  std::string p;
  PutFixedLE<uint64_t>(&p, hs.term);
  PutFixedLE<uint64_t>(&p, hs.commit_index);
  p.append(hs.voted_for);
  return p;
}

bool DecodeHardState(Slice p, HardState* hs) {
  if (p.size() < kHardStateFixedSize) return false;
  hs->term = DecodeFixedLE<uint64_t>(p.data());
  hs->commit_index = DecodeFixedLE<uint64_t>(p.data() + 8);
  hs->voted_for.assign(p.cdata() + kHardStateFixedSize, p.size() - kHardStateFixedSize);
  return true;
}

}  // namespace

// ---------------------------------------------------------------------------------
// Records and options.

const char* RecordTypeName(RecordType type) {
  switch (type) {
    case RecordType::kEntry:
      return "ENTRY";
    case RecordType::kHardState:
      return "HARD_STATE";
    case RecordType::kTruncate:
      return "TRUNCATE";
    case RecordType::kSnapshotMark:
      return "SNAPSHOT_MARK";
    case RecordType::kRemoveGroup:
      return "REMOVE_GROUP";
  }
  return "UNKNOWN";
}

namespace {
LogRecord Record(RecordType type, uint64_t group, uint64_t term, uint64_t index,
                 std::string payload = "") {
  LogRecord r;
  r.type = type;
  r.group = group;
  r.term = term;
  r.index = index;
  r.payload = std::move(payload);
  return r;
}
}  // namespace

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

std::string RecoveryReport::ToString() const {
  std::ostringstream os;
  os << "consensus log recovery: " << segments_read << " segments, " << records_read << " records";
  if (clean()) {
    os << ", clean";
    return os.str();
  }
  if (torn_tail) {
    os << "; torn tail truncated at " << Where(torn_tail->segment, torn_tail->offset) << " ("
       << torn_tail->bytes_dropped << " bytes dropped";
    if (torn_tail->trailing_zeros >= 4096) {  // not a few zero bytes of a torn header
      os << ", the last " << torn_tail->trailing_zeros
         << " of them zeros: preallocated space never written";
    }
    if (!torn_tail->groups.empty()) {
      os << ", records of group";
      for (uint64_t g : torn_tail->groups) os << " " << g;
    }
    os << ")";
  }
  for (const CorruptRegion& c : corruptions) {
    os << "; corrupt region at " << Where(c.segment, c.offset) << " (" << c.length
       << " bytes skipped: " << c.reason << ")";
  }
  for (const FailedGroup& f : failed_groups) {
    os << "; group " << f.group << " FAILED: " << f.status.ToString();
  }
  return os.str();
}

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

SharedLog::SharedLog(LogOptions opts) : opts_(std::move(opts)), preallocate_(opts_.preallocate) {}

std::string SharedLog::SegmentPath(uint64_t seq) const {
  return opts_.dir + "/" + SegmentName(seq);
}

SharedLog::Group& SharedLog::GroupLocked(uint64_t id) { return groups_[id]; }

// ---------------------------------------------------------------------------------
// Open and recovery.

Result<std::unique_ptr<SharedLog>> SharedLog::Open(const LogOptions& opts, RecoveryReport* report) {
  if (opts.dir.empty()) return Status::InvalidArgument("consensus log: no directory given");
  std::error_code ec;
  std::filesystem::create_directories(opts.dir, ec);
  if (ec) return Status::IOError(opts.dir + ": create directory", ec.message());
  RecoveryReport local;
  if (report == nullptr) report = &local;
  *report = RecoveryReport();

  std::unique_ptr<SharedLog> log(new SharedLog(opts));
  RETURN_NOT_OK(log->Recover(report));
  if (!report->clean()) LOG(WARNING) << report->ToString();

  // A fresh segment, opening with a checkpoint of every group.
  Batch b;
  {
    MutexLock l(log->mu_);
    log->PlanLocked(/*checkpoint=*/true, &b);
  }
  RETURN_NOT_OK(log->WriteBatch(/*roll=*/true, &b.plan));
  log->DeleteSegments(log->FinishBatch(b));
  log->writer_ = std::thread([raw = log.get()] { raw->WriterLoop(); });
  return log;
}

Status SharedLog::Recover(RecoveryReport* report) {
  std::vector<std::pair<uint64_t, std::string>> files;
  std::error_code ec;
  std::filesystem::directory_iterator it(opts_.dir, ec);
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const uint64_t seq = ParseSegmentName(it->path().filename().string());
    if (seq != 0) files.emplace_back(seq, it->path().string());
  }
  if (ec) return Status::IOError(opts_.dir + ": list directory", ec.message());
  std::sort(files.begin(), files.end());

  MutexLock l(mu_);
  std::string last_corruption;  // carried from segment to segment
  for (size_t i = 0; i < files.size(); i++) {
    RETURN_NOT_OK(RecoverSegment(files[i].first, files[i].second, i + 1 == files.size(),
                                 &last_corruption, report));
  }
  last_segment_seq_ = files.empty() ? 0 : files.back().first;
  for (auto& [id, g] : groups_) {
    if (g.gap_below != 0 && !g.removed) {
      FailGroup(&g, id, g.gap_segment,
                Status::Corruption("group " + std::to_string(id) + ": " + g.gap_where +
                                   ", and no later snapshot mark covers the missing entries"));
    }
    g.gap_below = 0;
    g.sub_exists = g.live();
    g.sub_last = g.last_index;
    g.sub_snapshot = g.snapshot ? g.snapshot->index : 0;
    if (!g.failed.ok() && !g.removed) report->failed_groups.push_back({id, g.failed});
  }
  return Status::OK();
}

Status SharedLog::RecoverSegment(uint64_t seq, const std::string& path, bool last,
                                 std::string* last_corruption, RecoveryReport* report) {
  Scan scan;
  scan.seq = seq;
  scan.name = SegmentName(seq);
  scan.last_corruption = std::move(*last_corruption);
  Status s = ScanSegment(path, last, &scan, report);
  *last_corruption = std::move(scan.last_corruption);
  return s;
}

Status SharedLog::ScanSegment(const std::string& path, bool last, Scan* scan_ptr,
                              RecoveryReport* report) {
  Scan& scan = *scan_ptr;
  const uint64_t seq = scan.seq;
  RETURN_NOT_OK(ReadWholeFile(path, &scan.data));
  report->segments_read++;
  const std::string& data = scan.data;

  size_t off = kSegmentHeaderSize;
  // In the newest segment, zeros from here to the end are preallocated space never
  // written (the log crashed before cutting it off), where the records end. The run
  // may begin inside a valid record whose last bytes are zeros: it is checked only
  // where a record fails.
  const size_t zeros_from = last ? StartOfTrailingZeros(data) : data.size();
  const std::string bad_header = CheckSegmentHeader(data, seq);
  if (!bad_header.empty()) {
    if (last && FindNextValid(data, 0) == std::string::npos) {
      // Torn while the segment was being created: nothing of it was ever acknowledged.
      report->torn_tail =
          RecoveryReport::TornTail{scan.name, 0, data.size(), data.size() - zeros_from, {}};
      if (unlink(path.c_str()) != 0) return ErrnoStatus(path, "unlink", errno);
      if (opts_.fsync) RETURN_NOT_OK(SyncDir());
      return Status::OK();
    }
    report->corruptions.push_back(
        {scan.name, 0, std::min(data.size(), kSegmentHeaderSize), bad_header});
    scan.last_corruption = Where(scan.name, 0);
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(path, "open", errno);
  segments_[seq] = std::make_shared<Segment>(seq, path, fd);

  while (off < data.size()) {
    RecordHeader h;
    const RecordCheck check = CheckRecord(data, off, &h);
    if (check == RecordCheck::kValid) {
      RecoverRecord(&scan, off, report);
      off += kRecordHeaderSize + h.length;
      continue;
    }
    if (off >= zeros_from) {
      RETURN_NOT_OK(TruncateFile(path, off, opts_.fsync));
      break;
    }
    const bool intact = HeaderIntact(check);
    const size_t resume_from = check == RecordCheck::kBadPayload || check == RecordCheck::kBadType
                                   ? off + kRecordHeaderSize + h.length
                                   : off + 1;
    const size_t resume = FindNextValid(data, resume_from);
    if (resume == std::string::npos && last) {
      // A torn write: nothing valid follows in the newest segment.
      report->torn_tail = RecoveryReport::TornTail{
          scan.name, off, data.size() - off, data.size() - std::max(off, zeros_from), {}};
      if (intact) report->torn_tail->groups.push_back(h.group);
      RETURN_NOT_OK(TruncateFile(path, off, opts_.fsync));
      break;
    }
    const size_t end = resume == std::string::npos ? data.size() : resume;
    report->corruptions.push_back({scan.name, off, end - off, CheckReason(check)});
    scan.last_corruption = Where(scan.name, off);
    if (intact) {
      FailGroup(&GroupLocked(h.group), h.group, seq,
                Status::Corruption("group " + std::to_string(h.group) + ": record at " +
                                   Where(scan.name, off) + ": " + CheckReason(check)));
    }
    off = end;
  }
  return Status::OK();
}

void SharedLog::RecoverRecord(Scan* scan, size_t offset, RecoveryReport* report) {
  RecordHeader h;
  const auto* p = reinterpret_cast<const uint8_t*>(scan->data.data()) + offset;
  CHECK(DecodeRecordHeader(p, &h));
  report->records_read++;
  Group& g = GroupLocked(h.group);
  if (g.last_seq != 0 && h.seq != g.last_seq + 1) {
    std::string msg = "group " + std::to_string(h.group) + ": records lost: sequence " +
                      std::to_string(g.last_seq + 1) + " expected, " + std::to_string(h.seq) +
                      " found at " + Where(scan->name, offset);
    if (!scan->last_corruption.empty())
      msg += ", after the corrupt region at " + scan->last_corruption;
    FailGroup(&g, h.group, g.last_record_segment, Status::Corruption(msg));
  }
  g.last_seq = std::max(g.last_seq, h.seq);
  g.last_record_segment = scan->seq;
  const auto type = RecordType(h.type);
  if (type == RecordType::kRemoveGroup) {
    g.Reset();
    return;
  }
  g.removed = false;
  if (!g.failed.ok()) return;
  const bool fresh = g.entries.empty() && !g.snapshot && g.last_index == 0;
  if (type == RecordType::kEntry && !fresh && g.failed.ok() && h.index > g.last_index + 1) {
    if (g.gap_below == 0) {
      g.gap_where = "entry " + std::to_string(h.index) + " follows last index " +
                    std::to_string(g.last_index) + " at " + Where(scan->name, offset);
      g.gap_segment = scan->seq;
    }
    g.gap_below = h.index - 1;
    g.entries.clear();
    g.last_index = h.index - 1;
    g.last_term = 0;  // unknown until the mark that covers the gap
  }
  if (type == RecordType::kSnapshotMark && g.gap_below != 0 && h.index >= g.gap_below) {
    g.gap_below = 0;
    g.gap_where.clear();
  }
  Status s = ApplyRecordLocked(&g, type, h.term, h.index, Slice(p + kRecordHeaderSize, h.length),
                               h.payload_crc, scan->seq, offset + kRecordHeaderSize);
  if (!s.ok()) {
    FailGroup(&g, h.group, scan->seq,
              s.CloneAndPrepend("group " + std::to_string(h.group) + ": record at " +
                                Where(scan->name, offset)));
  }
}

void SharedLog::FailGroup(Group* g, uint64_t id, uint64_t segment, Status status) {
  if (!g->failed.ok()) return;  // the first damage found is the one reported
  g->failed = std::move(status);
  g->failed_segment = segment;
  g->removed = false;                     // damage to a recreated group's records must show
  if (g->last_seq == 0) g->last_seq = 1;  // a group known only from a damaged record
}

// ---------------------------------------------------------------------------------
// Group state.

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
  queue_.push_back(Pending{std::move(*records), std::move(*done)});
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
  if (fdatasync(seg.fd) != 0) return ErrnoStatus(seg.path, "fdatasync", errno);
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
    Status s = ApplyRecordLocked(&g, r.type, r.term, r.index,
                                 Slice(buf_.data() + p.buf_offset, p.length), p.crc, p.segment,
                                 p.offset);
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
// Release.

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
