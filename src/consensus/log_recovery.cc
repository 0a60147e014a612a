// SharedLog::Open and its recovery of what the directory holds (see "Recovery" in
// log_format.h).
#include "common/status.h"
#include "consensus/log.h"

#include <fcntl.h>
#include <glog/logging.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <sstream>

#include "consensus/log_format.h"
#include "consensus/log_internal.h"

namespace nyala::consensus {

namespace {

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

}  // namespace

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

}  // namespace nyala::consensus
