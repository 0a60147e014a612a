// The receiving side of tablet copy (tablet_copy.proto): downloads a snapshot of a
// tablet from a source server's TabletCopyService into a staging directory, checking
// every chunk and every file, and hands back the superblock that describes it. What
// the snapshot means, and installing it, is the caller's business.
//
// What the download does after each call:
//
//   the chunk arrived and its CRC-32C matches  -> write it, fetch the next one
//   the RPC failed (connection dropped, timeout, server busy or shutting down)
//                                              -> the same call again after a backoff,
//                                                 until the deadline
//   the chunk failed its CRC-32C, or the answer is malformed
//                                              -> the same chunk again, at most
//                                                 kMaxBadChunksInARow times in a row
//   NO_SESSION (the source expired the session, or restarted)
//                                              -> a new session, and the download
//                                                 starts over from nothing (the files
//                                                 may differ), at most
//                                                 options.max_sessions sessions
//   any other error, or the RPC is not served (no such service)
//                                              -> fail
//
// Every chunk received waits for the process-wide --tablet_copy_rate_limit_mb.
//
// Thread-safety: DownloadTabletCopy may run on many threads at once (each with its own
// staging directory); it blocks its caller for the whole download, so never call it on
// a reactor or service thread. `progress` may be read from any thread meanwhile.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "nyala/monotime.h"
#include "rpc/sockaddr.h"
#include "tserver/tablet_copy.pb.h"

namespace nyala::rpc {
class Messenger;
}  // namespace nyala::rpc

namespace nyala::tserver {

// How far a download got, updated as it runs; readable from any thread (the tablet
// list shows it). When the download starts over, bytes_done goes back to 0.
struct TabletCopyProgress {
  std::atomic<int64_t> bytes_done{0};   // file bytes received and checked
  std::atomic<int64_t> bytes_total{0};  // of the current session's files; 0 until it began
  std::atomic<int64_t> sessions{0};     // sessions begun (more than 1: it started over)
  std::atomic<int64_t> rpc_retries{0};  // calls sent again after an RPC failure
  std::atomic<int64_t> bad_chunks{0};   // chunks that failed their CRC-32C or were malformed
};

// What a download produced: the files are in the staging directory under their names.
struct TabletCopyDownload {
  std::string superblock;
  std::vector<TabletCopyFilePB> files;  // name, size and CRC-32C, in the source's order
};

struct TabletCopyClientOptions {
  // The whole download fails with TimedOut past this. Required.
  MonoTime deadline;
  // The timeout of one FetchData or EndTabletCopySession call (within the deadline).
  // BeginTabletCopySession may wait for the source's snapshot, so it gets all the time
  // left before the deadline.
  MonoDelta rpc_timeout = MonoDelta::FromSeconds(30);
  // Sessions begun at most (each NO_SESSION answer starts the download over).
  int max_sessions = 5;
  // When set, the download stops soon after *cancelled turns true (at the latest when
  // the backoff or rate-limit wait it is in ends, a few seconds) and fails with
  // Aborted. Must outlive the call.
  const std::atomic<bool>* cancelled = nullptr;
};

// Chunks that fail their CRC-32C (or are malformed) one after another before the
// download gives up: the network or the source corrupts data.
inline constexpr int kMaxBadChunksInARow = 10;

// Downloads tablet `tablet_id` from the TabletCopyService at `source` through
// `messenger` into `staging_dir`, which is deleted first (with everything in it) and
// created afresh. `requestor_uuid` is this server's uuid (the source logs it). On
// success every file of the snapshot is in `staging_dir`, fsynced, with the size and
// CRC-32C the source announced, and `out` describes them; the session is ended.
// `progress` (may be null) is updated as the download runs.
//
// On failure the Status says what failed and what to do about it, and the staging
// directory is left as it is (partly downloaded): the caller deletes it. The source's
// session is ended (best effort) unless it is already gone. Aborted when the
// messenger shuts down or options.cancelled turns true; TimedOut past
// options.deadline.
Status DownloadTabletCopy(const std::shared_ptr<rpc::Messenger>& messenger,
                          const rpc::Sockaddr& source, const std::string& tablet_id,
                          const std::string& requestor_uuid, const std::string& staging_dir,
                          const TabletCopyClientOptions& options, TabletCopyProgress* progress,
                          TabletCopyDownload* out);

}  // namespace nyala::tserver
