// TabletCopyRunner: a tablet server's side of tablet copy as a receiver. It answers
// StartTabletCopy (tserver_admin.proto): the first call for a tablet starts a copy on
// a thread of its own (at most --num_tablets_to_copy_simultaneously at once), which
// downloads the tablet from the source into a staging directory (the download
// function: tablet_copy_client.h in production) and installs it
// (TabletManager::InstallCopy); later calls report it running with its progress, then
// DONE with the copy's applied index, or FAILED with the reason (once: the next call
// starts another copy). A call for a tablet whose replica here already holds the
// index asked for answers DONE at once. A call from another source than the running
// copy's (a new leader: the old one may be gone) cancels that copy; the next call
// reports it FAILED, and the one after starts a copy from the new source.
//
// Crash safety: staging directories live under one root, emptied when the runner
// starts; the install is crash-safe by itself (TabletStore::ImportTablet).
//
// Thread-safety: thread-safe. Shutdown() cancels running downloads and joins them.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "tserver/tablet_copy_client.h"
#include "tserver/tserver_admin.pb.h"

namespace nyala::tserver {

class RequestTracker;
class TabletManager;

class TabletCopyRunner {
 public:
  // Downloads tablet `tablet_id` from the server at `source` ("host:port") into
  // `staging_dir` (made empty first), filling `progress` and the copy's `superblock`;
  // gives up early, with Aborted, once `*cancelled` is set.
  using DownloadFn = std::function<Status(
      const std::string& source, const std::string& tablet_id, const std::string& staging_dir,
      TabletCopyProgress* progress, const std::atomic<bool>* cancelled, std::string* superblock)>;
  struct Options {
    TabletManager* tablets = nullptr;   // must outlive the runner
    RequestTracker* tracker = nullptr;  // must outlive the runner
    std::string self_uuid;
    std::string staging_root;  // on the file system of the first data dir
    DownloadFn download;
  };
  explicit TabletCopyRunner(Options options);
  ~TabletCopyRunner();  // Shutdown()
  TabletCopyRunner(const TabletCopyRunner&) = delete;
  TabletCopyRunner& operator=(const TabletCopyRunner&) = delete;

  // The StartTabletCopy handler (a service thread; never blocks on a copy).
  void Start(const StartTabletCopyRequestPB& req, StartTabletCopyResponsePB* resp) EXCLUDES(mu_);

  // A copy running here, for the tablet list and web pages.
  struct Running {
    std::string tablet_id;
    std::string source_uuid;
    int64_t bytes_done = 0;
    int64_t bytes_total = 0;
  };
  std::vector<Running> RunningCopies() const EXCLUDES(mu_);
  // Copies finished here (done and failed) since the server started.
  int64_t copies_done() const { return done_.load(); }
  int64_t copies_failed() const { return failed_.load(); }

  void Shutdown() EXCLUDES(mu_);

 private:
  struct Task {
    std::atomic<bool> cancelled{false};  // Shutdown, or a newer source
    std::string source_uuid;
    std::string source_address;
    TabletCopyProgress progress;
    bool finished = false;
    Status status;               // once finished
    uint64_t applied_index = 0;  // once finished OK
    std::thread thread;
  };
  void Run(const std::string& tablet_id, Task* task);

  const Options opts_;
  std::atomic<bool> shutting_down_{false};
  std::atomic<int64_t> done_{0};
  std::atomic<int64_t> failed_{0};
  mutable Mutex mu_;
  std::map<std::string, std::unique_ptr<Task>> tasks_ GUARDED_BY(mu_);  // by tablet id
  // Threads of tasks that were answered and removed, joined at Shutdown.
  std::vector<std::thread> finished_threads_ GUARDED_BY(mu_);
};

}  // namespace nyala::tserver
