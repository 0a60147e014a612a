// WriteTrace: one Write RPC's way through the tablet server, stage by stage, for the
// tserver_write_stage_duration_seconds histograms (docs/metrics.md) and for /rpcz while the
// call runs (rpc::CallTrace). On a leader a replicated write passes, in order:
//
//   queue      the call waits for a service thread (from the read of its frame)
//   prepare    decode, row locks, existence reads, the write command: to its proposal
//              (lock_wait: the part of it spent waiting for the row locks)
//   handoff    the proposal waits for the group's worker to append it to the Raft log
//   append     appended, until the worker takes its Ready: the records go to the log
//              and the appends to the followers
//   commit     until a Ready takes it as committed: a majority holds it durably (the
//              leader's own write and fdatasync, leader_sync, runs in parallel with the
//              followers'; consensus_stage_duration_seconds times theirs)
//   apply      applied to the tablet here (with the entries before it in that Ready)
//   respond    the service thread wakes, and the response is built and sent
//
// After queue, the stages add up to the handler's time (tserver_write_duration_seconds,
// which ends just before the response is sent). A write that replicates nothing (every
// row failed) or fails records queue, lock_wait and prepare only.
//
// Thread-safety: the service thread that handles the call writes the stamps of its
// own stages, the group's worker those of ProposalTrace; Describe() may run on any
// thread meanwhile (everything it reads is atomic or set at construction).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "consensus/raft_group.h"
#include "nyala/monotime.h"
#include "rpc/rpc_context.h"

namespace nyala::tserver {

struct TServerMetrics;

class WriteTrace final : public rpc::CallTrace {
 public:
  // A call that arrived at `arrival` (its frame read) and whose handler starts now.
  explicit WriteTrace(MonoTime arrival);

  // Service thread: the row locks are held; the write command is being proposed.
  void Locked() { locked_us_.store(GetMonoTimeMicros(), std::memory_order_relaxed); }
  void Proposed() { proposed_us_.store(GetMonoTimeMicros(), std::memory_order_relaxed); }
  // What the Raft group stamps as the proposal moves on.
  const std::shared_ptr<consensus::ProposalTrace>& proposal() const { return proposal_; }

  // Service thread, once the response is final (just before it is sent): adds each
  // stage the write passed to its histogram.
  void Record(TServerMetrics* metrics) const;

  // rpc::CallTrace: the stage the write is in now, and for how long.
  std::string Describe(MonoTime now) const override;

 private:
  const int64_t arrival_us_;
  const int64_t start_us_;
  std::atomic<int64_t> locked_us_{0};
  std::atomic<int64_t> proposed_us_{0};
  const std::shared_ptr<consensus::ProposalTrace> proposal_;
};

}  // namespace nyala::tserver
