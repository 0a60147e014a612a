#include "tserver/tablet_copy_source.h"

#include <fcntl.h>
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "common/crc32c.h"
#include "common/flag_tags.h"
#include "common/metrics.h"
#include "common/scoped_fd.h"
#include "server/fs_manager.h"

DEFINE_int32(tablet_copy_idle_timeout_sec, 600,
             "Time after which a tablet copy session that received no call is expired and "
             "its snapshot deleted, in seconds. The copying server must then begin a new "
             "session and start over.");
DEFINE_validator(tablet_copy_idle_timeout_sec, [](const char*, int32_t v) { return v > 0; });
TAG_FLAG(tablet_copy_idle_timeout_sec, runtime);

DEFINE_int32(tablet_copy_max_sessions, 8,
             "Tablet copy sessions this server serves at once (each holds a snapshot of a "
             "tablet on disk until it ends). A server asking for one more is told to retry "
             "later. 0: this server serves no tablet copies.");
DEFINE_validator(tablet_copy_max_sessions, [](const char*, int32_t v) { return v >= 0; });
TAG_FLAG(tablet_copy_max_sessions, runtime);

DEFINE_int32(tablet_copy_max_chunk_bytes, 1 << 20,
             "Largest chunk of a file one tablet copy FetchData call carries, in bytes. Also "
             "bounded by what an RPC may carry (--rpc_max_message_size).");
DEFINE_validator(tablet_copy_max_chunk_bytes, [](const char*, int32_t v) { return v > 0; });
TAG_FLAG(tablet_copy_max_chunk_bytes, runtime);

namespace nyala::tserver {

namespace fs = std::filesystem;

namespace {

// A peer's string as it may appear in a log line: at most 80 bytes, anything but
// printable ASCII escaped.
std::string LogSafe(std::string_view s) {
  constexpr size_t kMax = 80;
  std::string out;
  for (size_t i = 0; i < s.size() && i < kMax; i++) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += char(c);
    } else {
      char buf[8];
      snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > kMax) out += "...(" + std::to_string(s.size()) + " bytes)";
  return out;
}

void RemoveDir(const std::string& dir) {
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (ec) LOG(WARNING) << "tablet copy: cannot delete " << dir << ": " << ec.message();
}

// Logs the refusal of a request and returns `s` with `*out = code`.
Status Refuse(TabletCopyErrorPB::Code code, Status s, std::string_view method,
              const std::string& caller, const std::string& what, TabletCopyErrorPB::Code* out) {
  LOG(WARNING) << "tablet copy: " << method << " from " << caller << " (" << what
               << ") refused: " << TabletCopyErrorPB::Code_Name(code) << ": " << s.ToString();
  *out = code;
  return s;
}

}  // namespace

bool IsValidTabletCopyFileName(std::string_view name) {
  return !name.empty() && name.size() <= 255 && name != "." && name != ".." &&
         name.find('/') == std::string_view::npos && name.find('\0') == std::string_view::npos;
}

// One open session. The fields are set when it begins and never change, but for
// the last-use time. Deletes its directory when destroyed.
struct TabletCopySourceManager::Session {
  Session(std::string id, std::string tablet_id, std::string requestor, std::string begun_by,
          std::string dir, const std::vector<TabletCopyFilePB>& file_list)
      : id(std::move(id)),
        tablet_id(std::move(tablet_id)),
        requestor(std::move(requestor)),
        begun_by(std::move(begun_by)),
        dir(std::move(dir)) {
    for (const TabletCopyFilePB& f : file_list) files.emplace(f.name(), f);
    Touch();
  }
  ~Session() { RemoveDir(dir); }

  void Touch() { last_use_ns.store(MonoTime::Now().ToNanoseconds(), std::memory_order_relaxed); }
  MonoDelta Idle() const {
    return MonoDelta::FromNanoseconds(MonoTime::Now().ToNanoseconds() -
                                      last_use_ns.load(std::memory_order_relaxed));
  }
  // "session S of tablet T for requestor R", for log lines.
  std::string Describe() const {
    return "session " + id + " of tablet " + LogSafe(tablet_id) + " for requestor " +
           LogSafe(requestor);
  }

  const std::string id;
  const std::string tablet_id;
  const std::string requestor;
  const std::string begun_by;  // the address that began it
  const std::string dir;
  std::map<std::string, TabletCopyFilePB, std::less<>> files;  // by name; set in the constructor
  std::atomic<int64_t> last_use_ns{0};
};

Result<std::unique_ptr<TabletCopySourceManager>> TabletCopySourceManager::Create(
    std::string root_dir, TabletCopySnapshotProvider provider, TabletCopySourceOptions options) {
  if (root_dir.empty()) return Status::InvalidArgument("tablet copy: empty root directory");
  std::error_code ec;
  fs::create_directories(root_dir, ec);
  if (ec) return Status::IOError("tablet copy: cannot create " + root_dir, ec.message());
  // What a crash left: no session outlives its process.
  for (fs::directory_iterator it(root_dir, ec), end; !ec && it != end; it.increment(ec)) {
    LOG(INFO) << "tablet copy: deleting " << it->path().string() << ", left by an earlier run";
    fs::remove_all(it->path(), ec);
    if (ec) {
      return Status::IOError("tablet copy: cannot delete " + it->path().string(), ec.message());
    }
  }
  if (ec) return Status::IOError("tablet copy: cannot list " + root_dir, ec.message());
  return std::unique_ptr<TabletCopySourceManager>(
      new TabletCopySourceManager(std::move(root_dir), std::move(provider), options));
}

TabletCopySourceManager::TabletCopySourceManager(std::string root_dir,
                                                 TabletCopySnapshotProvider provider,
                                                 TabletCopySourceOptions options)
    : root_(std::move(root_dir)), provider_(std::move(provider)), options_(options) {
  expiry_thread_ = std::thread([this] { ExpiryLoop(); });
  snapshot_thread_ = std::make_unique<TaskThread>("copy-snapshot");
  RegisterMetrics();
}

TabletCopySourceManager::~TabletCopySourceManager() {
  if (options_.metrics) options_.metrics->RemoveFunctionGauges(this);
  Shutdown();
}

void TabletCopySourceManager::Shutdown() {
  {
    MutexLock l(mu_);
    shutting_down_ = true;
  }
  expiry_cv_.notify_all();
  if (expiry_thread_.joinable()) expiry_thread_.join();
  snapshot_thread_->Shutdown();
  std::map<std::string, std::shared_ptr<Session>> ended;  // deleted outside the lock
  {
    MutexLock l(mu_);
    ended.swap(sessions_);
  }
}

void TabletCopySourceManager::RegisterMetrics() {
  MetricRegistry* m = options_.metrics;
  if (!m) return;
  m->RegisterFunctionGauge(
      "tablet_copy_source_sessions", "Tablet copy sessions this server serves now", {},
      [this] { return double(sessions_open()); }, this);
  m->RegisterFunctionCounter(
      "tablet_copy_source_sent_bytes_total", "File bytes sent to servers copying tablets", {},
      [this] { return double(bytes_sent()); }, this);
  m->RegisterFunctionCounter(
      "tablet_copy_source_expired_sessions_total",
      "Tablet copy sessions expired after --tablet_copy_idle_timeout_sec without a call", {},
      [this] { return double(sessions_expired()); }, this);
}

MonoDelta TabletCopySourceManager::idle_timeout() const {
  if (options_.idle_timeout > MonoDelta()) return options_.idle_timeout;
  return MonoDelta::FromSeconds(FLAGS_tablet_copy_idle_timeout_sec);
}

int64_t TabletCopySourceManager::sessions_open() const {
  MutexLock l(mu_);
  return int64_t(sessions_.size());
}

Status TabletCopySourceManager::ChecksumFiles(const std::string& dir,
                                              const TabletCopySnapshot& snap,
                                              std::vector<TabletCopyFilePB>* files) {
  std::set<std::string_view> seen;
  std::string buf(1 << 20, '\0');
  for (const std::string& name : snap.files) {
    if (!IsValidTabletCopyFileName(name)) {
      return Status::IllegalState("the snapshot lists a file that is not a plain file name",
                                  LogSafe(name));
    }
    if (!seen.insert(name).second) {
      return Status::IllegalState("the snapshot lists a file twice", LogSafe(name));
    }
    const std::string path = dir + "/" + name;
    ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (fd.get() < 0) return ErrnoStatus("cannot open " + path, errno);
    struct stat st;
    if (fstat(fd.get(), &st) != 0) return ErrnoStatus("cannot stat " + path, errno);
    if (!S_ISREG(st.st_mode)) return Status::IllegalState(path + " is not a regular file");
    uint64_t size = 0;
    uint32_t crc = 0;
    for (;;) {
      const ssize_t n = read(fd.get(), buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoStatus("cannot read " + path, errno);
      if (n == 0) break;
      crc = Crc32c(crc, buf.data(), size_t(n));
      size += uint64_t(n);
    }
    if (size != uint64_t(st.st_size)) {
      return Status::IllegalState(path + " changed while it was read: " + std::to_string(size) +
                                  " bytes read, " + std::to_string(st.st_size) + " at the start");
    }
    TabletCopyFilePB& f = files->emplace_back();
    f.set_name(name);
    f.set_size(size);
    f.set_crc32c(crc);
  }
  return Status::OK();
}

Status TabletCopySourceManager::BeginSession(const std::string& tablet_id,
                                             const std::string& requestor_uuid,
                                             const std::string& caller, TabletCopySessionInfo* out,
                                             TabletCopyErrorPB::Code* code) {
  constexpr std::string_view kMethod = "BeginTabletCopySession";
  const std::string what =
      "tablet " + LogSafe(tablet_id) + ", requestor " + LogSafe(requestor_uuid);
  if (tablet_id.empty() || requestor_uuid.empty()) {
    return Refuse(TabletCopyErrorPB::INVALID_REQUEST,
                  Status::InvalidArgument("tablet_id and requestor_uuid are required"), kMethod,
                  caller, what, code);
  }
  {
    MutexLock l(mu_);
    if (shutting_down_) {
      return Refuse(TabletCopyErrorPB::UNKNOWN_ERROR,
                    Status::ServiceUnavailable("the tablet copy source is shutting down"), kMethod,
                    caller, what, code);
    }
    const int64_t max = FLAGS_tablet_copy_max_sessions;
    if (int64_t(sessions_.size()) + starting_ >= max) {
      return Refuse(TabletCopyErrorPB::TOO_MANY_SESSIONS,
                    Status::ServiceUnavailable(
                        std::to_string(sessions_.size() + starting_) +
                        " tablet copy sessions are open (--tablet_copy_max_sessions=" +
                        std::to_string(max) + "): retry later or copy from another replica"),
                    kMethod, caller, what, code);
    }
    starting_++;
  }
  const std::string id = server::GenerateUuid();
  const std::string dir = root_ + "/" + id;
  TabletCopySnapshot snap;
  std::vector<TabletCopyFilePB> files;
  Status s = provider_(tablet_id, dir, &snap);
  TabletCopyErrorPB::Code fail_code =
      s.IsNotFound() ? TabletCopyErrorPB::TABLET_NOT_FOUND : TabletCopyErrorPB::SNAPSHOT_FAILED;
  if (s.ok()) s = ChecksumFiles(dir, snap, &files);
  std::shared_ptr<Session> session;
  if (s.ok()) {
    session = std::make_shared<Session>(id, tablet_id, requestor_uuid, caller, dir, files);
  } else {
    RemoveDir(dir);
    s = s.CloneAndPrepend("snapshot of tablet " + LogSafe(tablet_id));
  }
  {
    MutexLock l(mu_);
    starting_--;
    if (s.ok() && shutting_down_) {
      s = Status::ServiceUnavailable("the tablet copy source is shutting down");
      fail_code = TabletCopyErrorPB::UNKNOWN_ERROR;
    } else if (s.ok()) {
      sessions_.emplace(id, session);
    }
  }
  if (!s.ok()) return Refuse(fail_code, s, kMethod, caller, what, code);  // `session` deleted
  sessions_begun_.fetch_add(1, std::memory_order_relaxed);
  uint64_t bytes = 0;
  for (const TabletCopyFilePB& f : files) bytes += f.size();
  LOG(INFO) << "tablet copy: " << session->Describe() << " begun by " << caller << ": "
            << files.size() << " files, " << bytes << " bytes";
  out->session_id = id;
  out->idle_timeout = idle_timeout();
  out->superblock = std::move(snap.superblock);
  out->files = std::move(files);
  return Status::OK();
}

void TabletCopySourceManager::BeginSessionAsync(std::string tablet_id, std::string requestor_uuid,
                                                std::string caller, MonoTime deadline,
                                                BeginCallback done) {
  auto cb = std::make_shared<BeginCallback>(std::move(done));
  auto task = [this, tablet_id = std::move(tablet_id), requestor = std::move(requestor_uuid),
               caller = std::move(caller), deadline, cb] {
    TabletCopySessionInfo info;
    TabletCopyErrorPB::Code code = TabletCopyErrorPB::UNKNOWN_ERROR;
    Status s;
    if (MonoTime::Now() > deadline) {
      s = Refuse(TabletCopyErrorPB::UNKNOWN_ERROR,
                 Status::TimedOut("the caller's deadline passed while the call waited for the "
                                  "snapshot thread"),
                 "BeginTabletCopySession", caller,
                 "tablet " + LogSafe(tablet_id) + ", requestor " + LogSafe(requestor), &code);
    } else {
      s = BeginSession(tablet_id, requestor, caller, &info, &code);
    }
    (*cb)(s, code, std::move(info));
  };
  if (!snapshot_thread_->Post(std::move(task))) {
    (*cb)(Status::ServiceUnavailable("the tablet copy source is shutting down"),
          TabletCopyErrorPB::UNKNOWN_ERROR, {});
  }
}

std::shared_ptr<TabletCopySourceManager::Session> TabletCopySourceManager::Find(
    const std::string& id) {
  MutexLock l(mu_);
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second;
}

Status TabletCopySourceManager::FetchData(const std::string& session_id,
                                          const std::string& file_name, uint64_t offset,
                                          uint64_t max_length, const std::string& caller,
                                          TabletCopyChunk* out, TabletCopyErrorPB::Code* code) {
  constexpr std::string_view kMethod = "FetchData";
  if (session_id.empty()) {
    return Refuse(TabletCopyErrorPB::INVALID_REQUEST, Status::InvalidArgument("empty session_id"),
                  kMethod, caller, "no session", code);
  }
  std::shared_ptr<Session> session = Find(session_id);
  if (!session) {
    return Refuse(TabletCopyErrorPB::NO_SESSION,
                  Status::NotFound("no tablet copy session " + LogSafe(session_id) +
                                   ": it never began, ended, or expired; begin a new one"),
                  kMethod, caller, "unknown session " + LogSafe(session_id), code);
  }
  session->Touch();
  const std::string what = session->Describe() + ", file " + LogSafe(file_name) + ", offset " +
                           std::to_string(offset) + ", max_length " + std::to_string(max_length);
  if (!IsValidTabletCopyFileName(file_name)) {
    return Refuse(TabletCopyErrorPB::INVALID_REQUEST,
                  Status::InvalidArgument("not a plain file name", LogSafe(file_name)), kMethod,
                  caller, what, code);
  }
  auto it = session->files.find(file_name);
  if (it == session->files.end()) {
    return Refuse(TabletCopyErrorPB::INVALID_REQUEST,
                  Status::InvalidArgument("the session has no file " + LogSafe(file_name)), kMethod,
                  caller, what, code);
  }
  const uint64_t size = it->second.size();
  if (max_length == 0) {
    return Refuse(TabletCopyErrorPB::INVALID_REQUEST, Status::InvalidArgument("max_length is 0"),
                  kMethod, caller, what, code);
  }
  if (offset > size) {
    return Refuse(TabletCopyErrorPB::INVALID_REQUEST,
                  Status::InvalidArgument("offset " + std::to_string(offset) +
                                          " is past the end of the file, of " +
                                          std::to_string(size) + " bytes"),
                  kMethod, caller, what, code);
  }
  const uint64_t len =
      std::min({max_length, uint64_t(FLAGS_tablet_copy_max_chunk_bytes), size - offset});
  out->data.resize(len);
  const std::string path = session->dir + "/" + file_name;
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  Status s = fd.get() < 0 ? ErrnoStatus("cannot open " + path, errno) : Status::OK();
  for (uint64_t done = 0; s.ok() && done < len;) {
    const ssize_t n = pread(fd.get(), out->data.data() + done, len - done, off_t(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      s = ErrnoStatus("cannot read " + path, errno);
    } else if (n == 0) {
      s = Status::IllegalState(path + " is shorter than when the session began");
    } else {
      done += uint64_t(n);
    }
  }
  if (!s.ok()) return Refuse(TabletCopyErrorPB::SNAPSHOT_FAILED, s, kMethod, caller, what, code);
  out->crc32c = Crc32c(0, out->data.data(), out->data.size());
  out->file_size = size;
  bytes_sent_.fetch_add(int64_t(len), std::memory_order_relaxed);
  session->Touch();
  return Status::OK();
}

Status TabletCopySourceManager::EndSession(const std::string& session_id, const std::string& caller,
                                           TabletCopyErrorPB::Code* code) {
  constexpr std::string_view kMethod = "EndTabletCopySession";
  if (session_id.empty()) {
    return Refuse(TabletCopyErrorPB::INVALID_REQUEST, Status::InvalidArgument("empty session_id"),
                  kMethod, caller, "no session", code);
  }
  std::shared_ptr<Session> session;  // deleted, with its directory, outside the lock
  {
    MutexLock l(mu_);
    auto it = sessions_.find(session_id);
    if (it != sessions_.end()) {
      session = std::move(it->second);
      sessions_.erase(it);
    }
  }
  if (!session) {
    return Refuse(TabletCopyErrorPB::NO_SESSION,
                  Status::NotFound("no tablet copy session " + LogSafe(session_id)), kMethod,
                  caller, "unknown session " + LogSafe(session_id), code);
  }
  LOG(INFO) << "tablet copy: " << session->Describe() << " ended by " << caller;
  return Status::OK();
}

void TabletCopySourceManager::ExpiryLoop() {
  UniqueLock l(mu_);
  while (!shutting_down_) {
    const int64_t period_ms = std::clamp<int64_t>(idle_timeout().ToMilliseconds() / 4, 10, 1000);
    expiry_cv_.wait_for(l, std::chrono::milliseconds(period_ms));
    if (shutting_down_) break;
    l.Unlock();
    ExpireIdleSessions(idle_timeout());
    l.Lock();
  }
}

size_t TabletCopySourceManager::ExpireIdleSessions(MonoDelta idle) {
  std::vector<std::shared_ptr<Session>> expired;  // deleted outside the lock
  {
    MutexLock l(mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (it->second->Idle() > idle) {
        expired.push_back(std::move(it->second));
        it = sessions_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& s : expired) {
    LOG(WARNING) << "tablet copy: " << s->Describe() << " (begun by " << s->begun_by
                 << ") expired after " << s->Idle().ToString()
                 << " without a call; its snapshot is deleted";
  }
  sessions_expired_.fetch_add(int64_t(expired.size()), std::memory_order_relaxed);
  return expired.size();
}

}  // namespace nyala::tserver
