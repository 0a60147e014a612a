// TabletCopySourceManager: the source side of tablet copy (tablet_copy.proto). It
// keeps the copy sessions this server serves: each one a snapshot of a tablet in a
// directory of its own, <root>/<session id>/, made by the snapshot provider, and the
// size and CRC-32C of each of its files, computed once when the session begins. It
// serves chunks of those files, and deletes a session's directory when the session
// ends, expires (--tablet_copy_idle_timeout_sec without a call, checked by a
// background thread) or the manager goes. It never looks inside the files or the
// superblock.
//
// Every request comes off the wire: each is checked, and refused with a specific
// TabletCopyErrorPB code and a LOG(WARNING) naming the tablet, the session and the
// caller. Nothing a peer sends can crash the server or read outside a session's own
// files (names are plain file names and must be among the session's).
//
// Threads: BeginSession blocks for the snapshot and for reading every file through
// once; BeginSessionAsync runs it on the manager's snapshot thread, one session at a
// time. FetchData blocks for one pread. A background thread expires idle sessions.
//
// Thread-safety: thread-safe. The manager must outlive every call into it; destroy it
// (or call Shutdown) after the RPC messenger that serves it is shut down and before
// that messenger is destroyed: the snapshot thread answers Begin calls still queued.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/result.h"
#include "common/status.h"
#include "common/task_thread.h"
#include "common/thread_annotations.h"
#include "nyala/monotime.h"
#include "tserver/tablet_copy.pb.h"

namespace nyala {
class MetricRegistry;
}  // namespace nyala

namespace nyala::tserver {

// What a snapshot provider made.
struct TabletCopySnapshot {
  // The files to serve: names relative to the snapshot's directory, each a plain file
  // name (IsValidTabletCopyFileName) of a regular file directly in it.
  std::vector<std::string> files;
  // Describes the snapshot to the layer that installs it; served as is.
  std::string superblock;
};

// Makes a snapshot of tablet `tablet_id`: creates directory `dir` (which does not
// exist yet), fills it and describes it in `out`. NotFound when this server has no
// such tablet (answered TABLET_NOT_FOUND); any other error is answered SNAPSHOT_FAILED.
// On failure the manager deletes `dir`. Called on the manager's snapshot thread (or
// the caller of BeginSession), one call at a time per thread.
using TabletCopySnapshotProvider = std::function<Status(
    const std::string& tablet_id, const std::string& dir, TabletCopySnapshot* out)>;

// True for a plain file name: not empty, at most 255 bytes, no '/' or NUL, not "."
// or "..". The only names a snapshot may hold and a copy may ask for or write.
bool IsValidTabletCopyFileName(std::string_view name);

// The outcome of a successful BeginSession.
struct TabletCopySessionInfo {
  std::string session_id;
  MonoDelta idle_timeout;
  std::string superblock;
  std::vector<TabletCopyFilePB> files;  // in the provider's order
};

// One chunk read by FetchData.
struct TabletCopyChunk {
  std::string data;
  uint32_t crc32c = 0;     // of `data`
  uint64_t file_size = 0;  // of the whole file
};

struct TabletCopySourceOptions {
  // Sessions idle this long are expired. Zero: --tablet_copy_idle_timeout_sec, read
  // at every check (a runtime flag).
  MonoDelta idle_timeout;
  // Where the manager's metrics go (gauge tablet_copy_source_sessions, counters
  // tablet_copy_source_sent_bytes_total and tablet_copy_source_expired_sessions_total).
  // May be null; else it must outlive the manager.
  MetricRegistry* metrics = nullptr;
};

class TabletCopySourceManager {
 public:
  // Creates `root_dir` if needed and deletes everything in it (sessions a crash left
  // behind: no session survives a restart). Starts the snapshot and expiry threads.
  static Result<std::unique_ptr<TabletCopySourceManager>> Create(
      std::string root_dir, TabletCopySnapshotProvider provider,
      TabletCopySourceOptions options = {});
  ~TabletCopySourceManager();
  TabletCopySourceManager(const TabletCopySourceManager&) = delete;
  TabletCopySourceManager& operator=(const TabletCopySourceManager&) = delete;

  // Stops the threads (queued Begin calls are answered with ServiceUnavailable, not
  // run) and ends every session, deleting its directory. Later calls fail. Idempotent.
  void Shutdown() EXCLUDES(mu_);

  // Each call below names its `caller` (the peer's address) for the warning it logs
  // when it refuses a request. On failure `*code` says which TabletCopyErrorPB code
  // the RPC answers with; it is left alone on success.

  // Makes a snapshot of `tablet_id` through the provider and opens a session over
  // it. Blocks for the snapshot and for reading every file once (its CRC-32C).
  // INVALID_REQUEST for an empty tablet id or requestor uuid, TOO_MANY_SESSIONS when
  // --tablet_copy_max_sessions are open or being made, TABLET_NOT_FOUND,
  // SNAPSHOT_FAILED (the provider failed or made files that cannot be served).
  Status BeginSession(const std::string& tablet_id, const std::string& requestor_uuid,
                      const std::string& caller, TabletCopySessionInfo* out,
                      TabletCopyErrorPB::Code* code) EXCLUDES(mu_);
  // BeginSession on the manager's snapshot thread, one at a time; `done` runs there
  // with the outcome (or at once on the calling thread after Shutdown). A call still
  // queued when `deadline` passes is answered TimedOut without a snapshot.
  using BeginCallback =
      std::function<void(const Status& s, TabletCopyErrorPB::Code code, TabletCopySessionInfo)>;
  void BeginSessionAsync(std::string tablet_id, std::string requestor_uuid, std::string caller,
                         MonoTime deadline, BeginCallback done) EXCLUDES(mu_);

  // Reads at most `max_length` bytes of file `file_name` of session `session_id` from
  // `offset` on: at most --tablet_copy_max_chunk_bytes, and only the end of the file
  // when less is left (nothing at offset == size). Resets the session's idle time.
  // NO_SESSION for an unknown id; INVALID_REQUEST for an empty id, a name that is not
  // a plain file name or not one of the session's files, offset > size, max_length 0;
  // SNAPSHOT_FAILED when the file cannot be read.
  Status FetchData(const std::string& session_id, const std::string& file_name, uint64_t offset,
                   uint64_t max_length, const std::string& caller, TabletCopyChunk* out,
                   TabletCopyErrorPB::Code* code) EXCLUDES(mu_);

  // Ends session `session_id` and deletes its directory (once no FetchData on it is
  // still reading). NO_SESSION for an unknown id, INVALID_REQUEST for an empty one.
  Status EndSession(const std::string& session_id, const std::string& caller,
                    TabletCopyErrorPB::Code* code) EXCLUDES(mu_);

  const std::string& root_dir() const { return root_; }
  // The idle timeout in force now.
  MonoDelta idle_timeout() const;

  // Counters, for metrics and tests (each read is a snapshot; cheap).
  int64_t sessions_open() const EXCLUDES(mu_);
  int64_t sessions_begun() const { return sessions_begun_.load(std::memory_order_relaxed); }
  int64_t sessions_expired() const { return sessions_expired_.load(std::memory_order_relaxed); }
  int64_t bytes_sent() const { return bytes_sent_.load(std::memory_order_relaxed); }

  // Expires, now, the sessions idle for longer than `idle` (the expiry thread's pass,
  // with another timeout). Returns how many it expired.
  size_t ExpireSessionsIdleForTests(MonoDelta idle) { return ExpireIdleSessions(idle); }

 private:
  struct Session;

  TabletCopySourceManager(std::string root_dir, TabletCopySnapshotProvider provider,
                          TabletCopySourceOptions options);
  // Reads every file of `snap` in `dir` once: its size and CRC-32C.
  static Status ChecksumFiles(const std::string& dir, const TabletCopySnapshot& snap,
                              std::vector<TabletCopyFilePB>* files);
  // The session `id`, or null.
  std::shared_ptr<Session> Find(const std::string& id) EXCLUDES(mu_);
  void ExpiryLoop() EXCLUDES(mu_);
  size_t ExpireIdleSessions(MonoDelta idle) EXCLUDES(mu_);
  void RegisterMetrics();

  // Set at construction, never changed.
  const std::string root_;
  const TabletCopySnapshotProvider provider_;
  const TabletCopySourceOptions options_;

  std::atomic<int64_t> sessions_begun_{0};
  std::atomic<int64_t> sessions_expired_{0};
  std::atomic<int64_t> bytes_sent_{0};

  mutable Mutex mu_;
  // A session is destroyed, and its directory deleted, when the last reference to it
  // goes: the map's, or that of a FetchData still reading.
  std::map<std::string, std::shared_ptr<Session>> sessions_ GUARDED_BY(mu_);
  // Sessions whose snapshot is being made (they count against the maximum).
  int starting_ GUARDED_BY(mu_) = 0;
  bool shutting_down_ GUARDED_BY(mu_) = false;
  CondVar expiry_cv_;

  // Last: started once everything above is set up.
  std::thread expiry_thread_;
  std::unique_ptr<TaskThread> snapshot_thread_;
};

}  // namespace nyala::tserver
