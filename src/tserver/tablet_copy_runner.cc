#include "tserver/tablet_copy_runner.h"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <filesystem>
#include <system_error>

#include "common/flag_tags.h"
#include "common/wire_protocol.h"
#include "tserver/tablet_copy_source.h"
#include "tserver/tablet_manager.h"
#include "tserver/tablet_replica.h"

DEFINE_int32(num_tablets_to_copy_simultaneously, 4,
             "Tablet copies a tablet server fetches at once; a leader asking for more is told to "
             "ask again later. Their total rate is bounded by --tablet_copy_rate_limit_mb.");
TAG_FLAG(num_tablets_to_copy_simultaneously, runtime);

namespace nyala::tserver {

namespace {

void RemoveDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  LOG_IF(WARNING, ec) << "cannot remove " << dir << ": " << ec.message();
}

}  // namespace

TabletCopyRunner::TabletCopyRunner(Options options) : opts_(std::move(options)) {
  // Whatever a crash left here is half a download: nothing names it.
  RemoveDir(opts_.staging_root);
}

TabletCopyRunner::~TabletCopyRunner() { Shutdown(); }

void TabletCopyRunner::Shutdown() {
  shutting_down_ = true;
  std::vector<std::thread> threads;
  {
    MutexLock l(mu_);
    for (auto& [id, t] : tasks_) {
      t->cancelled = true;
      if (t->thread.joinable()) threads.push_back(std::move(t->thread));
    }
    for (auto& t : finished_threads_) threads.push_back(std::move(t));
    finished_threads_.clear();
  }
  for (auto& t : threads) t.join();
}

std::vector<TabletCopyRunner::Running> TabletCopyRunner::RunningCopies() const {
  std::vector<Running> out;
  MutexLock l(mu_);
  for (const auto& [id, t] : tasks_) {
    if (t->finished) continue;
    out.push_back(
        Running{id, t->source_uuid, t->progress.bytes_done.load(), t->progress.bytes_total.load()});
  }
  return out;
}

void TabletCopyRunner::Start(const StartTabletCopyRequestPB& req, StartTabletCopyResponsePB* resp) {
  auto refuse = [&](TabletServerErrorPB::Code code, const Status& s) {
    LOG(WARNING) << "StartTabletCopy of tablet " << req.tablet_id() << " from server "
                 << req.source().permanent_uuid() << " refused: " << s.ToString();
    resp->mutable_error()->set_code(code);
    StatusToPB(s, resp->mutable_error()->mutable_status());
  };
  if (req.tablet_id().empty() || req.source().permanent_uuid().empty() ||
      req.source().host().empty() || req.source().port() == 0 || req.source().port() > 65535) {
    return refuse(TabletServerErrorPB::INVALID_CONFIG,
                  Status::InvalidArgument("a tablet copy needs a tablet id and a source "
                                          "(uuid, host and port)"));
  }
  // The id names the staging directory: a plain file name only.
  if (!IsValidTabletCopyFileName(req.tablet_id())) {
    return refuse(
        TabletServerErrorPB::INVALID_CONFIG,
        Status::InvalidArgument("a tablet id must be a plain name, not '" + req.tablet_id() + "'"));
  }
  if (req.source().permanent_uuid() == opts_.self_uuid) {
    return refuse(TabletServerErrorPB::INVALID_CONFIG,
                  Status::InvalidArgument("a server cannot copy a tablet from itself"));
  }
  if (shutting_down_) {
    return refuse(TabletServerErrorPB::TABLET_NOT_RUNNING,
                  Status::ServiceUnavailable("the tablet server is shutting down"));
  }
  MutexLock l(mu_);
  auto it = tasks_.find(req.tablet_id());
  if (it != tasks_.end()) {
    Task& t = *it->second;
    if (!t.finished) {
      if (t.source_uuid != req.source().permanent_uuid() && !t.cancelled) {
        LOG(INFO) << "tablet " << req.tablet_id() << ": server " << req.source().permanent_uuid()
                  << " asks for a copy while one from server " << t.source_uuid
                  << " runs; cancelling that one";
        t.cancelled = true;
      }
      resp->set_state(StartTabletCopyResponsePB::COPYING);
      resp->set_bytes_done(t.progress.bytes_done.load());
      resp->set_bytes_total(t.progress.bytes_total.load());
      return;
    }
    if (t.status.ok()) {
      resp->set_state(StartTabletCopyResponsePB::DONE);
      resp->set_applied_index(t.applied_index);
    } else {
      resp->set_state(StartTabletCopyResponsePB::FAILED);
      StatusToPB(t.status, resp->mutable_failure());
    }
    // Answered once: the next call starts afresh.
    if (t.thread.joinable()) finished_threads_.push_back(std::move(t.thread));
    tasks_.erase(it);
    return;
  }
  if (std::shared_ptr<Tablet> t = opts_.tablets->Lookup(req.tablet_id())) {
    std::shared_ptr<consensus::RaftGroup> g = t->replica().group();
    const uint64_t applied = t->replica().applied_index();
    if (t->state() == TabletState::kRunning && g && applied >= req.min_index() && applied > 0) {
      resp->set_state(StartTabletCopyResponsePB::DONE);
      resp->set_applied_index(applied);
      return;
    }
  }
  int running = 0;
  for (const auto& [id, t] : tasks_) running += !t->finished;
  if (running >= FLAGS_num_tablets_to_copy_simultaneously) {
    return refuse(
        TabletServerErrorPB::THROTTLED,
        Status::ServiceUnavailable("this server runs " + std::to_string(running) + " tablet copies",
                                   "--num_tablets_to_copy_simultaneously; ask again later"));
  }
  auto task = std::make_unique<Task>();
  task->source_uuid = req.source().permanent_uuid();
  task->source_address = req.source().host() + ":" + std::to_string(req.source().port());
  Task* raw = task.get();
  LOG(INFO) << "tablet " << req.tablet_id() << ": fetching a copy from server " << task->source_uuid
            << " at " << task->source_address << " (index " << req.min_index() << " or later)";
  tasks_[req.tablet_id()] = std::move(task);
  raw->thread = std::thread([this, id = req.tablet_id(), raw] { Run(id, raw); });
  resp->set_state(StartTabletCopyResponsePB::COPYING);
}

void TabletCopyRunner::Run(const std::string& tablet_id, Task* task) {
  const std::string staging = opts_.staging_root + "/" + tablet_id;
  const MonoTime start = MonoTime::Now();
  std::string superblock;
  Status s = opts_.download(task->source_address, tablet_id, staging, &task->progress,
                            &task->cancelled, &superblock);
  uint64_t index = 0;
  if (s.ok()) {
    Result<uint64_t> installed =
        opts_.tablets->InstallCopy(tablet_id, staging, superblock, opts_.tracker);
    if (installed.ok()) {
      index = *installed;
    } else if (installed.status().IsAlreadyPresent()) {
      // The replica here caught up meanwhile: it needs no copy.
      std::shared_ptr<Tablet> t = opts_.tablets->Lookup(tablet_id);
      index = t ? t->replica().applied_index() : 0;
      if (index == 0) s = installed.status();
    } else {
      s = installed.status();
    }
  }
  RemoveDir(staging);
  const double secs = (MonoTime::Now() - start).ToSeconds();
  if (s.ok()) {
    done_++;
    LOG(INFO) << "tablet " << tablet_id << ": copy from server " << task->source_uuid
              << " installed at index " << index << ": " << task->progress.bytes_done.load()
              << " bytes in " << secs << " s";
  } else {
    failed_++;
    LOG(WARNING) << "tablet " << tablet_id << ": copy from server " << task->source_uuid
                 << " failed after " << secs << " s: " << s.ToString();
  }
  MutexLock l(mu_);
  task->status = s;
  task->applied_index = index;
  task->finished = true;
}

}  // namespace nyala::tserver
