// Tablet copy end to end over real loopback sockets: a TabletCopySourceManager serving
// snapshots of in-memory "tablets" (a provider writing their files into the session
// directory) through TabletCopyServiceImpl, and DownloadTabletCopy or raw calls
// fetching them.
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>
#include <map>
#include <random>
#include <sstream>

#include "common/crc32c.h"
#include "common/metrics.h"
#include "common/mutex.h"
#include "common/test_util.h"
#include "rpc/messenger.h"
#include "rpc/rpc_controller.h"
#include "tserver/tablet_copy.proxy.h"
#include "tserver/tablet_copy_client.h"
#include "tserver/tablet_copy_service.h"
#include "tserver/tablet_copy_source.h"

DECLARE_int32(tablet_copy_max_chunk_bytes);
DECLARE_int32(tablet_copy_max_sessions);
DECLARE_int32(tablet_copy_rate_limit_mb);
DECLARE_int32(fault_injection_tablet_copy_fail_fetch_one_in);
DECLARE_int32(fault_injection_tablet_copy_corrupt_fetch_one_in);

namespace nyala::tserver {
namespace {

namespace fs = std::filesystem;

constexpr char kRequestor[] = "requestor-uuid-1";

// Keeps the WARNING lines logged while it is installed.
class WarningCapture : public google::LogSink {
 public:
  using google::LogSink::send;
  void send(google::LogSeverity severity, const char*, const char*, int,
            const google::LogMessageTime&, const char* message, size_t message_len) override {
    if (severity != google::GLOG_WARNING) return;
    MutexLock l(mu_);
    lines_.emplace_back(message, message_len);
  }
  // True when one line contains every one of `parts`.
  bool Contains(std::initializer_list<std::string_view> parts) const {
    MutexLock l(mu_);
    return std::any_of(lines_.begin(), lines_.end(), [&](const std::string& line) {
      return std::all_of(parts.begin(), parts.end(),
                         [&](std::string_view p) { return line.find(p) != std::string::npos; });
    });
  }
  std::string Dump() const {
    MutexLock l(mu_);
    std::string out = "warnings:";
    for (const auto& line : lines_) out += "\n  " + line;
    return out;
  }

 private:
  mutable Mutex mu_;
  std::vector<std::string> lines_ GUARDED_BY(mu_);
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The names in `dir`, sorted; empty if it does not exist.
std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string RandomBytes(size_t n, std::mt19937* rng) {
  std::string s(n, '\0');
  for (char& c : s) c = char((*rng)());
  return s;
}

struct FakeTablet {
  std::map<std::string, std::string> files;  // name -> contents
  std::string superblock;
  // Names listed in the snapshot but not written (a broken provider).
  std::vector<std::string> extra_names;
  Status fail;  // returned by the provider when not OK
};

class TabletCopyTest : public NyalaTest {
 protected:
  void SetUp() override {
    NyalaTest::SetUp();
    root_ = test_dir() + "/copy-sessions";
    staging_ = test_dir() + "/staging";
    google::AddLogSink(&warnings_);
    std::mt19937 rng(TestRandomSeed());
    FakeTablet t;
    t.files["empty"] = "";
    t.files["000007.sst"] = RandomBytes(100, &rng);
    t.files["000009.sst"] = RandomBytes(3 * 1024 * 1024 + 123, &rng);
    t.files["MANIFEST-000005"] = RandomBytes(1000, &rng);
    static constexpr char kSuperblock[] = "superblock\0with\xff binary";
    t.superblock = std::string(kSuperblock, sizeof(kSuperblock) - 1);
    AddTablet("tablet-1", std::move(t));
  }

  void TearDown() override {
    if (client_) client_->Shutdown();
    if (server_) server_->Shutdown();
    manager_.reset();
    google::RemoveLogSink(&warnings_);
    NyalaTest::TearDown();
  }

  void AddTablet(const std::string& id, FakeTablet t) {
    MutexLock l(tablets_mu_);
    tablets_[id] = std::move(t);
  }

  // The provider: writes the tablet's files into `dir`.
  Status MakeSnapshot(const std::string& tablet_id, const std::string& dir,
                      TabletCopySnapshot* out) {
    MutexLock l(tablets_mu_);
    auto it = tablets_.find(tablet_id);
    if (it == tablets_.end()) return Status::NotFound("no tablet " + tablet_id);
    const FakeTablet& t = it->second;
    if (!t.fail.ok()) return t.fail;
    fs::create_directories(dir);
    for (const auto& [name, contents] : t.files) {
      std::ofstream(dir + "/" + name, std::ios::binary) << contents;
      out->files.push_back(name);
    }
    for (const auto& name : t.extra_names) out->files.push_back(name);
    out->superblock = t.superblock;
    return Status::OK();
  }

  void StartServer(TabletCopySourceOptions options = {}, uint32_t max_message_size = 0) {
    auto m = TabletCopySourceManager::Create(
        root_,
        [this](const std::string& id, const std::string& dir, TabletCopySnapshot* out) {
          return MakeSnapshot(id, dir, out);
        },
        options);
    ASSERT_OK(m.status());
    manager_ = std::move(*m);
    rpc::MessengerOptions opts;
    opts.name = "source";
    opts.num_reactors = 2;
    opts.max_message_size = max_message_size;
    opts.metrics = &server_metrics_;
    auto server = rpc::Messenger::Create(opts);
    ASSERT_OK(server.status());
    server_ = *server;
    ASSERT_OK(server_->RegisterService(std::make_unique<TabletCopyServiceImpl>(manager_.get()), 4));
    ASSERT_OK(server_->AddListener(rpc::Sockaddr::Loopback(0), &addr_));
    rpc::MessengerOptions copts;
    copts.name = "receiver";
    copts.num_reactors = 1;
    auto client = rpc::Messenger::Create(copts);
    ASSERT_OK(client.status());
    client_ = *client;
    proxy_ = std::make_unique<TabletCopyServiceProxy>(client_, addr_);
  }

  Status Download(const std::string& tablet_id, TabletCopyProgress* progress,
                  TabletCopyDownload* out, MonoDelta timeout = MonoDelta::FromSeconds(60)) {
    TabletCopyClientOptions opts;
    opts.deadline = MonoTime::Now() + timeout;
    return DownloadTabletCopy(client_, addr_, tablet_id, kRequestor, staging_, opts, progress, out);
  }

  // The staging dir holds exactly the files of `tablet_id`, byte for byte, and `d`
  // describes them and the superblock.
  void ExpectCopied(const std::string& tablet_id, const TabletCopyDownload& d) {
    MutexLock l(tablets_mu_);
    const FakeTablet& t = tablets_.at(tablet_id);
    EXPECT_EQ(d.superblock, t.superblock);
    std::vector<std::string> names;
    for (const auto& [name, contents] : t.files) {
      names.push_back(name);
      EXPECT_TRUE(ReadFile(staging_ + "/" + name) == contents) << name << " differs";
    }
    EXPECT_EQ(ListDir(staging_), names);
    ASSERT_EQ(d.files.size(), t.files.size());
    for (const TabletCopyFilePB& f : d.files) {
      const std::string& contents = t.files.at(f.name());
      EXPECT_EQ(f.size(), contents.size()) << f.name();
      EXPECT_EQ(f.crc32c(), Crc32c(0, contents.data(), contents.size())) << f.name();
    }
  }

  int64_t TabletBytes(const std::string& tablet_id) {
    MutexLock l(tablets_mu_);
    int64_t n = 0;
    for (const auto& [name, contents] : tablets_.at(tablet_id).files) n += int64_t(contents.size());
    return n;
  }

  // Raw calls ----------------------------------------------------------------------

  BeginTabletCopySessionResponsePB Begin(const std::string& tablet_id,
                                         const std::string& requestor = kRequestor) {
    BeginTabletCopySessionRequestPB req;
    req.set_tablet_id(tablet_id);
    req.set_requestor_uuid(requestor);
    BeginTabletCopySessionResponsePB resp;
    rpc::RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(30));
    Status s = proxy_->BeginTabletCopySession(req, &resp, &rpc);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return resp;
  }

  // FetchData's error code (UNKNOWN_ERROR when it succeeded), the chunk in `data`.
  TabletCopyErrorPB::Code Fetch(const std::string& session, const std::string& file,
                                uint64_t offset, uint64_t max_length, std::string* data = nullptr,
                                FetchDataResponsePB* out = nullptr) {
    FetchDataRequestPB req;
    req.set_session_id(session);
    req.set_file_name(file);
    req.set_offset(offset);
    req.set_max_length(max_length);
    FetchDataResponsePB resp;
    rpc::RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(30));
    Status s = proxy_->FetchData(req, &resp, &rpc);
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (s.ok() && !resp.has_error() && data) {
      Slice chunk;
      EXPECT_OK(rpc.GetInboundSidecar(resp.data_sidecar(), &chunk));
      data->assign(chunk.cdata(), chunk.size());
      EXPECT_EQ(resp.data_crc32c(), Crc32c(0, chunk.data(), chunk.size()));
    }
    if (out) *out = resp;
    return resp.has_error() ? resp.error().code() : TabletCopyErrorPB::UNKNOWN_ERROR;
  }

  TabletCopyErrorPB::Code End(const std::string& session) {
    EndTabletCopySessionRequestPB req;
    req.set_session_id(session);
    EndTabletCopySessionResponsePB resp;
    rpc::RpcController rpc;
    rpc.set_timeout(MonoDelta::FromSeconds(30));
    Status s = proxy_->EndTabletCopySession(req, &resp, &rpc);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return resp.has_error() ? resp.error().code() : TabletCopyErrorPB::UNKNOWN_ERROR;
  }

  gflags::FlagSaver flag_saver_;
  WarningCapture warnings_;
  std::string root_;
  std::string staging_;
  Mutex tablets_mu_;
  std::map<std::string, FakeTablet> tablets_ GUARDED_BY(tablets_mu_);
  MetricRegistry server_metrics_;
  std::unique_ptr<TabletCopySourceManager> manager_;
  std::shared_ptr<rpc::Messenger> server_;
  std::shared_ptr<rpc::Messenger> client_;
  rpc::Sockaddr addr_;
  std::unique_ptr<TabletCopyServiceProxy> proxy_;
};

TEST_F(TabletCopyTest, DownloadReproducesFilesAndSuperblock) {
  FLAGS_tablet_copy_max_chunk_bytes = 256 * 1024;
  TabletCopySourceOptions opts;
  opts.metrics = &server_metrics_;
  ASSERT_NO_FATAL_FAILURE(StartServer(opts));
  // Whatever the staging dir held is replaced.
  fs::create_directories(staging_);
  std::ofstream(staging_ + "/left-over") << "junk";
  TabletCopyProgress progress;
  TabletCopyDownload d;
  ASSERT_OK(Download("tablet-1", &progress, &d));
  ASSERT_NO_FATAL_FAILURE(ExpectCopied("tablet-1", d));
  const int64_t bytes = TabletBytes("tablet-1");
  EXPECT_EQ(progress.bytes_total.load(), bytes);
  EXPECT_EQ(progress.bytes_done.load(), bytes);
  EXPECT_EQ(progress.sessions.load(), 1);
  EXPECT_EQ(progress.rpc_retries.load(), 0);
  EXPECT_EQ(progress.bad_chunks.load(), 0);
  // The session was ended: nothing left at the source.
  EXPECT_EQ(manager_->sessions_open(), 0);
  EXPECT_TRUE(ListDir(root_).empty());
  EXPECT_EQ(manager_->bytes_sent(), bytes);
  EXPECT_EQ(server_metrics_.SumOfFamily("tablet_copy_source_sent_bytes_total"), double(bytes));
  EXPECT_EQ(server_metrics_.SumOfFamily("tablet_copy_source_sessions"), 0.0);
}

TEST_F(TabletCopyTest, InjectedFailuresAndCorruptionsStillYieldIdenticalFiles) {
  FLAGS_tablet_copy_max_chunk_bytes = 64 * 1024;  // about 50 chunks
  FLAGS_fault_injection_tablet_copy_fail_fetch_one_in = 3;
  FLAGS_fault_injection_tablet_copy_corrupt_fetch_one_in = 3;
  ASSERT_NO_FATAL_FAILURE(StartServer());
  TabletCopyProgress progress;
  TabletCopyDownload d;
  ASSERT_OK(Download("tablet-1", &progress, &d));
  ASSERT_NO_FATAL_FAILURE(ExpectCopied("tablet-1", d));
  EXPECT_GT(progress.rpc_retries.load(), 0);
  EXPECT_GT(progress.bad_chunks.load(), 0);
  EXPECT_EQ(progress.sessions.load(), 1);
  EXPECT_EQ(progress.bytes_done.load(), TabletBytes("tablet-1"));
}

TEST_F(TabletCopyTest, IdleSessionExpiresAndItsDirectoryIsDeleted) {
  TabletCopySourceOptions opts;
  opts.idle_timeout = MonoDelta::FromMilliseconds(300);
  ASSERT_NO_FATAL_FAILURE(StartServer(opts));
  BeginTabletCopySessionResponsePB b = Begin("tablet-1");
  ASSERT_FALSE(b.has_error()) << b.error().ShortDebugString();
  EXPECT_EQ(b.idle_timeout_ms(), 300);
  const std::string dir = root_ + "/" + b.session_id();
  EXPECT_TRUE(fs::exists(dir + "/000009.sst"));
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] {
    ASSERT_FALSE(fs::exists(dir));
    ASSERT_EQ(manager_->sessions_open(), 0);
  });
  EXPECT_EQ(manager_->sessions_expired(), 1);
  EXPECT_TRUE(warnings_.Contains({"expired", b.session_id(), "tablet-1", kRequestor}))
      << warnings_.Dump();
  EXPECT_EQ(Fetch(b.session_id(), "empty", 0, 10), TabletCopyErrorPB::NO_SESSION);
}

// The source loses the session in the middle of a download (as when it expires it):
// the client begins a new session and downloads everything again.
TEST_F(TabletCopyTest, ClientStartsOverWhenTheSourceLosesTheSession) {
  FLAGS_tablet_copy_max_chunk_bytes = 32 * 1024;
  FLAGS_tablet_copy_rate_limit_mb = 1;  // about 3 s for the tablet's 3 MiB
  ASSERT_NO_FATAL_FAILURE(StartServer());
  TabletCopyProgress progress;
  TabletCopyDownload d;
  std::future<Status> download =
      std::async(std::launch::async, [&] { return Download("tablet-1", &progress, &d); });
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] { ASSERT_GT(progress.bytes_done.load(), 0); });
  const std::vector<std::string> first_sessions = ListDir(root_);
  ASSERT_EQ(first_sessions.size(), 1u);
  // Expire it now, as the expiry thread would after the idle timeout.
  ASSERT_EQ(manager_->ExpireSessionsIdleForTests(MonoDelta()), 1u);
  EXPECT_FALSE(fs::exists(root_ + "/" + first_sessions[0]));
  FLAGS_tablet_copy_rate_limit_mb = 0;  // the rest at full speed
  ASSERT_EQ(download.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  ASSERT_OK(download.get());
  ASSERT_NO_FATAL_FAILURE(ExpectCopied("tablet-1", d));
  EXPECT_EQ(progress.sessions.load(), 2);
  EXPECT_EQ(progress.bytes_done.load(), TabletBytes("tablet-1"));
  EXPECT_EQ(manager_->sessions_begun(), 2);
  EXPECT_TRUE(ListDir(root_).empty());
}

TEST_F(TabletCopyTest, EndSessionDeletesTheDirectory) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  BeginTabletCopySessionResponsePB b = Begin("tablet-1");
  ASSERT_FALSE(b.has_error()) << b.error().ShortDebugString();
  const std::string dir = root_ + "/" + b.session_id();
  EXPECT_EQ(ListDir(dir).size(), 4u);
  EXPECT_EQ(manager_->sessions_open(), 1);
  EXPECT_EQ(End(b.session_id()), TabletCopyErrorPB::UNKNOWN_ERROR);
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_EQ(manager_->sessions_open(), 0);
  EXPECT_EQ(End(b.session_id()), TabletCopyErrorPB::NO_SESSION);
  EXPECT_EQ(Fetch(b.session_id(), "000007.sst", 0, 10), TabletCopyErrorPB::NO_SESSION);
}

TEST_F(TabletCopyTest, LeftoverDirectoriesAreDeletedAtConstruction) {
  fs::create_directories(root_ + "/0123abcd/sub");
  std::ofstream(root_ + "/0123abcd/sub/000001.sst") << "old";
  std::ofstream(root_ + "/stray-file") << "old";
  ASSERT_EQ(ListDir(root_).size(), 2u);
  ASSERT_NO_FATAL_FAILURE(StartServer());
  EXPECT_TRUE(fs::is_directory(root_));
  EXPECT_TRUE(ListDir(root_).empty());
}

TEST_F(TabletCopyTest, ForgedRequestsGetTheirErrorCodeAndTheServerKeepsServing) {
  FLAGS_tablet_copy_max_chunk_bytes = 256 * 1024;
  ASSERT_NO_FATAL_FAILURE(StartServer());
  EXPECT_EQ(Begin("").error().code(), TabletCopyErrorPB::INVALID_REQUEST);
  EXPECT_EQ(Begin("tablet-1", "").error().code(), TabletCopyErrorPB::INVALID_REQUEST);
  EXPECT_EQ(Begin("no-such-tablet").error().code(), TabletCopyErrorPB::TABLET_NOT_FOUND);
  BeginTabletCopySessionResponsePB b = Begin("tablet-1");
  ASSERT_FALSE(b.has_error()) << b.error().ShortDebugString();
  const std::string& sid = b.session_id();
  constexpr uint64_t kMax64 = std::numeric_limits<uint64_t>::max();
  const uint64_t small = 100;  // 000007.sst
  struct Case {
    std::string session;
    std::string file;
    uint64_t offset;
    uint64_t max_length;
    TabletCopyErrorPB::Code code;
  };
  const Case cases[] = {
      {"", "000007.sst", 0, 10, TabletCopyErrorPB::INVALID_REQUEST},
      {"0123456789abcdef0123456789abcdef", "000007.sst", 0, 10, TabletCopyErrorPB::NO_SESSION},
      {sid + "x", "000007.sst", 0, 10, TabletCopyErrorPB::NO_SESSION},
      {sid, "../000007.sst", 0, 10, TabletCopyErrorPB::INVALID_REQUEST},
      {sid, "/etc/passwd", 0, 10, TabletCopyErrorPB::INVALID_REQUEST},
      {sid, "", 0, 10, TabletCopyErrorPB::INVALID_REQUEST},
      {sid, ".", 0, 10, TabletCopyErrorPB::INVALID_REQUEST},
      {sid, "..", 0, 10, TabletCopyErrorPB::INVALID_REQUEST},
      {sid, std::string("000007.sst\0x", 12), 0, 10, TabletCopyErrorPB::INVALID_REQUEST},
      {sid, std::string(1000, 'a'), 0, 10, TabletCopyErrorPB::INVALID_REQUEST},
      {sid, "000001.sst", 0, 10, TabletCopyErrorPB::INVALID_REQUEST},  // not in the session
      {sid, "000007.sst", small + 1, 10, TabletCopyErrorPB::INVALID_REQUEST},
      {sid, "000007.sst", kMax64, 10, TabletCopyErrorPB::INVALID_REQUEST},
      {sid, "000007.sst", 0, 0, TabletCopyErrorPB::INVALID_REQUEST},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("session '" + c.session + "' file '" + c.file + "' offset " +
                 std::to_string(c.offset) + " max_length " + std::to_string(c.max_length));
    EXPECT_EQ(Fetch(c.session, c.file, c.offset, c.max_length), c.code);
  }
  EXPECT_TRUE(warnings_.Contains(
      {"FetchData", "127.0.0.1", sid, "tablet-1", kRequestor, "INVALID_REQUEST", "../000007.sst"}))
      << warnings_.Dump();
  EXPECT_TRUE(warnings_.Contains({"FetchData", "127.0.0.1", "NO_SESSION", sid + "x"}))
      << warnings_.Dump();
  EXPECT_EQ(End(""), TabletCopyErrorPB::INVALID_REQUEST);
  EXPECT_EQ(End("forged"), TabletCopyErrorPB::NO_SESSION);

  // Not errors: a huge max_length is capped, offset == size reads nothing.
  std::string data;
  FetchDataResponsePB resp;
  ASSERT_EQ(Fetch(sid, "000009.sst", 0, uint64_t{1} << 63, &data, &resp),
            TabletCopyErrorPB::UNKNOWN_ERROR);
  EXPECT_EQ(data.size(), 256u * 1024);
  EXPECT_EQ(resp.file_size(), 3u * 1024 * 1024 + 123);
  ASSERT_EQ(Fetch(sid, "000007.sst", small - 10, kMax64, &data), TabletCopyErrorPB::UNKNOWN_ERROR);
  EXPECT_EQ(data.size(), 10u);
  ASSERT_EQ(Fetch(sid, "000007.sst", small, 10, &data), TabletCopyErrorPB::UNKNOWN_ERROR);
  EXPECT_EQ(data.size(), 0u);

  // The session still serves, and so does the server.
  ASSERT_EQ(Fetch(sid, "MANIFEST-000005", 0, 1 << 20, &data), TabletCopyErrorPB::UNKNOWN_ERROR);
  {
    MutexLock l(tablets_mu_);
    EXPECT_TRUE(data == tablets_.at("tablet-1").files.at("MANIFEST-000005"));
  }
  TabletCopyDownload d;
  ASSERT_OK(Download("tablet-1", nullptr, &d));
  ASSERT_NO_FATAL_FAILURE(ExpectCopied("tablet-1", d));
  EXPECT_EQ(End(sid), TabletCopyErrorPB::UNKNOWN_ERROR);
}

TEST_F(TabletCopyTest, TooManySessions) {
  FLAGS_tablet_copy_max_sessions = 2;
  ASSERT_NO_FATAL_FAILURE(StartServer());
  BeginTabletCopySessionResponsePB a = Begin("tablet-1");
  BeginTabletCopySessionResponsePB b = Begin("tablet-1");
  ASSERT_FALSE(a.has_error() || b.has_error());
  EXPECT_EQ(Begin("tablet-1").error().code(), TabletCopyErrorPB::TOO_MANY_SESSIONS);
  // The client gives up at once, saying the source is busy.
  TabletCopyDownload d;
  Status s = Download("tablet-1", nullptr, &d);
  EXPECT_TRUE(s.IsServiceUnavailable()) << s.ToString();
  EXPECT_NE(s.ToString().find("TOO_MANY_SESSIONS"), std::string::npos) << s.ToString();
  EXPECT_EQ(End(a.session_id()), TabletCopyErrorPB::UNKNOWN_ERROR);
  BeginTabletCopySessionResponsePB c = Begin("tablet-1");
  EXPECT_FALSE(c.has_error()) << c.error().ShortDebugString();
  EXPECT_EQ(manager_->sessions_open(), 2);
}

TEST_F(TabletCopyTest, ProviderFailures) {
  FakeTablet broken;
  broken.fail = Status::IOError("disk on fire");
  AddTablet("broken", broken);
  FakeTablet escapes;
  escapes.files["000001.sst"] = "x";
  escapes.extra_names = {"../000001.sst"};
  AddTablet("escapes", escapes);
  FakeTablet missing;
  missing.extra_names = {"000404.sst"};
  AddTablet("missing", missing);
  ASSERT_NO_FATAL_FAILURE(StartServer());
  for (const char* id : {"broken", "escapes", "missing"}) {
    SCOPED_TRACE(id);
    BeginTabletCopySessionResponsePB b = Begin(id);
    EXPECT_EQ(b.error().code(), TabletCopyErrorPB::SNAPSHOT_FAILED);
    EXPECT_TRUE(b.session_id().empty());
    EXPECT_TRUE(warnings_.Contains({"BeginTabletCopySession", "SNAPSHOT_FAILED", id}))
        << warnings_.Dump();
    // Nothing is left of the failed snapshot.
    EXPECT_TRUE(ListDir(root_).empty());
  }
  EXPECT_EQ(manager_->sessions_open(), 0);
  TabletCopyDownload d;
  Status s = Download("broken", nullptr, &d);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("disk on fire"), std::string::npos) << s.ToString();
  // The manager still makes good snapshots.
  ASSERT_OK(Download("tablet-1", nullptr, &d));
  ASSERT_NO_FATAL_FAILURE(ExpectCopied("tablet-1", d));
}

TEST_F(TabletCopyTest, RateLimitBoundsTheRate) {
  FLAGS_tablet_copy_max_chunk_bytes = 128 * 1024;
  FLAGS_tablet_copy_rate_limit_mb = 1;
  ASSERT_NO_FATAL_FAILURE(StartServer());
  const MonoTime start = MonoTime::Now();
  TabletCopyDownload d;
  ASSERT_OK(Download("tablet-1", nullptr, &d));
  const double elapsed = (MonoTime::Now() - start).ToSeconds();
  ASSERT_NO_FATAL_FAILURE(ExpectCopied("tablet-1", d));
  // 3 MiB at 1 MiB/s, less the limiter's burst and first chunk: at least 2.7 s.
  EXPECT_GE(elapsed, 2.0);
}

// A source whose messenger takes messages of 64 KiB at most sends chunks that fit.
TEST_F(TabletCopyTest, ChunksFitTheSourcesRpcMessageSize) {
  FLAGS_tablet_copy_max_chunk_bytes = 1 << 20;
  ASSERT_NO_FATAL_FAILURE(StartServer({}, /*max_message_size=*/64 * 1024));
  BeginTabletCopySessionResponsePB b = Begin("tablet-1");
  ASSERT_FALSE(b.has_error()) << b.error().ShortDebugString();
  std::string data;
  ASSERT_EQ(Fetch(b.session_id(), "000009.sst", 0, uint64_t{1} << 63, &data),
            TabletCopyErrorPB::UNKNOWN_ERROR);
  EXPECT_GT(data.size(), 0u);
  EXPECT_LE(data.size(), 64u * 1024 - TabletCopyServiceImpl::kFetchResponseOverheadBytes);
  TabletCopyDownload d;
  ASSERT_OK(Download("tablet-1", nullptr, &d));
  ASSERT_NO_FATAL_FAILURE(ExpectCopied("tablet-1", d));
}

// A cancelled download stops within seconds with Aborted, and ends its session.
TEST_F(TabletCopyTest, CancelledDownloadStopsAndEndsItsSession) {
  FLAGS_tablet_copy_max_chunk_bytes = 32 * 1024;
  FLAGS_tablet_copy_rate_limit_mb = 1;  // about 3 s for the whole tablet
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::atomic<bool> cancelled{false};
  TabletCopyProgress progress;
  TabletCopyDownload d;
  std::future<Status> download = std::async(std::launch::async, [&] {
    TabletCopyClientOptions opts;
    opts.deadline = MonoTime::Now() + MonoDelta::FromSeconds(60);
    opts.cancelled = &cancelled;
    return DownloadTabletCopy(client_, addr_, "tablet-1", kRequestor, staging_, opts, &progress,
                              &d);
  });
  ASSERT_EVENTUALLY(MonoDelta::FromSeconds(20), [&] { ASSERT_GT(progress.bytes_done.load(), 0); });
  const MonoTime cancel_time = MonoTime::Now();
  cancelled = true;
  ASSERT_EQ(download.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  Status s = download.get();
  EXPECT_TRUE(s.IsAborted()) << s.ToString();
  EXPECT_LT((MonoTime::Now() - cancel_time).ToSeconds(), 5.0);
  EXPECT_LT(progress.bytes_done.load(), TabletBytes("tablet-1"));
  EXPECT_EQ(manager_->sessions_open(), 0);
  EXPECT_TRUE(ListDir(root_).empty());
}

// Nothing listens at the source: the client retries until its deadline, then fails.
TEST_F(TabletCopyTest, DownloadGivesUpAtTheDeadline) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  server_->Shutdown();  // the address stays known, nothing answers there
  const MonoTime start = MonoTime::Now();
  TabletCopyProgress progress;
  TabletCopyDownload d;
  Status s = Download("tablet-1", &progress, &d, MonoDelta::FromSeconds(1));
  EXPECT_TRUE(s.IsTimedOut()) << s.ToString();
  EXPECT_NE(s.ToString().find("BeginTabletCopySession"), std::string::npos) << s.ToString();
  EXPECT_LT((MonoTime::Now() - start).ToSeconds(), 10.0);
  EXPECT_GT(progress.rpc_retries.load(), 0);
  EXPECT_EQ(progress.sessions.load(), 0);
}

}  // namespace
}  // namespace nyala::tserver
