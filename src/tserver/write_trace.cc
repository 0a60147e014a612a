#include "tserver/write_trace.h"

#include <algorithm>

#include "common/histogram.h"
#include "tserver/tserver_metrics.h"

namespace nyala::tserver {

namespace {
int64_t Micros(MonoTime t) { return t.ToNanoseconds() / 1000; }
}  // namespace

WriteTrace::WriteTrace(MonoTime arrival)
    : arrival_us_(Micros(arrival)),
      start_us_(GetMonoTimeMicros()),
      proposal_(std::make_shared<consensus::ProposalTrace>()) {}

void WriteTrace::Record(TServerMetrics* m) const {
  if (m == nullptr) return;
  const int64_t end = GetMonoTimeMicros();
  m->write_queue->Increment(std::max<int64_t>(0, start_us_ - arrival_us_));
  const int64_t locked = locked_us_.load(std::memory_order_relaxed);
  const int64_t proposed = proposed_us_.load(std::memory_order_relaxed);
  if (locked != 0) m->write_lock_wait->Increment(locked - start_us_);
  const consensus::ProposalTrace& p = *proposal_;
  const int64_t applied = p.applied_us.load(std::memory_order_relaxed);
  if (proposed == 0 || applied == 0) {
    // Not replicated, or not to the end: its preparation only.
    m->write_prepare->Increment((proposed != 0 ? proposed : end) - start_us_);
    return;
  }
  const int64_t appended = p.appended_us.load(std::memory_order_relaxed);
  const int64_t sent = p.sent_us.load(std::memory_order_relaxed);
  const int64_t durable = p.durable_us.load(std::memory_order_relaxed);
  const int64_t committed = p.committed_us.load(std::memory_order_relaxed);
  m->write_prepare->Increment(proposed - start_us_);
  m->write_handoff->Increment(appended - proposed);
  m->write_append->Increment(sent - appended);
  m->write_commit->Increment(committed - sent);
  if (durable != 0) m->write_leader_sync->Increment(durable - sent);
  m->write_apply->Increment(applied - committed);
  m->write_respond->Increment(end - applied);
}

std::string WriteTrace::Describe(MonoTime now) const {
  const int64_t now_us = Micros(now);
  const consensus::ProposalTrace& p = *proposal_;
  // The newest stamp says where the write is.
  struct Stage {
    int64_t since;
    const char* doing;
  };
  const Stage stages[] = {
      {p.applied_us.load(std::memory_order_relaxed), "applied; answering"},
      {p.committed_us.load(std::memory_order_relaxed), "committed; applying"},
      {p.sent_us.load(std::memory_order_relaxed),
       p.durable_us.load(std::memory_order_relaxed) != 0
           ? "durable here; waiting for a majority of replicas"
           : "replicating: waiting for this server's log sync and a majority of replicas"},
      {p.appended_us.load(std::memory_order_relaxed), "appended to the Raft log; to be sent"},
      {proposed_us_.load(std::memory_order_relaxed),
       "proposed; waiting for the consensus worker"},
      {locked_us_.load(std::memory_order_relaxed), "row locks held; reading rows"},
      {start_us_, "waiting for row locks"},
  };
  for (const Stage& s : stages) {
    if (s.since != 0) {
      return std::string(s.doing) + " for " + std::to_string((now_us - s.since) / 1000) + " ms";
    }
  }
  return "queued";
}

}  // namespace nyala::tserver
