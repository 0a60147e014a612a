// ConsensusMetrics: the latency histograms of a server's consensus runtime and log,
// made once from the server's metric registry (docs/metrics.md). A runtime started
// without a registry (tests, benchmarks) records none.
//
// What a replicated write spends on the leader, stage by stage, is recorded by the
// tablet server from each proposal's ProposalTrace (raft_group.h); these are the
// stages no one proposal owns: a follower's handling of an append, the round trip of
// an append as the leader sees it, and the log's own work.
//
// Thread-safety: the histograms are updated with atomics from any thread; the struct
// is immutable after construction. The registry must outlive it.
#pragma once

namespace nyala {
class Histogram;
class MetricRegistry;
}  // namespace nyala

namespace nyala::consensus {

struct ConsensusMetrics {
  explicit ConsensusMetrics(MetricRegistry* registry);

  // consensus_stage_duration_seconds{stage=...}
  // Follower: an append with entries read off the wire, to its records durable and the
  // answer sent.
  Histogram* follower_append;
  // Follower: read off the wire, to stepped on the group's worker (the hand-off).
  Histogram* follower_queue;
  // Follower: the append's records handed to the log, to durable (waiting for the batch
  // being written, then the write and the fdatasync).
  Histogram* follower_log;
  // Leader: an append with entries sent, to the follower's acknowledgement of its last
  // entry read here (both network legs, and the follower's append and fdatasync).
  Histogram* ack_round_trip;
  // consensus_log_sync_duration_seconds: one fdatasync of the consensus log.
  Histogram* log_sync;
  // consensus_log_append_duration_seconds: records handed to the log, to durable.
  Histogram* log_append;
};

}  // namespace nyala::consensus
