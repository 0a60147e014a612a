#include "consensus/log.h"
#include "common/status.h"

#include <fcntl.h>
#include <glog/logging.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>
#include <thread>

#include "common/test_util.h"
#include "consensus/raft.pb.h"

namespace nyala::consensus {
namespace {

namespace fs = std::filesystem;

constexpr size_t kSegmentHeader = 24;
constexpr size_t kRecordHeader = 45;

// The entry bytes of (group, index): recognisable, of `size` bytes.
std::string Data(uint64_t group, uint64_t index, size_t size = 100) {
  std::string s = "g" + std::to_string(group) + "-i" + std::to_string(index) + "-";
  while (s.size() < size) s.push_back(char('a' + (s.size() + index) % 26));
  s.resize(size);
  return s;
}

std::vector<std::string> SegmentFiles(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("wal-") && name.ends_with(".log")) out.push_back(name);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A record as the documented format lays it out (log.h), found by walking a segment.
struct RecInfo {
  uint64_t offset;
  uint32_t length;
  uint8_t type;
  uint64_t group;
  uint64_t index;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), std::streamsize(data.size()));
}

template <typename T>
T Load(const std::string& d, size_t off) {
  T v;
  memcpy(&v, d.data() + off, sizeof(T));
  return v;
}

std::vector<RecInfo> ParseSegment(const std::string& path) {
  const std::string d = ReadFile(path);
  EXPECT_GE(d.size(), kSegmentHeader);
  EXPECT_EQ(d.substr(0, 8), "NYWAL001");
  std::vector<RecInfo> out;
  for (size_t off = kSegmentHeader; off + kRecordHeader <= d.size();) {
    if (d[off + 8] == 0) break;  // type 0 is none: the zeros of preallocated space
    RecInfo r{off, Load<uint32_t>(d, off), uint8_t(d[off + 8]), Load<uint64_t>(d, off + 9),
              Load<uint64_t>(d, off + 33)};
    out.push_back(r);
    off += kRecordHeader + r.length;
  }
  return out;
}

// Appends entries first..last of `group` with `term`, one append each.
void AppendEntries(SharedLog* log, uint64_t group, uint64_t first, uint64_t last, uint64_t term,
                   size_t size = 100) {
  for (uint64_t i = first; i <= last; i++) {
    std::vector<LogRecord> recs;
    recs.push_back(LogRecord::MakeEntry(group, term, i, Data(group, i, size)));
    ASSERT_OK(log->Append(std::move(recs)));
  }
}

// Every entry of `group` is readable, in order, with Data(group, index) unless `data`
// overrides it.
void ExpectEntries(SharedLog* log, uint64_t group, uint64_t first, uint64_t last,
                   const std::map<uint64_t, std::string>& data = {}, size_t size = 100) {
  std::vector<LogEntry> got;
  ASSERT_OK(log->ReadEntries(group, first, UINT64_MAX, &got));
  ASSERT_EQ(got.size(), last - first + 1) << "group " << group;
  for (uint64_t i = first; i <= last; i++) {
    const LogEntry& e = got[i - first];
    ASSERT_EQ(e.index, i);
    auto it = data.find(i);
    ASSERT_EQ(e.data, it == data.end() ? Data(group, i, size) : it->second) << group << "/" << i;
    ASSERT_EQ(log->TermAt(group, i).value(), e.term);
  }
}

std::unique_ptr<SharedLog> OpenOrDieFree(const LogOptions& o, RecoveryReport* report = nullptr) {
  auto r = SharedLog::Open(o, report);
  CHECK(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

std::vector<LogRecord> One(LogRecord r) {
  std::vector<LogRecord> v;
  v.push_back(std::move(r));
  return v;
}

class LogTest : public NyalaTest {
 protected:
  LogOptions Opts(const std::string& sub = "wal") const {
    LogOptions o;
    o.dir = test_dir() + "/" + sub;
    o.fsync = false;
    o.segment_size_bytes = 64 << 20;
    return o;
  }

  static std::unique_ptr<SharedLog> OpenOrDie(const LogOptions& o,
                                              RecoveryReport* report = nullptr) {
    return OpenOrDieFree(o, report);
  }

  static void ExpectSameState(const GroupState& a, const GroupState& b) {
    EXPECT_EQ(a.exists, b.exists);
    EXPECT_EQ(a.first_index, b.first_index);
    EXPECT_EQ(a.last_index, b.last_index);
    EXPECT_EQ(a.last_term, b.last_term);
    EXPECT_EQ(a.hard_state, b.hard_state);
    EXPECT_EQ(a.snapshot, b.snapshot);
    EXPECT_EQ(a.status.ok(), b.status.ok());
  }
};

TEST_F(LogTest, RoundTripAllRecordTypes) {
  const LogOptions opts = Opts();
  std::map<uint64_t, GroupState> before;
  std::map<uint64_t, std::string> g1_new;
  {
    auto log = OpenOrDie(opts);
    // Group 1: entries, a hard state, a truncation and a rewrite of the suffix.
    AppendEntries(log.get(), 1, 1, 10, 1);
    ASSERT_OK(log->Append(One(LogRecord::MakeHardState(1, HardState{2, "peer-a", 7}))));
    std::vector<LogRecord> rewrite;
    rewrite.push_back(LogRecord::MakeTruncate(1, 8));
    for (uint64_t i = 8; i <= 12; i++) {
      g1_new[i] = "rewritten-" + std::to_string(i);
      rewrite.push_back(LogRecord::MakeEntry(1, 2, i, g1_new[i]));
    }
    ASSERT_OK(log->Append(std::move(rewrite)));
    // Group 2: starts from a snapshot.
    ASSERT_OK(log->Append(One(LogRecord::MakeSnapshotMark(2, 3, 20))));
    AppendEntries(log.get(), 2, 21, 25, 3);
    ASSERT_OK(log->Append(One(LogRecord::MakeHardState(2, HardState{3, "", 24}))));
    // Group 3: written and removed. Group 4: removed, then made anew.
    AppendEntries(log.get(), 3, 1, 5, 1);
    AppendEntries(log.get(), 4, 1, 3, 1);
    ASSERT_OK(log->RemoveGroup(3));
    ASSERT_OK(log->RemoveGroup(4));
    ASSERT_OK(log->RemoveGroup(99));  // unknown: fine
    ASSERT_OK(log->Append(One(LogRecord::MakeSnapshotMark(4, 5, 50))));
    AppendEntries(log.get(), 4, 51, 52, 5);

    GroupState g1 = log->GetGroupState(1);
    EXPECT_TRUE(g1.exists);
    EXPECT_EQ(g1.first_index, 1u);
    EXPECT_EQ(g1.last_index, 12u);
    EXPECT_EQ(g1.last_term, 2u);
    EXPECT_EQ(g1.hard_state, (HardState{2, "peer-a", 7}));
    EXPECT_FALSE(g1.snapshot);
    GroupState g2 = log->GetGroupState(2);
    EXPECT_EQ(g2.first_index, 21u);
    EXPECT_EQ(g2.last_index, 25u);
    EXPECT_EQ(g2.snapshot, (SnapshotMark{3, 20}));
    EXPECT_EQ(log->TermAt(2, 20).value(), 3u);
    EXPECT_TRUE(log->TermAt(2, 19).status().IsNotFound());
    std::vector<LogEntry> none;
    EXPECT_TRUE(log->ReadEntries(2, 19, 100, &none).IsNotFound());
    EXPECT_FALSE(log->GetGroupState(3).exists);
    EXPECT_TRUE(log->ReadEntries(3, 1, 100, &none).IsNotFound());
    EXPECT_EQ(log->GetGroupState(4).first_index, 51u);
    EXPECT_EQ(log->Groups(), (std::vector<uint64_t>{1, 2, 4}));
    ExpectEntries(log.get(), 1, 1, 12, g1_new);
    ExpectEntries(log.get(), 2, 21, 25);
    ExpectEntries(log.get(), 4, 51, 52);
    for (uint64_t g : {1, 2, 3, 4}) before[g] = log->GetGroupState(g);
  }
  for (int round = 0; round < 2; round++) {
    RecoveryReport report;
    auto log = OpenOrDie(opts, &report);
    EXPECT_TRUE(report.clean()) << report.ToString();
    EXPECT_GT(report.records_read, 0u);
    EXPECT_EQ(log->Groups(), (std::vector<uint64_t>{1, 2, 4}));
    for (uint64_t g : {1, 2, 3, 4}) {
      SCOPED_TRACE(g);
      ExpectSameState(log->GetGroupState(g), before[g]);
    }
    ExpectEntries(log.get(), 1, 1, 12, g1_new);
    ExpectEntries(log.get(), 2, 21, 25);
    ExpectEntries(log.get(), 4, 51, 52 + round);
    // The log goes on where it was.
    std::vector<LogRecord> next;
    next.push_back(LogRecord::MakeEntry(4, 5, 53 + round, Data(4, 53 + round)));
    ASSERT_OK(log->Append(std::move(next)));
    before[4] = log->GetGroupState(4);
  }
}

TEST_F(LogTest, ReadEntriesHonoursMaxBytes) {
  auto log = OpenOrDie(Opts());
  AppendEntries(log.get(), 1, 1, 10, 1, 100);
  std::vector<LogEntry> got;
  ASSERT_OK(log->ReadEntries(1, 3, 250, &got));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].index, 3u);
  got.clear();
  ASSERT_OK(log->ReadEntries(1, 3, 10, &got));  // at least one, even if larger
  ASSERT_EQ(got.size(), 1u);
  got.clear();
  ASSERT_OK(log->ReadEntries(1, 11, 1000, &got));  // past the end: nothing
  EXPECT_TRUE(got.empty());
}

// An entry made from a message is written as the message's serialization, alongside
// entries made from bytes, in one batch; the writer serializes it, and the record is
// the same as one made from those bytes (read back, sizes, checksums, recovery).
TEST_F(LogTest, EntryMadeFromAMessageIsItsSerialization) {
  const LogOptions opts = Opts();
  std::map<uint64_t, std::string> want;
  auto message = [](uint64_t index) {
    auto m = std::make_shared<HardStatePB>();
    m->set_term(index * 7);
    m->set_vote(index + 1000);
    m->set_commit(index);
    return m;
  };
  uint64_t bytes = 0;
  {
    auto log = OpenOrDie(opts);
    std::vector<LogRecord> batch;
    for (uint64_t i = 1; i <= 6; i++) {
      if (i % 2 == 0) {
        auto m = message(i);
        want[i] = m->SerializeAsString();
        batch.push_back(LogRecord::MakeEntry(1, 1, i, std::move(m)));
        EXPECT_EQ(batch.back().PayloadSize(), want[i].size());
        EXPECT_TRUE(batch.back().payload.empty());
      } else {
        want[i] = Data(1, i, 20 + i);
        batch.push_back(LogRecord::MakeEntry(1, 1, i, want[i]));
      }
      bytes += kRecordHeader + want[i].size();
    }
    const LogStats before = log->Stats();
    ASSERT_OK(log->Append(std::move(batch)));
    EXPECT_EQ(log->Stats().bytes - before.bytes, bytes);
    ExpectEntries(log.get(), 1, 1, 6, want);
  }
  std::vector<RecInfo> recs = ParseSegment(opts.dir + "/" + SegmentFiles(opts.dir).back());
  ASSERT_EQ(recs.size(), 6u);
  for (const RecInfo& r : recs) EXPECT_EQ(r.length, want[r.index].size()) << r.index;
  RecoveryReport report;
  auto log = OpenOrDie(opts, &report);
  EXPECT_TRUE(report.clean()) << report.ToString();
  ExpectEntries(log.get(), 1, 1, 6, want);
  HardStatePB back;
  std::vector<LogEntry> got;
  ASSERT_OK(log->ReadEntries(1, 4, 1, &got));
  ASSERT_TRUE(back.ParseFromString(got.at(0).data));
  EXPECT_EQ(back.vote(), 1004u);
}

TEST_F(LogTest, GroupCommit) {
  LogOptions opts = Opts();
  opts.fsync = true;
  constexpr int kThreads = 8;
  constexpr int kPerThread = 500;
  {
    auto log = OpenOrDie(opts);
    const uint64_t fsyncs_at_open = log->Stats().fsyncs;
    std::atomic<int> done{0};
    std::atomic<int> failed{0};
    std::promise<void> all_done;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
      threads.emplace_back([&, t] {
        const uint64_t group = uint64_t(t) + 1;
        for (uint64_t i = 1; i <= kPerThread; i++) {
          log->AppendAsync(One(LogRecord::MakeEntry(group, 1, i, Data(group, i, 64))),
                           [&](const Status& s) {
                             if (!s.ok()) failed++;
                             if (++done == kThreads * kPerThread) all_done.set_value();
                           });
        }
      });
    }
    for (auto& th : threads) th.join();
    all_done.get_future().wait();
    EXPECT_EQ(failed.load(), 0);
    const LogStats st = log->Stats();
    const uint64_t fsyncs = st.fsyncs - fsyncs_at_open;
    LOG(INFO) << "group commit: " << st.appends << " appends in " << st.writes << " writes, "
              << fsyncs << " fdatasyncs";
    EXPECT_EQ(st.appends, uint64_t(kThreads * kPerThread));
    EXPECT_GT(fsyncs, 0u);
    EXPECT_LT(fsyncs, uint64_t(kThreads * kPerThread / 2));
  }
  auto log = OpenOrDie(opts);
  for (uint64_t g = 1; g <= kThreads; g++) {
    std::vector<LogEntry> got;
    ASSERT_OK(log->ReadEntries(g, 1, UINT64_MAX, &got));
    ASSERT_EQ(got.size(), size_t(kPerThread));
    for (size_t i = 0; i < got.size(); i++) ASSERT_EQ(got[i].data, Data(g, i + 1, 64));
  }
}

// Callers that each wait for their append still share fdatasyncs.
TEST_F(LogTest, GroupCommitOfBlockingAppends) {
  LogOptions opts = Opts();
  opts.fsync = true;
  constexpr int kThreads = 8;
  constexpr int kPerThread = 100;
  auto log = OpenOrDie(opts);
  const uint64_t fsyncs_at_open = log->Stats().fsyncs;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] { AppendEntries(log.get(), uint64_t(t) + 1, 1, kPerThread, 1); });
  }
  for (auto& th : threads) th.join();
  const uint64_t fsyncs = log->Stats().fsyncs - fsyncs_at_open;
  LOG(INFO) << "blocking group commit: " << kThreads * kPerThread << " appends, " << fsyncs
            << " fdatasyncs";
  struct statfs fs_info;
  ASSERT_EQ(statfs(opts.dir.c_str(), &fs_info), 0);
  if (fs_info.f_type == TMPFS_MAGIC) {
    LOG(INFO) << "on tmpfs an fdatasync costs nothing, so there is little to share: not checked";
  } else {
    EXPECT_LT(fsyncs, uint64_t(kThreads * kPerThread / 2));
  }
  for (uint64_t g = 1; g <= kThreads; g++) ExpectEntries(log.get(), g, 1, kPerThread);
}

TEST_F(LogTest, OptionsFromFlags) {
  const LogOptions o = LogOptions::FromFlags("/some/dir");
  EXPECT_EQ(o.dir, "/some/dir");
  EXPECT_TRUE(o.fsync);
  EXPECT_EQ(o.segment_size_bytes, uint64_t{64} << 20);
}

TEST_F(LogTest, TruncateThenAppendOverwrites) {
  const LogOptions opts = Opts();
  std::map<uint64_t, std::string> data;
  {
    auto log = OpenOrDie(opts);
    AppendEntries(log.get(), 1, 1, 10, 1);
    // A TRUNCATE in an earlier append than the entries that follow it.
    ASSERT_OK(log->Append(One(LogRecord::MakeTruncate(1, 6))));
    EXPECT_EQ(log->GetGroupState(1).last_index, 5u);
    EXPECT_EQ(log->GetGroupState(1).last_term, 1u);
    for (uint64_t i = 6; i <= 8; i++) {
      data[i] = "term2-" + std::to_string(i);
      ASSERT_OK(log->Append(One(LogRecord::MakeEntry(1, 2, i, data[i]))));
    }
    // And a second one in the same append as its entries.
    std::vector<LogRecord> recs;
    recs.push_back(LogRecord::MakeTruncate(1, 8));
    data[8] = "term3-8";
    recs.push_back(LogRecord::MakeEntry(1, 3, 8, data[8]));
    ASSERT_OK(log->Append(std::move(recs)));
    EXPECT_EQ(log->GetGroupState(1).last_index, 8u);
    EXPECT_EQ(log->TermAt(1, 5).value(), 1u);
    EXPECT_EQ(log->TermAt(1, 7).value(), 2u);
    EXPECT_EQ(log->TermAt(1, 8).value(), 3u);
    EXPECT_TRUE(log->TermAt(1, 9).status().IsNotFound());
    ExpectEntries(log.get(), 1, 1, 8, data);
  }
  auto log = OpenOrDie(opts);
  EXPECT_EQ(log->GetGroupState(1).last_index, 8u);
  EXPECT_EQ(log->GetGroupState(1).last_term, 3u);
  EXPECT_EQ(log->TermAt(1, 7).value(), 2u);
  ExpectEntries(log.get(), 1, 1, 8, data);
}

TEST_F(LogTest, RejectsInvalidAppendsWritingNothing) {
  const LogOptions opts = Opts();
  {
    auto log = OpenOrDie(opts);
    AppendEntries(log.get(), 1, 1, 3, 1);
    const LogStats before = log->Stats();
    const uint64_t size_before = fs::file_size(opts.dir + "/" + SegmentFiles(opts.dir).back());

    // A gap in group 1, after valid records of groups 2 and 1 in the same call.
    std::vector<LogRecord> recs;
    recs.push_back(LogRecord::MakeEntry(2, 1, 1, "x"));
    recs.push_back(LogRecord::MakeEntry(1, 1, 4, "y"));
    recs.push_back(LogRecord::MakeEntry(1, 1, 6, "z"));
    Status s = log->Append(std::move(recs));
    EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
    EXPECT_NE(s.ToString().find("group 1"), std::string::npos) << s.ToString();
    // Async: refused at once, on this thread.
    bool called = false;
    log->AppendAsync(One(LogRecord::MakeEntry(1, 1, 3, "dup")), [&](const Status& st) {
      called = true;
      EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
    });
    EXPECT_TRUE(called);
    // A new group starts at index 1.
    EXPECT_TRUE(log->Append(One(LogRecord::MakeEntry(3, 1, 2, "a"))).IsInvalidArgument());
    EXPECT_TRUE(log->Append(One(LogRecord::MakeTruncate(1, 0))).IsInvalidArgument());
    LogRecord remove;
    remove.type = RecordType::kRemoveGroup;
    remove.group = 1;
    EXPECT_TRUE(log->Append(One(remove)).IsInvalidArgument());
    // Nothing was written, and nothing of those calls is remembered.
    EXPECT_EQ(log->Stats().records, before.records);
    EXPECT_EQ(log->Stats().appends, before.appends);
    EXPECT_EQ(log->Stats().bytes, before.bytes);
    EXPECT_EQ(fs::file_size(opts.dir + "/" + SegmentFiles(opts.dir).back()), size_before);
    EXPECT_FALSE(log->GetGroupState(2).exists);
    EXPECT_EQ(log->GetGroupState(1).last_index, 3u);
    ASSERT_OK(log->Append(One(LogRecord::MakeEntry(1, 1, 4, Data(1, 4)))));

    // Below a snapshot mark or a durable index.
    ASSERT_OK(log->Append(One(LogRecord::MakeSnapshotMark(5, 2, 10))));
    EXPECT_TRUE(log->Append(One(LogRecord::MakeTruncate(5, 10))).IsInvalidArgument());
    EXPECT_TRUE(log->Append(One(LogRecord::MakeSnapshotMark(5, 2, 9))).IsInvalidArgument());
    EXPECT_TRUE(log->Append(One(LogRecord::MakeEntry(5, 2, 10, "old"))).IsInvalidArgument());
    log->SetDurableIndex(1, 2);
    EXPECT_TRUE(log->Append(One(LogRecord::MakeTruncate(1, 2))).IsInvalidArgument());
    ASSERT_OK(log->Append(One(LogRecord::MakeTruncate(1, 3))));
  }
  auto log = OpenOrDie(opts);
  EXPECT_EQ(log->Groups(), (std::vector<uint64_t>{1, 5}));
  EXPECT_EQ(log->GetGroupState(1).last_index, 2u);
}

// Writes records of groups 1 and 2 (the last one of group 2), closes the log, and
// returns the newest segment's path and the last record's offset and end.
struct TailSetup {
  std::string segment;
  uint64_t start;
  uint64_t end;
};

TailSetup WriteTailFixture(const LogOptions& opts) {
  {
    auto r = SharedLog::Open(opts, nullptr);
    CHECK(r.ok());
    auto& log = *r;
    CHECK_OK(log->Append(One(LogRecord::MakeHardState(1, HardState{1, "me", 3}))));
    for (uint64_t i = 1; i <= 5; i++) {
      for (uint64_t g : {1, 2})
        CHECK_OK(log->Append(One(LogRecord::MakeEntry(g, 1, i, Data(g, i)))));
    }
  }
  const std::string seg = opts.dir + "/" + SegmentFiles(opts.dir).back();
  std::vector<RecInfo> recs = ParseSegment(seg);
  CHECK(!recs.empty());
  const RecInfo& last = recs.back();
  CHECK_EQ(last.group, 2u);  // entry 5 of group 2
  CHECK_EQ(last.index, 5u);
  return TailSetup{seg, last.offset, last.offset + kRecordHeader + last.length};
}

// After a torn or damaged last record (entry 5 of group 2): reopen reports it dropped,
// keeps everything before it, and takes and keeps a new append.
void CheckTornTailRecovery(const LogOptions& opts, const TailSetup& tail, uint64_t dropped,
                           bool header_intact) {
  RecoveryReport report;
  {
    auto r = SharedLog::Open(opts, &report);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    auto& log = *r;
    ASSERT_TRUE(report.torn_tail) << report.ToString();
    EXPECT_EQ(report.torn_tail->segment, fs::path(tail.segment).filename().string());
    EXPECT_EQ(report.torn_tail->offset, tail.start);
    EXPECT_EQ(report.torn_tail->bytes_dropped, dropped);
    if (header_intact) {
      EXPECT_EQ(report.torn_tail->groups, std::vector<uint64_t>{2});
    } else {
      EXPECT_TRUE(report.torn_tail->groups.empty() ||
                  report.torn_tail->groups == std::vector<uint64_t>{2});
    }
    EXPECT_TRUE(report.corruptions.empty()) << report.ToString();
    EXPECT_TRUE(report.failed_groups.empty()) << report.ToString();
    EXPECT_EQ(fs::file_size(tail.segment), tail.start);
    GroupState g1 = log->GetGroupState(1);
    GroupState g2 = log->GetGroupState(2);
    ASSERT_OK(g1.status);
    ASSERT_OK(g2.status);
    EXPECT_EQ(g1.last_index, 5u);
    EXPECT_EQ(g1.hard_state, (HardState{1, "me", 3}));
    EXPECT_EQ(g2.last_index, 4u);
    ASSERT_NO_FATAL_FAILURE(ExpectEntries(log.get(), 1, 1, 5));
    ASSERT_NO_FATAL_FAILURE(ExpectEntries(log.get(), 2, 1, 4));
    ASSERT_OK(log->Append(One(LogRecord::MakeEntry(2, 1, 5, "again"))));
  }
  RecoveryReport again;
  auto r = SharedLog::Open(opts, &again);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(again.clean()) << again.ToString();
  std::vector<LogEntry> got;
  ASSERT_OK((*r)->ReadEntries(2, 5, 1000, &got));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].data, "again");
}

// Copies the fixture's directory to `sub` for one damaged variant.
LogOptions CopyOf(const LogOptions& base, const std::string& dir) {
  fs::remove_all(dir);
  fs::copy(base.dir, dir, fs::copy_options::recursive);
  LogOptions o = base;
  o.dir = dir;
  return o;
}

TEST_F(LogTest, TornTailAtEveryOffsetOfTheLastRecord) {
  const LogOptions base = Opts();
  const TailSetup tail = WriteTailFixture(base);
  const std::string name = fs::path(tail.segment).filename().string();
  for (uint64_t cut = tail.start + 1; cut < tail.end; cut++) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    const LogOptions o = CopyOf(base, test_dir() + "/cut");
    const std::string seg = o.dir + "/" + name;
    fs::resize_file(seg, cut);
    ASSERT_NO_FATAL_FAILURE(CheckTornTailRecovery(o, TailSetup{seg, tail.start, tail.end},
                                                  cut - tail.start,
                                                  cut >= tail.start + kRecordHeader));
  }
}

TEST_F(LogTest, DamagedLastRecordIsATornTail) {
  const LogOptions base = Opts();
  const TailSetup tail = WriteTailFixture(base);
  const std::string name = fs::path(tail.segment).filename().string();
  const std::string original = ReadFile(tail.segment);
  for (uint64_t off = tail.start; off < tail.end; off++) {
    SCOPED_TRACE("byte flipped at " + std::to_string(off));
    const LogOptions o = CopyOf(base, test_dir() + "/flip");
    const std::string seg = o.dir + "/" + name;
    std::string d = original;
    d[off] ^= 0x5a;
    WriteFile(seg, d);
    ASSERT_NO_FATAL_FAILURE(CheckTornTailRecovery(o, TailSetup{seg, tail.start, tail.end},
                                                  tail.end - tail.start,
                                                  off >= tail.start + kRecordHeader));
  }
}

TEST_F(LogTest, TornSegmentHeaderIsDropped) {
  const LogOptions opts = Opts();
  {
    auto log = OpenOrDie(opts);
    AppendEntries(log.get(), 1, 1, 3, 1);
  }
  WriteFile(opts.dir + "/wal-0000000000000009.log", "NYWAL0");  // crashed while creating it
  RecoveryReport report;
  auto log = OpenOrDie(opts, &report);
  ASSERT_TRUE(report.torn_tail) << report.ToString();
  EXPECT_EQ(report.torn_tail->segment, "wal-0000000000000009.log");
  EXPECT_EQ(report.torn_tail->bytes_dropped, 6u);
  EXPECT_FALSE(fs::exists(opts.dir + "/wal-0000000000000009.log"));
  ExpectEntries(log.get(), 1, 1, 3);
  ASSERT_OK(log->Append(One(LogRecord::MakeEntry(1, 1, 4, Data(1, 4)))));
}

// Groups 1 (A) and 2 (B) interleaved, 10 entries each after a hard state; returns the
// segment and the offset of A's entry 4, which has records of A and B after it.
std::pair<std::string, uint64_t> WriteInterleaved(const LogOptions& opts) {
  {
    auto r = SharedLog::Open(opts, nullptr);
    CHECK(r.ok());
    auto& log = *r;
    CHECK_OK(log->Append(One(LogRecord::MakeHardState(1, HardState{1, "a", 0}))));
    CHECK_OK(log->Append(One(LogRecord::MakeHardState(2, HardState{1, "b", 0}))));
    for (uint64_t i = 1; i <= 10; i++) {
      for (uint64_t g : {1, 2})
        CHECK_OK(log->Append(One(LogRecord::MakeEntry(g, 1, i, Data(g, i)))));
    }
  }
  const std::string seg = opts.dir + "/" + SegmentFiles(opts.dir).back();
  for (const RecInfo& r : ParseSegment(seg)) {
    if (r.group == 1 && r.type == 1 && r.index == 4) return {seg, r.offset};
  }
  LOG(FATAL) << "entry 4 of group 1 not found";
}

// Reopens a log whose record at `offset` of group 1 is damaged: group 1 fails with a
// Corruption naming the segment and offset, group 2 works.
void CheckGroupOneFailed(const LogOptions& o, const std::string& segment, uint64_t offset) {
  const std::string where = segment + " offset " + std::to_string(offset);
  {
    RecoveryReport report;
    auto r = SharedLog::Open(o, &report);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    auto& log = *r;
    EXPECT_FALSE(report.torn_tail) << report.ToString();
    ASSERT_EQ(report.corruptions.size(), 1u) << report.ToString();
    EXPECT_EQ(report.corruptions[0].segment, segment);
    EXPECT_EQ(report.corruptions[0].offset, offset);
    ASSERT_EQ(report.failed_groups.size(), 1u) << report.ToString();
    EXPECT_EQ(report.failed_groups[0].group, 1u);
    EXPECT_NE(report.ToString().find(where), std::string::npos) << report.ToString();

    const GroupState a = log->GetGroupState(1);
    EXPECT_TRUE(a.status.IsCorruption()) << a.status.ToString();
    EXPECT_NE(a.status.ToString().find(where), std::string::npos) << a.status.ToString();
    EXPECT_NE(a.status.ToString().find("group 1"), std::string::npos) << a.status.ToString();
    std::vector<LogEntry> got;
    Status s = log->ReadEntries(1, 1, UINT64_MAX, &got);
    EXPECT_TRUE(s.IsCorruption()) << s.ToString();
    EXPECT_NE(s.ToString().find(where), std::string::npos) << s.ToString();
    EXPECT_TRUE(log->TermAt(1, 1).status().IsCorruption());
    EXPECT_TRUE(log->Append(One(LogRecord::MakeEntry(1, 1, 11, "x"))).IsCorruption());

    const GroupState b = log->GetGroupState(2);
    ASSERT_OK(b.status);
    EXPECT_EQ(b.last_index, 10u);
    EXPECT_EQ(b.hard_state, (HardState{1, "b", 0}));
    ExpectEntries(log.get(), 2, 1, 10);
    ASSERT_OK(log->Append(One(LogRecord::MakeEntry(2, 1, 11, Data(2, 11)))));
  }
  {
    // Still failed after another restart (the damaged segment is kept), B goes on.
    RecoveryReport report;
    auto log = OpenOrDieFree(o, &report);
    EXPECT_TRUE(log->GetGroupState(1).status.IsCorruption());
    ExpectEntries(log.get(), 2, 1, 11);
    // Deleting the group (to re-replicate it) clears the failure.
    ASSERT_OK(log->RemoveGroup(1));
    EXPECT_FALSE(log->GetGroupState(1).exists);
    ASSERT_OK(log->Append(One(LogRecord::MakeEntry(1, 1, 1, Data(1, 1)))));
  }
  RecoveryReport report;
  auto log = OpenOrDieFree(o, &report);
  EXPECT_TRUE(report.failed_groups.empty()) << report.ToString();
  ASSERT_OK(log->GetGroupState(1).status);
  ExpectEntries(log.get(), 1, 1, 1);
  ExpectEntries(log.get(), 2, 1, 11);
}

TEST_F(LogTest, CorruptPayloadInTheMiddleFailsOnlyItsGroup) {
  const LogOptions base = Opts();
  const auto [seg, offset] = WriteInterleaved(base);
  const LogOptions o = CopyOf(base, test_dir() + "/payload");
  const std::string path = o.dir + "/" + fs::path(seg).filename().string();
  std::string d = ReadFile(path);
  d[offset + kRecordHeader + 10] ^= 0x01;
  WriteFile(path, d);
  CheckGroupOneFailed(o, fs::path(seg).filename().string(), offset);
}

TEST_F(LogTest, CorruptHeaderInTheMiddleFailsOnlyItsGroup) {
  const LogOptions base = Opts();
  const auto [seg, offset] = WriteInterleaved(base);
  const LogOptions o = CopyOf(base, test_dir() + "/header");
  const std::string path = o.dir + "/" + fs::path(seg).filename().string();
  std::string d = ReadFile(path);
  d[offset + 12] ^= 0x40;  // the group id: unreadable, found by group 1's sequence gap
  WriteFile(path, d);
  CheckGroupOneFailed(o, fs::path(seg).filename().string(), offset);
}

// Damage at the end of a segment that is not the newest is corruption, not a torn
// tail: records were written after it.
TEST_F(LogTest, DamagedTailOfAnOlderSegmentFailsItsGroup) {
  const LogOptions base = Opts();
  {
    auto log = OpenOrDie(base);
    ASSERT_OK(log->Append(One(LogRecord::MakeHardState(1, HardState{1, "a", 0}))));
    ASSERT_OK(log->Append(One(LogRecord::MakeHardState(2, HardState{1, "b", 0}))));
    AppendEntries(log.get(), 1, 1, 3, 1);
    AppendEntries(log.get(), 2, 1, 3, 1);
  }
  { auto log = OpenOrDie(base); }  // a second segment, opening with a checkpoint
  ASSERT_EQ(SegmentFiles(base.dir).size(), 2u);
  const std::string first = SegmentFiles(base.dir)[0];
  const RecInfo last = ParseSegment(base.dir + "/" + first).back();
  ASSERT_EQ(last.group, 2u);
  const std::string where = first + " offset " + std::to_string(last.offset);
  for (size_t at : {kRecordHeader + 5, size_t{20}}) {  // in the payload, in the header
    SCOPED_TRACE(at);
    const LogOptions o = CopyOf(base, test_dir() + "/v" + std::to_string(at));
    std::string d = ReadFile(o.dir + "/" + first);
    d[last.offset + at] ^= 0x10;
    WriteFile(o.dir + "/" + first, d);
    RecoveryReport report;
    auto log = OpenOrDie(o, &report);
    EXPECT_FALSE(report.torn_tail) << report.ToString();
    ASSERT_EQ(report.corruptions.size(), 1u) << report.ToString();
    EXPECT_EQ(report.corruptions[0].offset, last.offset);
    ASSERT_EQ(report.failed_groups.size(), 1u) << report.ToString();
    EXPECT_EQ(report.failed_groups[0].group, 2u);
    const Status s = log->GetGroupState(2).status;
    EXPECT_TRUE(s.IsCorruption());
    EXPECT_NE(s.ToString().find(where), std::string::npos) << s.ToString();
    ExpectEntries(log.get(), 1, 1, 3);
    EXPECT_EQ(fs::file_size(o.dir + "/" + first), d.size());  // nothing truncated
  }
}

// Lowers RLIMIT_FSIZE to `bytes` while it lives, with SIGXFSZ ignored: a write or a
// fallocate past it then fails with EFBIG, a real I/O error of the file system's.
class ScopedFileSizeLimit {
 public:
  explicit ScopedFileSizeLimit(rlim_t bytes) {
    signal(SIGXFSZ, SIG_IGN);
    CHECK_EQ(getrlimit(RLIMIT_FSIZE, &old_), 0);
    rlimit low = old_;
    low.rlim_cur = bytes;
    CHECK_EQ(setrlimit(RLIMIT_FSIZE, &low), 0);
  }
  ~ScopedFileSizeLimit() { CHECK_EQ(setrlimit(RLIMIT_FSIZE, &old_), 0); }
  ScopedFileSizeLimit(const ScopedFileSizeLimit&) = delete;
  ScopedFileSizeLimit& operator=(const ScopedFileSizeLimit&) = delete;

 private:
  rlimit old_;
};

// Allocated bytes of a file (what fallocate reserved, written or not).
uint64_t AllocatedBytes(const std::string& path) {
  struct stat st;
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return uint64_t(st.st_blocks) * 512;
}

// The end of a segment's last whole record, walking it as the format lays it out.
uint64_t EndOfRecords(const std::string& path) {
  std::vector<RecInfo> recs = ParseSegment(path);
  return recs.empty() ? kSegmentHeader : recs.back().offset + kRecordHeader + recs.back().length;
}

TEST_F(LogTest, PreallocatedSpaceIsCutOffOnClose) {
  LogOptions opts = Opts();
  opts.segment_size_bytes = 256 << 10;
  for (bool preallocate : {true, false}) {
    SCOPED_TRACE(preallocate ? "preallocated" : "not preallocated");
    opts.preallocate = preallocate;
    opts.dir = test_dir() + (preallocate ? "/pre" : "/grow");
    {
      auto log = OpenOrDie(opts);
      AppendEntries(log.get(), 1, 1, 10, 1, 1000);
      const std::string active = opts.dir + "/" + SegmentFiles(opts.dir).back();
      if (preallocate) {
        EXPECT_EQ(fs::file_size(active), opts.segment_size_bytes);
        EXPECT_GE(AllocatedBytes(active), opts.segment_size_bytes);
      } else {
        EXPECT_EQ(fs::file_size(active), EndOfRecords(active));
      }
      // Rolled once written past their size: older segments end at their last record.
      AppendEntries(log.get(), 1, 11, 600, 1, 1000);
      const std::vector<std::string> segs = SegmentFiles(opts.dir);
      ASSERT_GE(segs.size(), 3u);
      for (size_t i = 0; i + 1 < segs.size(); i++) {
        const std::string path = opts.dir + "/" + segs[i];
        EXPECT_EQ(fs::file_size(path), EndOfRecords(path)) << segs[i];
      }
      const std::string newest = opts.dir + "/" + segs.back();
      EXPECT_EQ(fs::file_size(newest),
                preallocate ? opts.segment_size_bytes : EndOfRecords(newest));
    }
    // Closed: the newest one too.
    for (const std::string& name : SegmentFiles(opts.dir)) {
      const std::string path = opts.dir + "/" + name;
      EXPECT_EQ(fs::file_size(path), EndOfRecords(path)) << name;
    }
    RecoveryReport report;
    auto log = OpenOrDie(opts, &report);
    EXPECT_TRUE(report.clean()) << report.ToString();
    ASSERT_NO_FATAL_FAILURE(ExpectEntries(log.get(), 1, 1, 600, {}, 1000));
  }
}

// No room to preallocate a whole segment (here a file size limit below it; ENOSPC or a
// quota alike): the segment grows as written instead, and the log works.
TEST_F(LogTest, SegmentGrowsWhenItCannotBePreallocated) {
  LogOptions opts = Opts();
  opts.segment_size_bytes = 4 << 20;
  {
    ScopedFileSizeLimit limit(1 << 20);
    auto log = OpenOrDie(opts);
    AppendEntries(log.get(), 1, 1, 20, 1);
    const std::string active = opts.dir + "/" + SegmentFiles(opts.dir).back();
    EXPECT_EQ(fs::file_size(active), EndOfRecords(active));
    EXPECT_LT(AllocatedBytes(active), uint64_t(1) << 20);
  }
  RecoveryReport report;
  auto log = OpenOrDie(opts, &report);
  EXPECT_TRUE(report.clean()) << report.ToString();
  ASSERT_NO_FATAL_FAILURE(ExpectEntries(log.get(), 1, 1, 20));
  // With room again, the next segment is preallocated.
  const std::string active = opts.dir + "/" + SegmentFiles(opts.dir).back();
  EXPECT_EQ(fs::file_size(active), opts.segment_size_bytes);
}

// A crash with preallocation on leaves the newest segment ending in zeros: the image
// of the directory taken while the log is open. Those zeros are no damage.
TEST_F(LogTest, ZerosAfterTheLastRecordAreNotATornTail) {
  LogOptions opts = Opts();
  opts.segment_size_bytes = 1 << 20;
  auto log = OpenOrDie(opts);
  ASSERT_OK(log->Append(One(LogRecord::MakeHardState(1, HardState{2, "me", 4}))));
  AppendEntries(log.get(), 1, 1, 5, 2);
  const LogOptions crashed = CopyOf(opts, test_dir() + "/crashed");
  const std::string seg = crashed.dir + "/" + SegmentFiles(crashed.dir).back();
  ASSERT_EQ(fs::file_size(seg), opts.segment_size_bytes);
  const uint64_t end = EndOfRecords(seg);
  ASSERT_LT(end, opts.segment_size_bytes);
  {
    RecoveryReport report;
    auto copy = OpenOrDie(crashed, &report);
    EXPECT_TRUE(report.clean()) << report.ToString();
    EXPECT_EQ(fs::file_size(seg), end);  // cut back to its records
    EXPECT_EQ(copy->GetGroupState(1).hard_state, (HardState{2, "me", 4}));
    ASSERT_NO_FATAL_FAILURE(ExpectEntries(copy.get(), 1, 1, 5));
    AppendEntries(copy.get(), 1, 6, 7, 2);
  }
  // The segment cut back is an older one now, and reads clean.
  RecoveryReport again;
  auto copy = OpenOrDie(crashed, &again);
  EXPECT_TRUE(again.clean()) << again.ToString();
  ASSERT_NO_FATAL_FAILURE(ExpectEntries(copy.get(), 1, 1, 7));
}

// A record torn in preallocated space (its end never reached the disk, so reads as
// zeros) is a torn tail, reported with the zeros after it.
TEST_F(LogTest, RecordTornInPreallocatedSpaceIsATornTail) {
  LogOptions opts = Opts();
  opts.segment_size_bytes = 1 << 20;
  auto log = OpenOrDie(opts);
  AppendEntries(log.get(), 1, 1, 5, 1);
  AppendEntries(log.get(), 2, 1, 5, 1);
  const LogOptions crashed = CopyOf(opts, test_dir() + "/crashed");
  const std::string seg = crashed.dir + "/" + SegmentFiles(crashed.dir).back();
  const RecInfo last = ParseSegment(seg).back();
  ASSERT_EQ(last.group, 2u);
  ASSERT_EQ(last.index, 5u);
  // Its header and the first half of its payload made it.
  const uint64_t written = last.offset + kRecordHeader + last.length / 2;
  std::string d = ReadFile(seg);
  std::fill(d.begin() + long(written), d.end(), '\0');
  WriteFile(seg, d);
  RecoveryReport report;
  auto copy = OpenOrDie(crashed, &report);
  ASSERT_TRUE(report.torn_tail) << report.ToString();
  EXPECT_EQ(report.torn_tail->offset, last.offset);
  EXPECT_EQ(report.torn_tail->bytes_dropped, opts.segment_size_bytes - last.offset);
  EXPECT_EQ(report.torn_tail->trailing_zeros, opts.segment_size_bytes - written);
  EXPECT_EQ(report.torn_tail->groups, std::vector<uint64_t>{2});
  EXPECT_NE(report.ToString().find("of them zeros"), std::string::npos) << report.ToString();
  EXPECT_TRUE(report.corruptions.empty()) << report.ToString();
  EXPECT_EQ(fs::file_size(seg), last.offset);
  ASSERT_NO_FATAL_FAILURE(ExpectEntries(copy.get(), 1, 1, 5));
  ASSERT_NO_FATAL_FAILURE(ExpectEntries(copy.get(), 2, 1, 4));
}

TEST_F(LogTest, SegmentsRollAndAreReleased) {
  LogOptions opts = Opts();
  opts.segment_size_bytes = 4096;
  {
    auto log = OpenOrDie(opts);
    ASSERT_OK(log->Append(One(LogRecord::MakeHardState(1, HardState{1, "p1", 0}))));
    ASSERT_OK(log->Append(One(LogRecord::MakeHardState(2, HardState{1, "p2", 0}))));
    AppendEntries(log.get(), 1, 1, 40, 1, 200);
    for (uint64_t i = 1; i <= 60; i++) {
      AppendEntries(log.get(), 1, 40 + i, 40 + i, 1, 200);
      AppendEntries(log.get(), 2, i, i, 1, 200);
    }
    const size_t rolled = SegmentFiles(opts.dir).size();
    EXPECT_GE(rolled, 8u);
    EXPECT_EQ(log->Stats().segments_live, rolled);
    EXPECT_EQ(log->GroupsPinning(0), (std::vector<uint64_t>{1, 2}));  // group 1's is older
    EXPECT_TRUE(log->GroupsPinning(rolled).empty());

    // Group 2 is done with everything, but group 1 still pins the oldest segment.
    log->SetDurableIndex(2, 60);
    ASSERT_OK(log->Append({}));  // an empty append: a barrier behind the writer's work
    EXPECT_EQ(SegmentFiles(opts.dir).size(), rolled);
    EXPECT_EQ(log->GroupsPinning(0), std::vector<uint64_t>{1});

    // Group 1 lets go of its first 50 entries: the segments before its entry 51 go.
    log->SetDurableIndex(1, 50);
    ASSERT_OK(log->Append({}));
    const size_t after = SegmentFiles(opts.dir).size();
    EXPECT_LT(after, rolled);
    EXPECT_EQ(log->Stats().segments_live, after);
    EXPECT_EQ(log->GetGroupState(1).first_index, 51u);
    std::vector<LogEntry> got;
    EXPECT_TRUE(log->ReadEntries(1, 50, 100, &got).IsNotFound());
    ExpectEntries(log.get(), 1, 51, 100, {}, 200);
    const GroupState g2 = log->GetGroupState(2);
    EXPECT_EQ(g2.first_index, 61u);
    EXPECT_EQ(g2.last_index, 60u);
    EXPECT_EQ(g2.last_term, 1u);
    EXPECT_EQ(log->GroupsPinning(0), std::vector<uint64_t>{1});

    // Then all of it: only the active segment is left.
    log->SetDurableIndex(1, 100);
    ASSERT_OK(log->Append({}));
    EXPECT_EQ(SegmentFiles(opts.dir).size(), 1u);
    EXPECT_TRUE(log->GroupsPinning(0).empty());
    AppendEntries(log.get(), 1, 101, 105, 2, 200);
  }
  RecoveryReport report;
  auto log = OpenOrDie(opts, &report);
  EXPECT_TRUE(report.clean()) << report.ToString();
  const GroupState g1 = log->GetGroupState(1);
  EXPECT_EQ(g1.hard_state, (HardState{1, "p1", 0}));
  EXPECT_EQ(g1.first_index, 101u);
  EXPECT_EQ(g1.last_index, 105u);
  EXPECT_EQ(log->TermAt(1, 100).value(), 1u);  // the mark's term: appending 101 can be checked
  std::vector<LogEntry> got;
  ASSERT_OK(log->ReadEntries(1, 101, UINT64_MAX, &got));
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[0].data, Data(1, 101, 200));
  const GroupState g2 = log->GetGroupState(2);
  EXPECT_EQ(g2.hard_state, (HardState{1, "p2", 0}));
  EXPECT_EQ(g2.last_index, 60u);
  EXPECT_EQ(g2.snapshot, (SnapshotMark{1, 60}));
  ASSERT_OK(log->Append(One(LogRecord::MakeEntry(2, 2, 61, "next"))));
}

// After a restart a group's durable index is unknown until reported again, so the
// checkpoint opening the new segment carries the group's older mark; entries appended
// after it follow entries still in older segments. When a later report lets those
// segments go, the log on disk reads: old mark, then entries after a gap, then the
// new mark covering the gap. Recovery takes that as the group's log from the new
// mark on, not as damage (a jepsen-itest soak failed replicas on restart with "entry
// 55505 follows last index 21734").
TEST_F(LogTest, EntriesReleasedBehindAnOlderMarkAreNotAGap) {
  LogOptions opts = Opts();
  opts.segment_size_bytes = 4096;
  {
    auto log = OpenOrDie(opts);
    ASSERT_OK(log->Append(One(LogRecord::MakeHardState(1, HardState{1, "p1", 0}))));
    AppendEntries(log.get(), 1, 1, 5, 1, 200);
    log->SetDurableIndex(1, 3);
    AppendEntries(log.get(), 1, 6, 40, 1, 200);  // rolls: checkpoints mark 3
    ASSERT_GE(SegmentFiles(opts.dir).size(), 2u);
  }
  {
    RecoveryReport report;
    auto log = OpenOrDie(opts, &report);  // a new segment; its checkpoint: mark 3
    ASSERT_TRUE(report.clean()) << report.ToString();
    AppendEntries(log.get(), 1, 41, 43, 2, 200);
    log->SetDurableIndex(1, 42);  // a checkpoint marks 42; the older segments go
    ASSERT_OK(log->Append({}));
    ASSERT_EQ(SegmentFiles(opts.dir).size(), 1u);
  }
  RecoveryReport report;
  auto log = OpenOrDie(opts, &report);
  EXPECT_TRUE(report.clean()) << report.ToString();
  const GroupState g = log->GetGroupState(1);
  ASSERT_OK(g.status);
  EXPECT_EQ(g.first_index, 43u);
  EXPECT_EQ(g.last_index, 43u);
  EXPECT_EQ(g.snapshot, (SnapshotMark{2, 42}));
  ExpectEntries(log.get(), 1, 43, 43, {}, 200);
  ASSERT_OK(log->Append(One(LogRecord::MakeEntry(1, 2, 44, "next"))));
}

// AppendHereIfIdle: with the writer idle, the calling thread writes and syncs, and
// `done` has run (on it) when the call returns; with the writer busy, the records
// queue behind what it writes, in order, and the writer thread writes them.
TEST_F(LogTest, AppendHereIfIdleWritesOnTheCallerWhenTheWriterIsIdle) {
  LogOptions opts = Opts();
  opts.fsync = true;
  auto log = OpenOrDie(opts);
  // The writer thread may still be finishing what Open queued, or the barrier below;
  // the append that finds it idle is written here.
  const std::thread::id me = std::this_thread::get_id();
  uint64_t index = 0;
  bool written_here = false;
  for (int tries = 0; tries < 1000 && !written_here; tries++) {
    const uint64_t fsyncs0 = log->Stats().fsyncs;
    std::atomic<int> outcome{0};  // 0: not run yet, 1: OK here, 2: OK elsewhere, 3: failed
    index++;
    log->AppendHereIfIdle(One(LogRecord::MakeEntry(1, 1, index, Data(1, index))),
                          [&](const Status& s) {
                            outcome = !s.ok() ? 3 : std::this_thread::get_id() == me ? 1 : 2;
                          });
    if (outcome == 1) {
      written_here = true;
      EXPECT_EQ(log->Stats().fsyncs, fsyncs0 + 1);
    } else {
      ASSERT_OK(log->Append({}));  // let the writer thread finish it
      ASSERT_EQ(outcome.load(), 2);
    }
  }
  ASSERT_TRUE(written_here) << "the writer thread never looked idle";
  ExpectEntries(log.get(), 1, 1, index);

  // An invalid append is refused here as AppendAsync refuses it, writing nothing.
  Status got = Status::OK();
  log->AppendHereIfIdle(One(LogRecord::MakeEntry(1, 1, index + 5, "gap")),
                        [&](const Status& s) { got = s; });
  EXPECT_TRUE(got.IsInvalidArgument()) << got.ToString();

  // The writer busy (its done callback blocks it): the next append queues and returns
  // at once; the writer thread writes it once released, after the earlier one.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> writer_in_done;
  log->AppendAsync(One(LogRecord::MakeEntry(1, 1, index + 1, Data(1, index + 1))),
                   [&](const Status& s) {
    EXPECT_OK(s);
    writer_in_done.set_value();
    released.wait();
  });
  writer_in_done.get_future().wait();
  std::promise<std::thread::id> third;
  log->AppendHereIfIdle(One(LogRecord::MakeEntry(1, 1, index + 2, Data(1, index + 2))),
                        [&](const Status& s) {
                          EXPECT_OK(s);
                          third.set_value(std::this_thread::get_id());
                        });
  auto third_done = third.get_future();
  EXPECT_EQ(third_done.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  release.set_value();
  EXPECT_NE(third_done.get(), me);
  ExpectEntries(log.get(), 1, 1, index + 2);
}

// Callers writing on their own threads and appends for the writer thread, at once: every
// append lands, in order per group, and every callback runs once.
TEST_F(LogTest, AppendHereIfIdleFromManyThreads) {
  LogOptions opts = Opts();
  opts.fsync = true;
  constexpr int kThreads = 6;
  constexpr int kPerThread = 200;
  {
    auto log = OpenOrDie(opts);
    std::atomic<int> failed{0};
    std::atomic<int> done{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
      threads.emplace_back([&, t] {
        const uint64_t group = uint64_t(t) + 1;
        for (uint64_t i = 1; i <= kPerThread; i++) {
          auto cb = [&](const Status& s) {
            if (!s.ok()) failed++;
            done++;
          };
          auto rec = One(LogRecord::MakeEntry(group, 1, i, Data(group, i, 64)));
          if (t % 2 == 0) {
            log->AppendHereIfIdle(std::move(rec), cb);
          } else {
            log->AppendAsync(std::move(rec), cb);
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    ASSERT_OK(log->Append({}));  // a barrier: everything before it is durable
    EXPECT_EQ(done.load(), kThreads * kPerThread);
    EXPECT_EQ(failed.load(), 0);
    EXPECT_EQ(log->Stats().appends, uint64_t(kThreads * kPerThread) + 1);
  }
  auto log = OpenOrDie(opts);
  for (uint64_t g = 1; g <= kThreads; g++) ExpectEntries(log.get(), g, 1, kPerThread, {}, 64);
}

TEST_F(LogTest, WriteErrorLatches) {
  const LogOptions opts = Opts();
  {
    auto log = OpenOrDie(opts);
    AppendEntries(log.get(), 1, 1, 1, 1);
    Status s;
    {
      ScopedFileSizeLimit limit(64 << 10);
      s = log->Append(One(LogRecord::MakeEntry(1, 1, 2, std::string(256 << 10, 'x'))));
    }
    EXPECT_TRUE(s.IsIOError()) << s.ToString();
    EXPECT_NE(s.ToString().find("wal-0000000000000001.log"), std::string::npos) << s.ToString();
    // Latched: later appends fail too, naming the file, without being written.
    s = log->Append(One(LogRecord::MakeEntry(1, 1, 2, "small")));
    EXPECT_TRUE(s.IsIOError()) << s.ToString();
    EXPECT_NE(s.ToString().find("wal-0000000000000001.log"), std::string::npos) << s.ToString();
    EXPECT_EQ(log->GetGroupState(1).last_index, 1u);
    ExpectEntries(log.get(), 1, 1, 1);  // reads go on
  }
  RecoveryReport report;
  auto log = OpenOrDie(opts, &report);
  ASSERT_TRUE(report.torn_tail) << report.ToString();  // the partial write
  EXPECT_EQ(report.torn_tail->segment, "wal-0000000000000001.log");
  EXPECT_EQ(log->GetGroupState(1).last_index, 1u);
  ASSERT_OK(log->Append(One(LogRecord::MakeEntry(1, 1, 2, Data(1, 2)))));
  ExpectEntries(log.get(), 1, 1, 2);
}

TEST_F(LogTest, ReadersDuringAppends) {
  auto log = OpenOrDie(Opts());
  constexpr uint64_t kEntries = 300;
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (uint64_t g : {1, 2}) {
    writers.emplace_back([&, g] { AppendEntries(log.get(), g, 1, kEntries, 1); });
  }
  std::thread reader([&] {
    while (!stop.load()) {
      for (uint64_t g : {1, 2}) {
        std::vector<LogEntry> got;
        Status s = log->ReadEntries(g, 1, UINT64_MAX, &got);
        if (s.IsNotFound()) continue;  // not written yet
        ASSERT_OK(s);
        for (size_t i = 0; i < got.size(); i++) ASSERT_EQ(got[i].data, Data(g, i + 1));
      }
    }
  });
  for (auto& w : writers) w.join();
  stop = true;
  reader.join();
  ExpectEntries(log.get(), 1, 1, kEntries);
  ExpectEntries(log.get(), 2, 1, kEntries);
}

TEST_F(LogTest, ShutdownAbortsQueuedAppends) {
  auto log = OpenOrDie(Opts());
  std::atomic<int> ok{0};
  std::atomic<int> aborted{0};
  std::atomic<int> calls{0};
  for (uint64_t i = 1; i <= 200; i++) {
    log->AppendAsync(One(LogRecord::MakeEntry(1, 1, i, Data(1, i))), [&](const Status& s) {
      calls++;
      if (s.ok()) ok++;
      if (s.IsAborted()) aborted++;
    });
  }
  log.reset();
  EXPECT_EQ(calls.load(), 200);
  EXPECT_EQ(ok.load() + aborted.load(), 200);
}

}  // namespace
}  // namespace nyala::consensus
