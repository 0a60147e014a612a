#include "tserver/tablet_copy_client.h"
#include "common/status.h"

#include <fcntl.h>
#include <gflags/gflags.h>
#include <glog/logging.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <thread>
#include <vector>

#include "common/crc32c.h"
#include "common/flag_tags.h"
#include "common/mutex.h"
#include "common/rate_limiter.h"
#include "common/scoped_fd.h"
#include "common/wire_protocol.h"
#include "rpc/messenger.h"
#include "rpc/retry.h"
#include "rpc/rpc_controller.h"
#include "tserver/tablet_copy.proxy.h"
#include "tserver/tablet_copy_service.h"
#include "tserver/tablet_copy_source.h"

DEFINE_int32(tablet_copy_rate_limit_mb, 20,
             "Limit on the rate at which this server receives tablet copies, in MiB/s, for "
             "all copies it receives together; 0: no limit. The default keeps client writes "
             "at 70-100% of their rate while a dead server's replicas are copied, for 5-15% "
             "more healing time than no limit (bench/README.md, healing-bench); raise it "
             "where disks and network have room to spare. Takes effect at once, for copies "
             "already running.");
DEFINE_validator(tablet_copy_rate_limit_mb, [](const char*, int32_t v) { return v >= 0; });
TAG_FLAG(tablet_copy_rate_limit_mb, runtime);

DEFINE_int32(tablet_copy_download_threads, 4,
             "Files of one tablet copy downloaded at once (each file chunk by chunk), so that "
             "the network, the checksums and the disk writes of different files overlap.");
DEFINE_validator(tablet_copy_download_threads, [](const char*, int32_t v) { return v >= 1; });
TAG_FLAG(tablet_copy_download_threads, runtime);

DECLARE_int32(tablet_copy_max_chunk_bytes);

namespace nyala::tserver {

namespace fs = std::filesystem;

namespace {

// The limit of every copy this process receives, read at each chunk.
RateLimiter* ReceiveRateLimiter() {
  static RateLimiter* const limiter =
      new RateLimiter([] { return int64_t(FLAGS_tablet_copy_rate_limit_mb) << 20; });
  return limiter;
}

Status WriteAll(int fd, const std::string& data, uint64_t offset, const std::string& path) {
  for (size_t done = 0; done < data.size();) {
    const ssize_t n = pwrite(fd, data.data() + done, data.size() - done, off_t(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus("cannot write " + path, errno);
    done += size_t(n);
  }
  return Status::OK();
}

Status SyncDir(const std::string& dir) {
  ScopedFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoStatus("cannot open " + dir, errno);
  if (fsync(fd.get()) != 0) return ErrnoStatus("cannot fsync " + dir, errno);
  return Status::OK();
}

// Whether an RPC that failed (the call, not the application) may be sent again:
// everything but a call the source cannot serve (no such service or method) or
// could not parse, which would fail again.
bool IsRetriableCopyRpcError(const Status& s) {
  return !s.IsNotSupported() && !s.IsInvalidArgument();
}

// The Status of an application error answered by the source.
Status FromCopyError(const TabletCopyErrorPB& err, const std::string& what) {
  Status s = StatusFromPB(err.status());
  if (s.ok()) s = Status::RemoteError("no message");
  return s.CloneAndPrepend(what + " answered " + TabletCopyErrorPB::Code_Name(err.code()));
}

// One call in flight: the response and controller live here, shared with the
// completion callback, so that a cancelled download may stop waiting for the call.
template <typename Resp>
struct PendingCall {
  rpc::RpcController rpc;
  Resp resp;
  Mutex mu;
  CondVar cv;
  bool done GUARDED_BY(mu) = false;

  void Complete() {
    MutexLock l(mu);
    done = true;
    cv.notify_all();
  }
};

// One download; see DownloadTabletCopy.
class CopyDownloader {
 public:
  CopyDownloader(const std::shared_ptr<rpc::Messenger>& messenger, const rpc::Sockaddr& source,
                 const std::string& tablet_id, const std::string& requestor_uuid,
                 const std::string& staging_dir, const TabletCopyClientOptions& options,
                 TabletCopyProgress* progress)
      : messenger_(messenger),
        proxy_(messenger, source),
        tablet_id_(tablet_id),
        requestor_uuid_(requestor_uuid),
        staging_dir_(staging_dir),
        options_(options),
        progress_(progress ? progress : &own_progress_),
        context_("tablet copy of tablet " + tablet_id + " from " + source.ToString()) {}

  Status Run(TabletCopyDownload* out);

 private:
  // Downloads everything through one new session. On NO_SESSION sets session_lost_.
  Status RunSession(TabletCopyDownload* out);
  Status Begin(BeginTabletCopySessionResponsePB* resp);
  Status CheckFileList(const BeginTabletCopySessionResponsePB& resp) const;
  Status DownloadFile(const TabletCopyFilePB& f);
  // The checked chunk of `f` at `offset` (not past its end).
  Status FetchChunk(const TabletCopyFilePB& f, uint64_t offset, std::string* data);
  Status CheckChunk(const FetchDataResponsePB& resp, const rpc::RpcController& rpc,
                    const TabletCopyFilePB& f, uint64_t want, std::string* data) const;
  void End();
  Status ResetStagingDir() const;
  // The largest chunk to ask for: --tablet_copy_max_chunk_bytes, and what fits in one
  // response this messenger accepts.
  uint64_t ChunkLimit() const;
  // Aborted once the download is cancelled or the messenger shuts down.
  Status CheckNotCancelled() const;
  // Sends a call, `send(resp, rpc, callback)` (an async proxy method), until it
  // succeeds at the RPC level: again after each retriable failure, with a backoff,
  // until the deadline. Each attempt's timeout is options_.rpc_timeout, or all the time
  // left when `whole_deadline`. On success `*out` holds the answered call.
  template <typename Resp, typename Send>
  Status CallWithRetry(const std::string& what, bool whole_deadline, const Send& send,
                       std::shared_ptr<PendingCall<Resp>>* out);
  // Waits for `call` to complete; Aborted, leaving it to complete alone, when the
  // download is cancelled meanwhile.
  template <typename Resp>
  Status Wait(PendingCall<Resp>* call) const;

  const std::shared_ptr<rpc::Messenger> messenger_;
  const TabletCopyServiceProxy proxy_;
  const std::string tablet_id_;
  const std::string requestor_uuid_;
  const std::string staging_dir_;
  const TabletCopyClientOptions options_;
  TabletCopyProgress own_progress_;
  TabletCopyProgress* const progress_;
  const std::string context_;  // "tablet copy of tablet T from ADDR"

  std::string session_id_;
  std::atomic<bool> session_lost_{false};
};

Status CopyDownloader::Run(TabletCopyDownload* out) {
  if (!options_.deadline.Initialized()) {
    return Status::InvalidArgument(context_ + ": no deadline given");
  }
  if (staging_dir_.empty()) return Status::InvalidArgument(context_ + ": empty staging dir");
  for (int n = 1;; n++) {
    RETURN_NOT_OK_PREPEND(ResetStagingDir(), context_);
    session_lost_ = false;
    Status s = RunSession(out);
    if (s.ok()) {
      LOG(INFO) << context_ << ": done, " << out->files.size() << " files, "
                << progress_->bytes_done.load() << " bytes, in " << n << " session(s)";
      return s;
    }
    if (!session_lost_) return s.CloneAndPrepend(context_);
    if (n >= options_.max_sessions) {
      return s.CloneAndPrepend(
          context_ + ": the source lost the session " + std::to_string(n) +
          " times (it expires a session idle for --tablet_copy_idle_timeout_sec, and forgets "
          "them when it restarts); copy from another replica, or raise the source's "
          "--tablet_copy_idle_timeout_sec if this server's --tablet_copy_rate_limit_mb is low");
    }
    LOG(WARNING) << context_ << ": the source lost session " << session_id_ << " (" << s.ToString()
                 << "); starting over with a new session";
  }
}

Status CopyDownloader::RunSession(TabletCopyDownload* out) {
  BeginTabletCopySessionResponsePB begin;
  RETURN_NOT_OK(Begin(&begin));
  session_id_ = begin.session_id();
  progress_->sessions.fetch_add(1);
  progress_->bytes_done.store(0);
  Status s = CheckFileList(begin);
  if (s.ok()) {
    int64_t total = 0;
    for (const TabletCopyFilePB& f : begin.files()) total += int64_t(f.size());
    progress_->bytes_total.store(total);
    LOG(INFO) << context_ << ": session " << session_id_ << ", " << begin.files_size() << " files, "
              << total << " bytes";
  }
  if (s.ok()) {
    // A few files at once; the first failure stops the others at their next file.
    const int n = begin.files_size();
    std::atomic<int> next{0};
    Mutex mu;
    Status first;
    auto work = [&] {
      for (int i = next++; i < n; i = next++) {
        {
          MutexLock l(mu);
          if (!first.ok()) return;
        }
        Status fs = DownloadFile(begin.files(i));
        if (!fs.ok()) {
          MutexLock l(mu);
          if (first.ok()) first = fs;
          return;
        }
      }
    };
    const int threads = std::min(n, std::max(1, FLAGS_tablet_copy_download_threads));
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; t++) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
    MutexLock l(mu);
    s = first;
  }
  if (s.ok()) s = SyncDir(staging_dir_);
  if (!session_lost_) End();
  if (!s.ok()) return s;
  out->superblock = std::move(*begin.mutable_superblock());
  out->files.assign(begin.files().begin(), begin.files().end());
  return Status::OK();
}

Status CopyDownloader::Begin(BeginTabletCopySessionResponsePB* resp) {
  BeginTabletCopySessionRequestPB req;
  req.set_tablet_id(tablet_id_);
  req.set_requestor_uuid(requestor_uuid_);
  std::shared_ptr<PendingCall<BeginTabletCopySessionResponsePB>> call;
  RETURN_NOT_OK(CallWithRetry(
      "BeginTabletCopySession", /*whole_deadline=*/true,
      [&](auto* r, rpc::RpcController* c, std::function<void()> cb) {
        proxy_.BeginTabletCopySessionAsync(req, r, c, std::move(cb));
      },
      &call));
  *resp = std::move(call->resp);
  if (resp->has_error()) return FromCopyError(resp->error(), "BeginTabletCopySession");
  if (resp->session_id().empty()) {
    return Status::Corruption("BeginTabletCopySession answered no session id");
  }
  return Status::OK();
}

Status CopyDownloader::CheckFileList(const BeginTabletCopySessionResponsePB& resp) const {
  std::set<std::string_view> names;
  uint64_t total = 0;
  for (const TabletCopyFilePB& f : resp.files()) {
    if (!IsValidTabletCopyFileName(f.name())) {
      return Status::Corruption("the source listed a file that is not a plain file name");
    }
    if (!names.insert(f.name()).second) {
      return Status::Corruption("the source listed file " + f.name() + " twice");
    }
    constexpr uint64_t kMax = uint64_t(std::numeric_limits<int64_t>::max());
    if (f.size() > kMax - total) return Status::Corruption("the source listed impossible sizes");
    total += f.size();
  }
  return Status::OK();
}

Status CopyDownloader::DownloadFile(const TabletCopyFilePB& f) {
  const std::string path = staging_dir_ + "/" + f.name();
  ScopedFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) return ErrnoStatus("cannot create " + path, errno);
  uint32_t crc = 0;
  std::string data;
  for (uint64_t offset = 0; offset < f.size(); offset += data.size()) {
    RETURN_NOT_OK(FetchChunk(f, offset, &data));
    RETURN_NOT_OK_PREPEND(WriteAll(fd.get(), data, offset, path),
                          "free space under " + staging_dir_ + " and copy again");
    crc = Crc32c(crc, data.data(), data.size());
    progress_->bytes_done.fetch_add(int64_t(data.size()));
  }
  if (crc != f.crc32c()) {
    return Status::Corruption("file " + f.name() + " has CRC-32C " + std::to_string(crc) +
                              " where the source announced " + std::to_string(f.crc32c()) +
                              " (every chunk matched its own): the source's snapshot changed "
                              "under it; copy again or from another replica");
  }
  if (fsync(fd.get()) != 0) return ErrnoStatus("cannot fsync " + path, errno);
  return Status::OK();
}

uint64_t CopyDownloader::ChunkLimit() const {
  const uint64_t max_message = messenger_->max_message_size();
  const uint64_t overhead = TabletCopyServiceImpl::kFetchResponseOverheadBytes;
  const uint64_t room = max_message > 2 * overhead ? max_message - overhead : max_message / 2;
  return std::max<uint64_t>(1, std::min<uint64_t>(FLAGS_tablet_copy_max_chunk_bytes, room));
}

Status CopyDownloader::FetchChunk(const TabletCopyFilePB& f, uint64_t offset, std::string* data) {
  const uint64_t want = std::min(f.size() - offset, ChunkLimit());
  const std::string what = "FetchData of file " + f.name() + " at offset " + std::to_string(offset);
  FetchDataRequestPB req;
  req.set_session_id(session_id_);
  req.set_file_name(f.name());
  req.set_offset(offset);
  req.set_max_length(want);
  for (int bad = 1;; bad++) {
    RETURN_NOT_OK(CheckNotCancelled());
    RETURN_NOT_OK_PREPEND(
        ReceiveRateLimiter()->Acquire(int64_t(want), options_.deadline),
        what + ": --tablet_copy_rate_limit_mb leaves no time before the deadline");
    std::shared_ptr<PendingCall<FetchDataResponsePB>> call;
    RETURN_NOT_OK(CallWithRetry(
        what, /*whole_deadline=*/false,
        [&](auto* r, rpc::RpcController* c, std::function<void()> cb) {
          proxy_.FetchDataAsync(req, r, c, std::move(cb));
        },
        &call));
    const FetchDataResponsePB& resp = call->resp;
    if (resp.has_error()) {
      session_lost_ = resp.error().code() == TabletCopyErrorPB::NO_SESSION;
      return FromCopyError(resp.error(), what);
    }
    Status s = CheckChunk(resp, call->rpc, f, want, data);
    if (s.ok()) return s;
    progress_->bad_chunks.fetch_add(1);
    LOG(WARNING) << context_ << ": " << what << ": " << s.ToString() << "; fetching it again";
    if (bad >= kMaxBadChunksInARow) {
      return s.CloneAndPrepend(what + ": bad " + std::to_string(bad) +
                               " times in a row, the network or the source corrupts data; "
                               "copy from another replica");
    }
  }
}

Status CopyDownloader::CheckChunk(const FetchDataResponsePB& resp, const rpc::RpcController& rpc,
                                  const TabletCopyFilePB& f, uint64_t want,
                                  std::string* data) const {
  Slice chunk;
  RETURN_NOT_OK_PREPEND(rpc.GetInboundSidecar(resp.data_sidecar(), &chunk), "no chunk sidecar");
  if (resp.file_size() != f.size()) {
    return Status::Corruption("the source says the file has " + std::to_string(resp.file_size()) +
                              " bytes, not " + std::to_string(f.size()));
  }
  if (chunk.size() == 0 || chunk.size() > want) {
    return Status::Corruption("a chunk of " + std::to_string(chunk.size()) + " bytes, asked for " +
                              std::to_string(want));
  }
  const uint32_t crc = Crc32c(0, chunk.data(), chunk.size());
  if (crc != resp.data_crc32c()) {
    return Status::Corruption("the chunk fails its CRC-32C (" + std::to_string(crc) +
                              ", announced " + std::to_string(resp.data_crc32c()) + ")");
  }
  data->assign(chunk.cdata(), chunk.size());
  return Status::OK();
}

void CopyDownloader::End() {
  if (messenger_->closing()) return;
  EndTabletCopySessionRequestPB req;
  req.set_session_id(session_id_);
  EndTabletCopySessionResponsePB resp;
  rpc::RpcController rpc;
  rpc.set_timeout(std::min(options_.rpc_timeout, MonoDelta::FromSeconds(5)));
  Status s = proxy_.EndTabletCopySession(req, &resp, &rpc);
  if (s.ok() && resp.has_error()) s = FromCopyError(resp.error(), "EndTabletCopySession");
  if (!s.ok()) {
    LOG(WARNING) << context_ << ": cannot end session " << session_id_ << " (the source expires "
                 << "it in time): " << s.ToString();
  }
}

Status CopyDownloader::ResetStagingDir() const {
  std::error_code ec;
  fs::remove_all(staging_dir_, ec);
  if (ec) return Status::IOError("cannot delete the staging dir " + staging_dir_, ec.message());
  fs::create_directories(staging_dir_, ec);
  if (ec) return Status::IOError("cannot create the staging dir " + staging_dir_, ec.message());
  return Status::OK();
}

Status CopyDownloader::CheckNotCancelled() const {
  if (options_.cancelled && options_.cancelled->load()) {
    return Status::Aborted("the copy was cancelled");
  }
  if (messenger_->closing()) return Status::Aborted("the messenger shut down");
  return Status::OK();
}

template <typename Resp>
Status CopyDownloader::Wait(PendingCall<Resp>* call) const {
  UniqueLock l(call->mu);
  // Ends: the framework completes every call by its timeout at the latest.
  while (!call->done) {
    RETURN_NOT_OK(CheckNotCancelled());
    call->cv.wait_for(l, std::chrono::milliseconds(50));
  }
  return Status::OK();
}

template <typename Resp, typename Send>
Status CopyDownloader::CallWithRetry(const std::string& what, bool whole_deadline, const Send& send,
                                     std::shared_ptr<PendingCall<Resp>>* out) {
  for (int attempt = 0;; attempt++) {
    RETURN_NOT_OK_PREPEND(CheckNotCancelled(), what);
    const MonoDelta left = options_.deadline - MonoTime::Now();
    if (left <= MonoDelta()) {
      return Status::TimedOut(what + ": the deadline passed; copy again with more time");
    }
    auto call = std::make_shared<PendingCall<Resp>>();
    call->rpc.set_timeout(whole_deadline ? left : std::min(left, options_.rpc_timeout));
    send(&call->resp, &call->rpc, [call] { call->Complete(); });
    RETURN_NOT_OK_PREPEND(Wait(call.get()), what);
    const Status& s = call->rpc.status();
    if (s.ok()) {
      *out = std::move(call);
      return Status::OK();
    }
    RETURN_NOT_OK_PREPEND(CheckNotCancelled(), what);
    if (!IsRetriableCopyRpcError(s)) {
      return s.CloneAndPrepend(what + " failed; does the source serve tablet copies?");
    }
    progress_->rpc_retries.fetch_add(1);
    LOG(WARNING) << context_ << ": " << what << " failed: " << s.ToString() << "; retrying";
    if (!rpc::BackoffBeforeRetry(attempt, options_.deadline)) {
      return Status::TimedOut(what + " kept failing until the deadline (last: " + s.ToString() +
                              "); check the source, or copy from another replica");
    }
  }
}

}  // namespace

Status DownloadTabletCopy(const std::shared_ptr<rpc::Messenger>& messenger,
                          const rpc::Sockaddr& source, const std::string& tablet_id,
                          const std::string& requestor_uuid, const std::string& staging_dir,
                          const TabletCopyClientOptions& options, TabletCopyProgress* progress,
                          TabletCopyDownload* out) {
  CopyDownloader d(messenger, source, tablet_id, requestor_uuid, staging_dir, options, progress);
  return d.Run(out);
}

}  // namespace nyala::tserver
