// ConsensusRuntime: drives every Raft group (RaftGroup, raft_group.h) of one server
// with a fixed pool of worker threads, over one shared log (log.h) and one batched
// transport (ConsensusService.MultiUpdate, consensus.proto).
//
// Threads:
//  - N worker threads (--consensus_num_threads). Each group belongs to one worker
//    (by group id), which alone touches its Raft instance and state machine: no lock
//    per group, and no thread per group. A worker runs the tasks posted to it
//    (inbound messages, proposals, log completions), ticks its awake groups every
//    --raft_heartbeat_interval_ms / 4, and then handles every Ready the touched
//    groups have. "The worker" is whoever runs its part: its thread, or a reactor
//    that borrowed it (below).
//  - The log's writer thread writes and fdatasyncs, sends the messages that waited
//    for those records, and posts the completion back to the group's worker.
//  - Reactor threads of the messenger run the MultiUpdate handler, which hands each
//    message to its group's worker, and the completions of outbound calls. When the
//    worker sleeps with nothing queued (--consensus_run_on_reactor), the handler
//    borrows it instead: right after the read, as an inline task (rpc_context.h
//    RunInlineAfterRead), the reactor runs the worker's part for those messages and
//    what follows from them, then gives it back; the worker's thread runs nothing
//    meanwhile. There a Ready with at most one entry, and nothing else of its group
//    waiting for the disk, is written and synced on the reactor if the log's writer
//    is idle (SharedLog::AppendHereIfIdle), so an answer leaves with no thread wakeup
//    on the way.
//
// Transport: the messages every group has for one destination server go into that
// server's outbox; an outbox sends them as one MultiUpdate call, with at most
// --consensus_max_calls_in_flight calls unanswered per destination, so messages
// produced while calls are out travel together in the next one. A call carries Raft
// messages only: their answers come back in later calls the other way. A failed call
// loses its messages, which Raft resends.
// For tests, --fault_injection_consensus_drop_peers (changeable at run time) cuts the
// traffic with named servers both ways, as a network partition would: nothing is sent
// to them, and their calls are refused (so neither side hears from the other).
//
// Log space: a group's records stay in the log until its state machine reports its
// applied state durable (RaftGroup::ReportDurable); once some groups keep more than
// --log_max_old_segments old segments alive, their state machines are asked to flush.
//
// Idle groups cost nothing: a quiesced group (raft.h) is not ticked and sends
// nothing. Liveness between servers replaces its heartbeats: every outbox that sent
// nothing for a server heartbeat interval (a quarter of the minimum election
// timeout) sends an empty MultiUpdate, and a worker wakes each quiesced follower
// whose leader's server it has not heard from for a minimum election timeout.
//
// Peers are identified by server ids (PeerId): Raft's peer ids are the servers'.
//
// Thread-safety: every public method may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "common/result.h"
#include "common/rw_mutex.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "consensus/consensus_metrics.h"
#include "consensus/log.h"
#include "consensus/raft_group.h"
#include "rpc/sockaddr.h"

namespace nyala {
class MetricRegistry;
class TaskThread;
}  // namespace nyala

namespace nyala::rpc {
class Messenger;
class RpcContext;
}

namespace nyala::consensus {

class MultiUpdateRequestPB;
struct RuntimeWorker;
class MultiUpdateResponsePB;
struct ServiceTarget;

struct RuntimeOptions {
  PeerId server_id = kNoPeer;
  // The server's messenger: the runtime registers ConsensusService on it and sends
  // through it. Shut it down only after the runtime.
  std::shared_ptr<rpc::Messenger> messenger;
  LogOptions log;
  int num_threads = -1;  // -1: --consensus_num_threads
  // Raft timing; -1: from --raft_heartbeat_interval_ms and --raft_election_timeout_ms
  // (the lease is 80% of the minimum election timeout).
  int64_t heartbeat_interval_us = -1;
  int64_t election_timeout_min_us = -1;
  int64_t lease_us = -1;
  // Quiesce idle groups (raft.h); tests and benchmarks compare with it off.
  bool quiesce_when_idle = true;
  // Where the runtime and its log record their latency histograms
  // (consensus_metrics.h); none when null. Must outlive the runtime.
  MetricRegistry* metrics = nullptr;
};

struct RuntimeStats {
  uint64_t calls_sent = 0;       // MultiUpdate calls, server heartbeats included
  uint64_t messages_sent = 0;    // Raft messages in them
  uint64_t server_heartbeats = 0;
  uint64_t messages_received = 0;
  uint64_t messages_dropped = 0;  // unknown group, full outbox, or failed call
  uint64_t messages_refused = 0;  // invalid for their group (Raft::Step refused them)
  uint64_t entries_read_back = 0;  // read back from the log for followers behind memory
  uint64_t group_ticks = 0;       // Raft::Tick calls, over every group
  uint64_t wakeups = 0;           // quiesced followers woken for a silent leader server
  uint64_t flush_requests = 0;    // StateMachine::FlushRequested calls
  uint64_t inline_runs = 0;       // worker parts run by a reactor (--consensus_run_on_reactor)
};

class ConsensusRuntime {
 public:
  // Opens the shared log in options.log.dir (recovering it: `report`, if given, says
  // what was found), registers the service and starts the workers.
  static Result<std::unique_ptr<ConsensusRuntime>> Start(RuntimeOptions options,
                                                         RecoveryReport* report = nullptr);
  // Shutdown() first, if not done.
  ~ConsensusRuntime();
  ConsensusRuntime(const ConsensusRuntime&) = delete;
  ConsensusRuntime& operator=(const ConsensusRuntime&) = delete;

  // Where server `id` listens (a new address replaces the old one); `name` (its uuid)
  // is what log lines call it.
  void AddPeer(PeerId id, const rpc::Sockaddr& addr, std::string name = {}) EXCLUDES(peers_mu_);
  // "server <name>" as AddPeer named it, else "server <id>" (this server: its own).
  std::string PeerName(PeerId id) const EXCLUDES(peers_mu_);

  // Creates the group, or opens it again from what the log holds of it (its hard
  // state and entries): AlreadyPresent if it runs already; the log's Corruption if
  // the log found the group damaged; InvalidArgument for bad options.
  Result<std::shared_ptr<RaftGroup>> CreateGroup(const GroupOptions& options)
      EXCLUDES(groups_mu_);
  std::shared_ptr<RaftGroup> GetGroup(uint64_t id) const EXCLUDES(groups_mu_);
  // Stops the group (its pending calls fail with Aborted, its state machine is not
  // called again once this returns) and removes its records from the log. NotFound if
  // no such group runs. Not from a worker thread (it waits for the group's worker).
  Status RemoveGroup(uint64_t id) EXCLUDES(groups_mu_);
  // RemoveGroup with `forget` false: the group stops, but its records stay in the log
  // (its term, vote and entries: a replica being replaced by a copy, or a tombstone),
  // for CreateGroup to start it again from.
  Status StopGroup(uint64_t id, bool forget) EXCLUDES(groups_mu_);
  std::vector<uint64_t> GroupIds() const EXCLUDES(groups_mu_);

  // Stops the workers, fails what groups still have pending (ServiceUnavailable), and
  // waits for the calls in flight. Inbound calls are refused from here on.
  // Idempotent.
  void Shutdown() EXCLUDES(peers_mu_);

  PeerId server_id() const { return opts_.server_id; }
  SharedLog* log() const { return log_.get(); }
  RuntimeStats Stats() const;

 private:
  friend struct RuntimeWorker;  // runtime.cc: a worker, the GroupWorker of its groups
  friend class ConsensusServiceImpl;
  struct Peer;

  explicit ConsensusRuntime(RuntimeOptions opts);
  RaftOptions GroupRaftOptions(const GroupOptions& g) const;
  Result<RaftPersistentState> LoadState(const GroupOptions& g);
  // LoadState's first step: when the state machine's applied entry (g.applied,
  // g.applied_term) is not one the group's log goes on from (`gs`), the state machine
  // was installed from a copy: the log is made to start after it (durably). True if
  // it was; IllegalState if the log was compacted past the copy.
  Result<bool> ResetLogToCopy(const GroupOptions& g, GroupState* gs);

  // A group's core refused a message from a peer (RaftGroup::Step).
  void CountRefused() { counters_.messages_refused.fetch_add(1, std::memory_order_relaxed); }
  // Worker thread: queues `msgs` of `group` for their destinations and sends.
  void Send(uint64_t group, std::vector<MessagePB>* msgs) EXCLUDES(peers_mu_);
  std::shared_ptr<Peer> FindPeer(PeerId id) const EXCLUDES(peers_mu_);
  // Sends the peer's queued messages if fewer calls than the limit are out; with
  // `heartbeat`, an empty call if nothing is queued or out.
  void MaybeSend(const std::shared_ptr<Peer>& p, bool heartbeat = false);
  struct Call;
  void OnCallDone(const std::shared_ptr<Peer>& p, std::unique_ptr<Call> call);
  // Worker 0: empty calls to peers that were sent nothing lately.
  void SendServerHeartbeats(int64_t now_us) EXCLUDES(peers_mu_);
  // Worker 0: asks the state machines of groups that pin too many old log segments to
  // flush (--log_max_old_segments).
  void AskPinningGroupsToFlush();
  // When server `id` was last heard from (a call from it, or an answer), or INT64_MIN.
  int64_t LastHeardUs(PeerId id) const;

  // Reactor thread: the MultiUpdate handler. It takes the messages out of `req`
  // (their entries' bytes are moved, not copied). With `ctx` (the call, not yet
  // answered) it may run a sleeping worker's part on this reactor after the read
  // (--consensus_run_on_reactor).
  void HandleMultiUpdate(MultiUpdateRequestPB* req, MultiUpdateResponsePB* resp,
                         rpc::RpcContext* ctx) EXCLUDES(groups_mu_);
  // Takes worker `w`'s part for the calling thread if its thread sleeps with nothing
  // queued: true if taken (then RunBorrowed or ReleaseBorrow must follow).
  bool TryBorrow(RuntimeWorker* w);
  // Runs `task` and what it leads to as `w`'s worker would, then ReleaseBorrow.
  void RunBorrowed(RuntimeWorker* w, const std::function<void()>& task);
  // Gives `w`'s part back to its thread, waking it if it has work, waits for it, or
  // should wake before its deadline now that the next is `wake_us`.
  void ReleaseBorrow(RuntimeWorker* w, int64_t wake_us);
  // The worker's part (its thread or a borrower): handles the Ready of every touched group.
  void ProcessDirty(RuntimeWorker* w);
  // The worker's part: when its timers are next due.
  int64_t NextWakeUs(const RuntimeWorker* w) const;

  // Queues `task` on worker `w`: false (and dropped) once the worker stopped.
  bool Post(RuntimeWorker* w, std::function<void()> task) { return Post(w, &task); }
  // The same, but `*task` is moved from only when queued: the caller keeps a refused
  // one (and the callback it holds).
  bool Post(RuntimeWorker* w, std::function<void()>* task);
  // Worker thread: `g` has work (its Ready is handled before the worker sleeps).
  void Touch(RuntimeWorker* w, RaftGroup* g);
  void RunWorker(RuntimeWorker* w);
  // Worker thread: ticks, liveness checks and server heartbeats that are due.
  void RunTimers(RuntimeWorker* w, int64_t now_us);

  const RuntimeOptions opts_;
  // From opts_.metrics (null without): set by Start, then read only.
  std::unique_ptr<ConsensusMetrics> metrics_;
  int64_t tick_interval_us_ = 0;
  int64_t server_heartbeat_interval_us_ = 0;
  // Reset by Shutdown under log_mu_ (RemoveGroup may run on another thread then);
  // the groups and workers use it without the lock, and are stopped by then.
  Mutex log_mu_;
  std::unique_ptr<SharedLog> log_;
  // Reads the log back for followers behind a group's in-memory log (off the workers);
  // stopped by Shutdown before the log goes.
  std::unique_ptr<TaskThread> reader_;
  std::shared_ptr<ServiceTarget> service_target_;
  std::vector<std::unique_ptr<RuntimeWorker>> workers_;
  std::atomic<bool> stopping_{false};

  mutable RwMutex groups_mu_;
  std::unordered_map<uint64_t, std::shared_ptr<RaftGroup>> groups_ GUARDED_BY(groups_mu_);

  mutable RwMutex peers_mu_;
  std::unordered_map<PeerId, std::shared_ptr<Peer>> peers_ GUARDED_BY(peers_mu_);
  Mutex calls_mu_;
  CondVar calls_cv_;
  int calls_in_flight_ GUARDED_BY(calls_mu_) = 0;
  bool calls_closed_ GUARDED_BY(calls_mu_) = false;  // Shutdown: no more calls
  // Lock order: calls_mu_, then a Peer's mu.

  struct Counters {
    std::atomic<uint64_t> calls_sent{0}, messages_sent{0}, server_heartbeats{0},
        messages_received{0}, messages_dropped{0}, messages_refused{0}, entries_read_back{0},
        group_ticks{0}, wakeups{0}, flush_requests{0}, inline_runs{0};
  };
  mutable Counters counters_;
};

}  // namespace nyala::consensus
