#include "consensus/consensus_metrics.h"

#include "common/metrics.h"

namespace nyala::consensus {

namespace {
constexpr char kStageHelp[] =
    "Time a server's consensus work spends per stage: follower_append (an append read off "
    "the wire to its answer sent, durable), follower_queue (read to stepped on the worker), "
    "follower_log (handed to the log to durable), ack_round_trip (leader: an append sent to "
    "its acknowledgement back)";
}  // namespace

ConsensusMetrics::ConsensusMetrics(MetricRegistry* r)
    : follower_append(
          r->FindOrCreateHistogram("consensus_stage_duration_seconds", kStageHelp,
                                   {{"stage", "follower_append"}})),
      follower_queue(r->FindOrCreateHistogram("consensus_stage_duration_seconds", kStageHelp,
                                              {{"stage", "follower_queue"}})),
      follower_log(r->FindOrCreateHistogram("consensus_stage_duration_seconds", kStageHelp,
                                            {{"stage", "follower_log"}})),
      ack_round_trip(r->FindOrCreateHistogram("consensus_stage_duration_seconds", kStageHelp,
                                              {{"stage", "ack_round_trip"}})),
      log_sync(r->FindOrCreateHistogram("consensus_log_sync_duration_seconds",
                                        "Time one fdatasync of the consensus log took")),
      log_append(r->FindOrCreateHistogram(
          "consensus_log_append_duration_seconds",
          "Time from records handed to the consensus log to their being durable (waiting for "
          "the batch being written, then their own write and fdatasync)")) {}

}  // namespace nyala::consensus
