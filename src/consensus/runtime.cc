#include "consensus/runtime.h"
#include "common/result.h"

#include <gflags/gflags.h>
#include <glog/logging.h>
#include <pthread.h>

#include <algorithm>
#include <charconv>
#include <future>
#include <optional>
#include <thread>
#include <unordered_set>
#include <utility>

#include "common/flag_tags.h"
#include "common/histogram.h"
#include "common/task_thread.h"
#include "consensus/consensus.proxy.h"
#include "consensus/consensus.service.h"
#include "consensus/peer_id.h"
#include "nyala/monotime.h"
#include "rpc/messenger.h"
#include "rpc/rpc_context.h"
#include "rpc/rpc_controller.h"

DEFINE_int32(consensus_num_threads, 2,
             "Worker threads that drive every Raft consensus group of the server (a fixed "
             "pool: groups are spread over them by id, none has a thread of its own)");
DEFINE_int32(raft_heartbeat_interval_ms, 100,
             "How often a Raft leader that is not idle heartbeats its followers. Idle groups "
             "send none (they quiesce); servers then heartbeat each other every quarter of "
             "--raft_election_timeout_ms, in one call per pair of servers");
DEFINE_int32(raft_election_timeout_ms, 1000,
             "Minimum Raft election timeout: a follower that hears from no leader for a random "
             "time between this and twice this campaigns. The leader lease is 80% of it");
DEFINE_int32(consensus_max_calls_in_flight, 2,
             "Unanswered MultiUpdate calls allowed per destination server; Raft messages "
             "produced meanwhile travel together in the next call");
DEFINE_bool(consensus_run_on_reactor, true,
            "When Raft messages arrive for groups whose worker thread sleeps, the reactor "
            "thread that read them does the worker's part itself, as an inline task (the "
            "reactor's standby takes the event loop over if it runs long, as for "
            "--rpc_inline_calls): it steps the groups, writes and fdatasyncs the consensus "
            "log itself when a group appends at most one entry with nothing else waiting "
            "for the disk and the log's writer thread is idle, sends the answers, and "
            "applies what committed. That spares a follower two thread wakeups per append "
            "(the worker's and the log writer's) and a leader one per acknowledgement. "
            "false: the messages always go to the worker");
TAG_FLAG(consensus_run_on_reactor, runtime);
DEFINE_int32(log_max_old_segments, 8,
             "Old consensus log segments kept for groups whose applied state is not durable "
             "yet; past this many, the groups that keep them are asked to flush");
DEFINE_int32(consensus_max_queued_messages, 100000,
             "Raft messages queued for one destination server beyond which new ones are "
             "dropped (Raft resends; the count is in the runtime's messages_dropped)");
DEFINE_bool(fault_injection_no_catch_up_from_log, false,
            "Fault injection, for tests only: a follower behind a leader's in-memory log is "
            "never sent entries read back from the log on disk, so it needs a copy of the "
            "tablet (tests of tablet copy use it to make copies happen every time).");
TAG_FLAG(fault_injection_no_catch_up_from_log, unsafe);
TAG_FLAG(fault_injection_no_catch_up_from_log, hidden);

DEFINE_string(fault_injection_consensus_drop_peers, "",
              "Fault injection, for tests only: comma-separated uuids of tablet servers this "
              "server's Raft traffic with is cut, as by a network partition: messages to them "
              "are dropped and MultiUpdate calls from them refused. Other RPCs (clients, "
              "master) are not affected. Changeable while the server runs "
              "(GenericService.SetFlag). Empty: off");
namespace nyala::consensus {
namespace {
// The flag's validator, which also publishes each new value (below).
bool PublishDroppedPeers(const char* flag, const std::string& value);
}  // namespace
}  // namespace nyala::consensus
DEFINE_validator(fault_injection_consensus_drop_peers, &nyala::consensus::PublishDroppedPeers);
TAG_FLAG(fault_injection_consensus_drop_peers, runtime);
TAG_FLAG(fault_injection_consensus_drop_peers, unsafe);
TAG_FLAG(fault_injection_consensus_drop_peers, hidden);

namespace nyala::consensus {

using rpc::RpcContext;
using rpc::RpcController;

namespace {

// --fault_injection_consensus_drop_peers, parsed. Written only by the flag's
// validator (gflags runs validators under its registry lock, so one at a time, before
// it stores the value); read on every Raft message sent and call received, where the
// usual empty list costs one atomic load. A reader racing with a change may see part
// of the old list and part of the new: harmless for fault injection.
constexpr int kMaxDroppedPeers = 16;
std::atomic<int> g_num_dropped_peers{0};
std::atomic<PeerId> g_dropped_peers[kMaxDroppedPeers];

bool IsDroppedPeer(PeerId id) {
  const int n = g_num_dropped_peers.load(std::memory_order_acquire);
  for (int i = 0; i < n; i++) {
    if (g_dropped_peers[i].load(std::memory_order_relaxed) == id) return true;
  }
  return false;
}

bool PublishDroppedPeers(const char* flag, const std::string& value) {
  std::vector<PeerId> ids;
  for (size_t b = 0; b <= value.size();) {
    size_t e = value.find(',', b);
    if (e == std::string::npos) e = value.size();
    std::string uuid = value.substr(b, e - b);
    uuid.erase(0, uuid.find_first_not_of(" \t"));
    uuid.erase(uuid.find_last_not_of(" \t") + 1);
    if (!uuid.empty()) ids.push_back(PeerIdFromUuid(uuid));
    b = e + 1;
  }
  if (ids.size() > size_t(kMaxDroppedPeers)) {
    LOG(ERROR) << "--" << flag << ": at most " << kMaxDroppedPeers << " servers";
    return false;
  }
  const int before = g_num_dropped_peers.exchange(0, std::memory_order_acq_rel);
  for (size_t i = 0; i < ids.size(); i++) {
    g_dropped_peers[i].store(ids[i], std::memory_order_relaxed);
  }
  g_num_dropped_peers.store(int(ids.size()), std::memory_order_release);
  if (!ids.empty()) {
    LOG(WARNING) << "fault injection: Raft traffic with servers [" << value << "] is dropped";
  } else if (before > 0) {
    LOG(WARNING) << "fault injection: Raft traffic with every server restored";
  }
  return true;
}

// Takes message `m` out of a received request into a message its group shares with
// its in-memory log (Raft::Step). An append's entries are not copied: the new message
// lives in an arena of its own, sized to hold it in one block, and each entry's bytes
// are moved over from the request. So a follower allocates nothing per entry beyond
// the parse, and releases an append's memory together when its log lets go of the
// last of its entries (they belong to one group and are compacted together).
std::shared_ptr<const MessagePB> TakeMessage(MessagePB* m) {
  if (m->entries_size() == 0) return std::make_shared<const MessagePB>(*m);
  google::protobuf::ArenaOptions opts;
  // An entry costs about this much of an arena besides its bytes (the message, the
  // string object, the pointer to it and its destructor's record).
  constexpr size_t kArenaBytesPerEntry = 160;
  opts.start_block_size = 512 + size_t(m->entries_size()) * kArenaBytesPerEntry;
  opts.max_block_size = std::max(opts.start_block_size, opts.max_block_size);
  auto arena = std::make_shared<google::protobuf::Arena>(opts);
  MessagePB* out = google::protobuf::Arena::CreateMessage<MessagePB>(arena.get());
  out->mutable_entries()->Reserve(m->entries_size());
  for (EntryPB& from : *m->mutable_entries()) {
    EntryPB* e = out->add_entries();
    e->set_term(from.term());
    e->set_index(from.index());
    e->set_type(from.type());
    e->mutable_data()->swap(*from.mutable_data());
  }
  m->clear_entries();
  out->MergeFrom(*m);  // the rest of the message (its entries are out already)
  return std::shared_ptr<const MessagePB>(std::move(arena), out);
}

}  // namespace

// One worker thread and the groups it drives.
// One worker of the runtime; the GroupWorker its groups see.
struct RuntimeWorker : public GroupWorker {
  explicit RuntimeWorker(ConsensusRuntime* rt) : rt(rt) {}

  bool Post(std::function<void()>* task) override { return rt->Post(this, task); }
  bool IsCurrentThread() const override {
    return owner.load(std::memory_order_relaxed) == std::this_thread::get_id();
  }
  void Touch(RaftGroup* g) override { rt->Touch(this, g); }
  bool LogWritesHere() const override { return log_writes_here; }
  void Send(uint64_t group, std::vector<MessagePB>* msgs) override { rt->Send(group, msgs); }
  std::string PeerName(PeerId id) const override { return rt->PeerName(id); }
  void CountRefused() override { rt->CountRefused(); }
  bool PostToReader(std::function<void()> task) override {
    return rt->reader_->Post(std::move(task));
  }
  int64_t LastHeardUs(PeerId id) const override { return rt->LastHeardUs(id); }
  const ConsensusMetrics* metrics() const override { return rt->metrics_.get(); }
  void CountReadBack(uint64_t n) override {
    rt->counters_.entries_read_back.fetch_add(n, std::memory_order_relaxed);
  }

  ConsensusRuntime* const rt;
  int index = 0;
  Mutex mu;
  CondVar cv;
  std::vector<std::function<void()>> tasks GUARDED_BY(mu);
  bool stop GUARDED_BY(mu) = false;
  bool stopped GUARDED_BY(mu) = false;  // takes no more tasks
  // Who runs the worker's part: its thread (running) or, while the thread sleeps, a
  // reactor thread that borrowed it (borrowed, ConsensusRuntime::TryBorrow); never both.
  bool running GUARDED_BY(mu) = false;
  bool borrowed GUARDED_BY(mu) = false;
  // The thread waits for a borrower to finish (it is notified then).
  bool waiting_for_borrower GUARDED_BY(mu) = false;
  // The thread that runs the worker's part now (set while running or borrowed; by
  // Shutdown once the thread is joined), for IsCurrentThread.
  std::atomic<std::thread::id> owner{};
  // When the sleeping thread wakes on its own (for ticks and timers).
  int64_t sleep_until_us GUARDED_BY(mu) = 0;
  std::thread thread;

  // The worker's part: its thread, or a borrower (see above).
  // A borrower on a reactor: log appends are written here when the log's writer is idle.
  bool log_writes_here = false;
  std::vector<std::shared_ptr<RaftGroup>> groups;
  // Removed groups: stopped, kept alive for the log completions and tasks that may
  // still name them.
  std::vector<std::shared_ptr<RaftGroup>> removed;
  std::vector<RaftGroup*> dirty;
  std::unordered_set<RaftGroup*> awake;
  int64_t next_tick_us = 0;
  int64_t next_liveness_us = 0;
  int64_t next_server_heartbeat_us = 0;
  int64_t next_pin_check_us = 0;
};

// How often worker 0 asks the log which groups pin old segments.
constexpr int64_t kPinCheckIntervalUs = 1'000'000;

// What the service object reaches the runtime through: cleared by Shutdown, since the
// messenger keeps the service registered as long as it lives.
struct ServiceTarget {
  RwMutex mu;
  ConsensusRuntime* runtime GUARDED_BY(mu) = nullptr;
};

struct ConsensusRuntime::Peer {
  explicit Peer(PeerId id) : id(id) {}
  const PeerId id;
  Mutex mu;
  std::string name GUARDED_BY(mu);  // AddPeer's
  std::unique_ptr<ConsensusServiceProxy> proxy GUARDED_BY(mu);
  MultiUpdateRequestPB queued GUARDED_BY(mu);
  int in_flight GUARDED_BY(mu) = 0;
  int64_t last_send_us GUARDED_BY(mu) = INT64_MIN / 2;
  bool reachable GUARDED_BY(mu) = true;  // for logging the changes only
  std::atomic<int64_t> last_heard_us{INT64_MIN / 2};
};

struct ConsensusRuntime::Call {
  MultiUpdateRequestPB req;
  MultiUpdateResponsePB resp;
  RpcController rpc;
};

class ConsensusServiceImpl : public ConsensusServiceIf {
 public:
  explicit ConsensusServiceImpl(std::shared_ptr<ServiceTarget> target)
      : target_(std::move(target)) {}

  void MultiUpdate(const MultiUpdateRequestPB* req, MultiUpdateResponsePB* resp,
                   RpcContext* ctx) override {
    SharedLock l(target_->mu);
    ConsensusRuntime* rt = target_->runtime;
    if (rt == nullptr) {
      return ctx->RespondFailure(Status::ServiceUnavailable("the consensus runtime is stopped"));
    }
    if (IsDroppedPeer(req->from_server())) {
      rt->counters_.messages_dropped.fetch_add(req->messages_size(), std::memory_order_relaxed);
      return ctx->RespondFailure(Status::ServiceUnavailable(
          "fault injection: --fault_injection_consensus_drop_peers",
          "this server is cut off from consensus server " + std::to_string(req->from_server())));
    }
    if (req->to_server() != rt->server_id()) {
      LOG_EVERY_N(WARNING, 100) << "MultiUpdate for server " << req->to_server() << " from "
                                << ctx->remote_address().ToString() << " reached server "
                                << rt->server_id();
      return ctx->RespondFailure(Status::InvalidArgument(
          "this is consensus server " + std::to_string(rt->server_id()),
          "not " + std::to_string(req->to_server()) + ": the sender's address book is stale"));
    }
    // The handler takes the entries' bytes out of the request instead of copying them:
    // the framework reads nothing of a request once its handler runs.
    auto* request = static_cast<MultiUpdateRequestPB*>(ctx->mutable_request());
    DCHECK_EQ(request, req);
    rt->HandleMultiUpdate(request, resp, ctx);
    ctx->RespondSuccess();
  }

 private:
  const std::shared_ptr<ServiceTarget> target_;
};

ConsensusRuntime::ConsensusRuntime(RuntimeOptions opts) : opts_(std::move(opts)) {}

Result<std::unique_ptr<ConsensusRuntime>> ConsensusRuntime::Start(RuntimeOptions options,
                                                                  RecoveryReport* report) {
  if (options.server_id == kNoPeer) return Status::InvalidArgument("server_id must not be 0");
  if (!options.messenger) return Status::InvalidArgument("no messenger");
  if (options.num_threads < 0) options.num_threads = FLAGS_consensus_num_threads;
  if (options.num_threads < 1) {
    return Status::InvalidArgument("--consensus_num_threads must be at least 1");
  }
  if (options.heartbeat_interval_us < 0) {
    options.heartbeat_interval_us = int64_t{FLAGS_raft_heartbeat_interval_ms} * 1000;
  }
  if (options.election_timeout_min_us < 0) {
    options.election_timeout_min_us = int64_t{FLAGS_raft_election_timeout_ms} * 1000;
  }
  if (options.lease_us < 0) options.lease_us = options.election_timeout_min_us * 8 / 10;
  RaftOptions check;
  check.id = options.server_id;
  check.voters = {options.server_id};
  check.heartbeat_interval_us = options.heartbeat_interval_us;
  check.election_timeout_min_us = options.election_timeout_min_us;
  check.lease_us = options.lease_us;
  RETURN_NOT_OK_PREPEND(check.Validate(), "consensus timing (--raft_*)");

  std::unique_ptr<ConsensusRuntime> rt(new ConsensusRuntime(std::move(options)));
  rt->tick_interval_us_ = std::max<int64_t>(rt->opts_.heartbeat_interval_us / 4, 1000);
  rt->server_heartbeat_interval_us_ = rt->opts_.election_timeout_min_us / 4;
  LogOptions log_options = rt->opts_.log;
  if (rt->opts_.metrics != nullptr) {
    rt->metrics_ = std::make_unique<ConsensusMetrics>(rt->opts_.metrics);
    log_options.sync_latency = rt->metrics_->log_sync;
    log_options.append_latency = rt->metrics_->log_append;
  }
  ASSIGN_OR_RETURN(rt->log_, SharedLog::Open(log_options, report));
  rt->reader_ = std::make_unique<TaskThread>("raft-log-reader");
  rt->service_target_ = std::make_shared<ServiceTarget>();
  {
    ExclusiveLock l(rt->service_target_->mu);
    rt->service_target_->runtime = rt.get();
  }
  // MultiUpdate runs on the reactor: the pool's one thread only answers calls of
  // unknown methods.
  RETURN_NOT_OK(rt->opts_.messenger->RegisterService(
      std::make_unique<ConsensusServiceImpl>(rt->service_target_), 1, 100));
  const int64_t now = GetMonoTimeMicros();
  for (int i = 0; i < rt->opts_.num_threads; i++) {
    auto w = std::make_unique<RuntimeWorker>(rt.get());
    w->index = i;
    w->next_tick_us = now;
    w->next_liveness_us = now + rt->server_heartbeat_interval_us_;
    w->next_server_heartbeat_us = now;
    rt->workers_.push_back(std::move(w));
  }
  for (auto& w : rt->workers_) {
    RuntimeWorker* wp = w.get();
    ConsensusRuntime* self = rt.get();
    w->thread = std::thread([self, wp] { self->RunWorker(wp); });
  }
  return rt;
}

ConsensusRuntime::~ConsensusRuntime() { Shutdown(); }

void ConsensusRuntime::Shutdown() {
  if (stopping_.exchange(true)) return;
  if (service_target_) {
    ExclusiveLock l(service_target_->mu);
    service_target_->runtime = nullptr;
  }
  for (auto& w : workers_) {
    {
      MutexLock l(w->mu);
      w->stop = true;
    }
    w->cv.notify_all();
  }
  for (auto& w : workers_) {
    if (w->thread.joinable()) w->thread.join();
    // A borrower finished before the thread, which waits for it.
    w->owner.store(std::this_thread::get_id(), std::memory_order_relaxed);
  }
  // The workers are gone: this thread is the only one touching the groups now.
  std::vector<std::shared_ptr<RaftGroup>> groups;
  {
    SharedLock l(groups_mu_);
    for (auto& [id, g] : groups_) groups.push_back(g);
  }
  for (auto& g : groups) {
    g->FailPending(Status::ServiceUnavailable("the consensus runtime is shutting down",
                                              "the outcome is unknown"));
  }
  {
    UniqueLock l(calls_mu_);
    calls_closed_ = true;
    calls_cv_.wait(l, [this]() NO_THREAD_SAFETY_ANALYSIS { return calls_in_flight_ == 0; });
  }
  // Reads of the log for lagging followers finish (their results find the workers
  // stopped) before the log goes.
  if (reader_) reader_->Shutdown();
  // Finishes the batch being written; appends still queued fail, and their callbacks
  // find the workers stopped.
  MutexLock l(log_mu_);
  log_.reset();
}

void ConsensusRuntime::AddPeer(PeerId id, const rpc::Sockaddr& addr, std::string name) {
  std::shared_ptr<Peer> p;
  {
    ExclusiveLock l(peers_mu_);
    auto& slot = peers_[id];
    if (!slot) slot = std::make_shared<Peer>(id);
    p = slot;
  }
  MutexLock l(p->mu);
  p->proxy = std::make_unique<ConsensusServiceProxy>(opts_.messenger, addr);
  if (!name.empty()) p->name = std::move(name);
}

std::string ConsensusRuntime::PeerName(PeerId id) const {
  if (auto p = FindPeer(id)) {
    MutexLock l(p->mu);
    if (!p->name.empty()) return "server " + p->name;
  }
  return "server " + std::to_string(id);
}

std::shared_ptr<ConsensusRuntime::Peer> ConsensusRuntime::FindPeer(PeerId id) const {
  SharedLock l(peers_mu_);
  auto it = peers_.find(id);
  return it == peers_.end() ? nullptr : it->second;
}

int64_t ConsensusRuntime::LastHeardUs(PeerId id) const {
  auto p = FindPeer(id);
  return p ? p->last_heard_us.load(std::memory_order_relaxed) : INT64_MIN / 2;
}

RaftOptions ConsensusRuntime::GroupRaftOptions(const GroupOptions& g) const {
  RaftOptions o;
  o.id = opts_.server_id;
  o.voters = g.voters;
  o.learners = g.learners;
  o.election_timeout_min_us = opts_.election_timeout_min_us;
  o.heartbeat_interval_us = opts_.heartbeat_interval_us;
  o.lease_us = opts_.lease_us;
  o.quiesce_when_idle = opts_.quiesce_when_idle;
  // Followers learn the commit index with the next append or heartbeat: a round trip
  // less per commit (consensus-bench at 1 in flight: p50 about 100 us lower).
  o.notify_commit_at_once = false;
  // Entries compacted from memory are read back from the shared log (RaftGroup).
  o.fetch_from_storage = !FLAGS_fault_injection_no_catch_up_from_log;
  // Distinct election timeouts per group and server (they need not be reproducible).
  o.random_seed = (g.group_id * 0x9e3779b97f4a7c15ULL) ^ (opts_.server_id << 32) ^
                  uint64_t(GetMonoTimeMicros());
  return o;
}

Result<bool> ConsensusRuntime::ResetLogToCopy(const GroupOptions& g, GroupState* gs) {
  const uint64_t snap = gs->snapshot ? gs->snapshot->index : 0;
  bool follows = false;  // the log goes on from the state machine's applied entry
  if (gs->exists && g.applied <= gs->last_index && g.applied >= snap) {
    Result<uint64_t> term = log_->TermAt(g.group_id, g.applied);
    follows = term.ok() && *term == g.applied_term;
  }
  if (follows) return false;
  const std::string name =
      g.name.empty() ? "consensus group " + std::to_string(g.group_id) : g.name;
  if (g.applied < snap || g.applied < gs->durable_index) {
    return Status::IllegalState(name + ": its state machine (a copy at index " +
                                    std::to_string(g.applied) +
                                    ") is older than its log, which starts after " +
                                    std::to_string(std::max(snap, gs->durable_index)),
                                "copy the tablet again");
  }
  // A copy installed in the state machine: the log starts after it, and keeps no
  // entry of another history (the hard state, term and vote, stays).
  std::vector<LogRecord> records;
  if (gs->exists && g.applied < gs->last_index) {
    records.push_back(LogRecord::MakeTruncate(g.group_id, g.applied + 1));
  }
  records.push_back(LogRecord::MakeSnapshotMark(g.group_id, g.applied_term, g.applied));
  LOG(INFO) << name << ": its state was installed from a copy at index " << g.applied << " (term "
            << g.applied_term << "); its log (last index " << gs->last_index
            << ") now starts after it";
  RETURN_NOT_OK_PREPEND(log_->Append(std::move(records)), name + ": resetting its log to a copy");
  return true;
}

Result<RaftPersistentState> ConsensusRuntime::LoadState(const GroupOptions& g) {
  RaftPersistentState st;
  st.applied = g.applied;
  st.snapshot_config = g.applied_config;
  GroupState gs = log_->GetGroupState(g.group_id);
  RETURN_NOT_OK(gs.status);
  if (g.applied_term != 0 && g.applied > 0) {
    ASSIGN_OR_RETURN(bool reset, ResetLogToCopy(g, &gs));
    if (reset) gs = log_->GetGroupState(g.group_id);
  }
  if (!gs.exists) return st;
  if (gs.hard_state) {
    st.hard_state.set_term(gs.hard_state->term);
    st.hard_state.set_commit(gs.hard_state->commit_index);
    const std::string& vote = gs.hard_state->voted_for;
    if (!vote.empty()) {
      uint64_t id = 0;
      auto [end, ec] = std::from_chars(vote.data(), vote.data() + vote.size(), id);
      if (ec != std::errc() || end != vote.data() + vote.size() || id == kNoPeer) {
        return Status::Corruption("consensus group " + std::to_string(g.group_id),
                                  "its logged vote is not a server id: " + vote);
      }
      st.hard_state.set_vote(id);
    }
  }
  if (gs.snapshot) {
    st.snapshot_index = gs.snapshot->index;
    st.snapshot_term = gs.snapshot->term;
  }
  if (st.applied < st.snapshot_index) {
    return Status::IllegalState(
        "consensus group " + std::to_string(g.group_id) + ": its state machine applied only up to " +
            std::to_string(st.applied),
        "but the log starts after " + std::to_string(st.snapshot_index));
  }
  for (uint64_t i = gs.first_index; i <= gs.last_index;) {
    std::vector<LogEntry> out;
    RETURN_NOT_OK(log_->ReadEntries(g.group_id, i, 8 << 20, &out));
    if (out.empty()) break;
    for (LogEntry& e : out) {
      EntryPB pb;
      if (!pb.ParseFromString(e.data) || pb.index() != e.index || pb.term() != e.term) {
        return Status::Corruption("consensus group " + std::to_string(g.group_id),
                                  "log entry " + std::to_string(e.index) + " does not parse");
      }
      st.entries.push_back(std::move(pb));
      i = e.index + 1;
    }
  }
  // The commit index is logged lazily (raft_group.cc): what was applied was committed.
  const uint64_t last = st.snapshot_index + st.entries.size();
  st.hard_state.set_commit(std::min(std::max(st.hard_state.commit(), st.applied), last));
  return st;
}

Result<std::shared_ptr<RaftGroup>> ConsensusRuntime::CreateGroup(const GroupOptions& options) {
  if (stopping_) return Status::ServiceUnavailable("the consensus runtime is shutting down");
  const std::string name =
      options.name.empty() ? "consensus group " + std::to_string(options.group_id) : options.name;
  if (options.group_id == 0) return Status::InvalidArgument("group id must not be 0");
  if (GetGroup(options.group_id)) return Status::AlreadyPresent(name, "is running already");
  ASSIGN_OR_RETURN(RaftPersistentState state, LoadState(options));
  RETURN_NOT_OK_PREPEND(state.Validate(), name);
  RaftOptions ro = GroupRaftOptions(options);
  RETURN_NOT_OK_PREPEND(ro.Validate(), name);
  auto raft = std::make_unique<Raft>(std::move(ro), state, GetMonoTimeMicros());
  RuntimeWorker* w = workers_[options.group_id % workers_.size()].get();
  auto group = std::make_shared<RaftGroup>(w, log_.get(), options, std::move(raft));
  {
    ExclusiveLock l(groups_mu_);
    if (!groups_.emplace(options.group_id, group).second) {
      return Status::AlreadyPresent(name, "is running already");
    }
  }
  Post(w, [this, w, group] {
    w->groups.push_back(group);
    Touch(w, group.get());
  });
  return group;
}

std::shared_ptr<RaftGroup> ConsensusRuntime::GetGroup(uint64_t id) const {
  SharedLock l(groups_mu_);
  auto it = groups_.find(id);
  return it == groups_.end() ? nullptr : it->second;
}

Status ConsensusRuntime::RemoveGroup(uint64_t id) { return StopGroup(id, /*forget=*/true); }

Status ConsensusRuntime::StopGroup(uint64_t id, bool forget) {
  std::shared_ptr<RaftGroup> g;
  {
    ExclusiveLock l(groups_mu_);
    auto it = groups_.find(id);
    if (it == groups_.end()) {
      return Status::NotFound("consensus group " + std::to_string(id) + " is not running");
    }
    g = it->second;
    groups_.erase(it);
  }
  auto* w = static_cast<RuntimeWorker*>(g->worker());
  std::promise<void> stopped;
  auto task = [w, g, &stopped] {
    g->Stop();
    auto it = std::find(w->groups.begin(), w->groups.end(), g);
    if (it != w->groups.end()) w->groups.erase(it);
    w->awake.erase(g.get());
    w->removed.push_back(g);
    stopped.set_value();
  };
  // A stopped worker calls nothing any more.
  if (Post(w, std::move(task))) stopped.get_future().wait();
  if (!forget) return Status::OK();
  MutexLock l(log_mu_);
  if (!log_) return Status::ServiceUnavailable("the consensus runtime is shutting down");
  return log_->RemoveGroup(id);
}

std::vector<uint64_t> ConsensusRuntime::GroupIds() const {
  std::vector<uint64_t> ids;
  {
    SharedLock l(groups_mu_);
    for (auto& [id, g] : groups_) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

RuntimeStats ConsensusRuntime::Stats() const {
  RuntimeStats s;
  s.calls_sent = counters_.calls_sent;
  s.messages_sent = counters_.messages_sent;
  s.server_heartbeats = counters_.server_heartbeats;
  s.messages_received = counters_.messages_received;
  s.messages_dropped = counters_.messages_dropped;
  s.messages_refused = counters_.messages_refused;
  s.entries_read_back = counters_.entries_read_back;
  s.group_ticks = counters_.group_ticks;
  s.wakeups = counters_.wakeups;
  s.flush_requests = counters_.flush_requests;
  s.inline_runs = counters_.inline_runs;
  return s;
}

// --- Workers -------------------------------------------------------------------

bool ConsensusRuntime::Post(RuntimeWorker* w, std::function<void()>* task) {
  bool wake;
  {
    MutexLock l(w->mu);
    if (w->stopped) return false;
    // Whoever runs the worker's part now takes the task before it stops (a borrower
    // wakes the thread if it leaves tasks behind).
    wake = w->tasks.empty() && !w->running && !w->borrowed;
    w->tasks.push_back(std::move(*task));
  }
  if (wake) w->cv.notify_one();
  return true;
}

void ConsensusRuntime::Touch(RuntimeWorker* w, RaftGroup* g) {
  if (g->MarkDirty()) w->dirty.push_back(g);
}

int64_t ConsensusRuntime::NextWakeUs(const RuntimeWorker* w) const {
  int64_t deadline = w->next_liveness_us;
  if (!w->awake.empty()) deadline = std::min(deadline, w->next_tick_us);
  if (w->index == 0) deadline = std::min(deadline, w->next_server_heartbeat_us);
  return deadline;
}

void ConsensusRuntime::ProcessDirty(RuntimeWorker* w) {
  // Handling a Ready may touch other groups of this worker (a callback proposing).
  for (size_t i = 0; i < w->dirty.size(); i++) {
    RaftGroup* g = w->dirty[i];
    g->Process();
    if (g->running() && !g->quiesced()) {
      w->awake.insert(g);
    } else {
      w->awake.erase(g);
    }
  }
  w->dirty.clear();
}

void ConsensusRuntime::RunWorker(RuntimeWorker* w) {
  const std::string name = "raft-worker-" + std::to_string(w->index);
  pthread_setname_np(pthread_self(), name.c_str());
  std::vector<std::function<void()>> batch;
  for (bool last = false; !last;) {
    {
      UniqueLock l(w->mu);
      for (;;) {
        if (w->borrowed) {
          // A reactor runs the worker's part; it wakes this thread when done.
          w->waiting_for_borrower = true;
          w->cv.wait(l);
          continue;
        }
        w->waiting_for_borrower = false;
        if (!w->tasks.empty()) break;
        if (w->stop) break;
        const int64_t deadline = NextWakeUs(w);
        const int64_t wait_us = deadline - GetMonoTimeMicros();
        if (wait_us <= 0) break;
        w->sleep_until_us = deadline;
        w->cv.wait_for(l, std::chrono::microseconds(wait_us));
      }
      if (w->stop) {
        // Runs what was queued before the stop, then takes nothing more.
        w->stopped = true;
        last = true;
      }
      w->running = true;
      w->owner.store(std::this_thread::get_id(), std::memory_order_relaxed);
      batch.swap(w->tasks);
    }
    for (auto& task : batch) task();
    batch.clear();
    const int64_t now = GetMonoTimeMicros();
    if (!last) RunTimers(w, now);
    ProcessDirty(w);
    MutexLock l(w->mu);
    w->owner.store(std::thread::id(), std::memory_order_relaxed);
    w->running = false;
  }
}

bool ConsensusRuntime::TryBorrow(RuntimeWorker* w) {
  MutexLock l(w->mu);
  if (w->stop || w->running || w->borrowed || !w->tasks.empty()) return false;
  w->borrowed = true;
  w->owner.store(std::this_thread::get_id(), std::memory_order_relaxed);
  return true;
}

void ConsensusRuntime::RunBorrowed(RuntimeWorker* w, const std::function<void()>& task) {
  w->log_writes_here = true;
  task();
  ProcessDirty(w);
  // What was posted meanwhile (the log's completions of appends written here, above
  // all), a few rounds at most: then the worker's thread takes over.
  std::vector<std::function<void()>> batch;
  for (int round = 0; round < 4; round++) {
    {
      MutexLock l(w->mu);
      if (w->tasks.empty()) break;
      batch.swap(w->tasks);
    }
    for (auto& t : batch) t();
    batch.clear();
    ProcessDirty(w);
  }
  w->log_writes_here = false;
  ReleaseBorrow(w, NextWakeUs(w));
}

void ConsensusRuntime::ReleaseBorrow(RuntimeWorker* w, int64_t wake_us) {
  bool notify;
  {
    MutexLock l(w->mu);
    w->owner.store(std::thread::id(), std::memory_order_relaxed);
    w->borrowed = false;
    // The thread sleeps until its old deadline unless told: tell it when there is work,
    // when it waits for the borrower, or when a group woke and must tick sooner.
    notify = !w->tasks.empty() || w->stop || w->waiting_for_borrower ||
             wake_us < w->sleep_until_us;
  }
  if (notify) w->cv.notify_one();
}

void ConsensusRuntime::RunTimers(RuntimeWorker* w, int64_t now) {
  if (now >= w->next_tick_us) {
    for (RaftGroup* g : w->awake) {
      g->Tick(now);
      Touch(w, g);
    }
    counters_.group_ticks.fetch_add(w->awake.size(), std::memory_order_relaxed);
    w->next_tick_us = now + tick_interval_us_;
  }
  if (now >= w->next_liveness_us) {
    // A quiesced follower keeps quiet while its leader's server is heard from, and a
    // quiesced leader while the servers of a majority of its voters are: woken, the
    // leader ticks again and check-quorum makes it step down if they stay silent.
    for (auto& g : w->groups) {
      if (!g->quiesced()) continue;
      if (g->role() == RaftRole::kLeader) {
        size_t heard = 0;
        const ConfigPB& config = g->config();
        for (PeerId v : config.voters()) {
          if (v == opts_.server_id || LastHeardUs(v) > now - opts_.election_timeout_min_us) {
            heard++;
          }
        }
        if (heard >= size_t(config.voters_size()) / 2 + 1) continue;
        VLOG(1) << g->name() << ": heard from the servers of " << heard << " of "
                << config.voters_size() << " voters; waking the leader up";
        g->WakeUp(now);
        Touch(w, g.get());
        counters_.wakeups.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      const PeerId leader = g->leader();
      if (leader != kNoPeer && LastHeardUs(leader) > now - opts_.election_timeout_min_us) continue;
      VLOG(1) << g->name() << ": leader " << PeerName(leader) << " is silent; waking up";
      g->WakeUp(now);
      Touch(w, g.get());
      counters_.wakeups.fetch_add(1, std::memory_order_relaxed);
    }
    w->next_liveness_us = now + server_heartbeat_interval_us_;
  }
  if (w->index == 0 && now >= w->next_server_heartbeat_us) {
    SendServerHeartbeats(now);
    w->next_server_heartbeat_us = now + server_heartbeat_interval_us_;
  }
  if (w->index == 0 && now >= w->next_pin_check_us) {
    AskPinningGroupsToFlush();
    w->next_pin_check_us = now + kPinCheckIntervalUs;
  }
}

void ConsensusRuntime::AskPinningGroupsToFlush() {
  for (uint64_t id : log_->GroupsPinning(size_t(std::max(FLAGS_log_max_old_segments, 0)))) {
    std::shared_ptr<RaftGroup> g = GetGroup(id);
    if (!g) continue;
    counters_.flush_requests.fetch_add(1, std::memory_order_relaxed);
    Post(static_cast<RuntimeWorker*>(g->worker()), [g] { g->RequestFlush(); });
  }
}

// --- Transport -----------------------------------------------------------------

void ConsensusRuntime::Send(uint64_t group, std::vector<MessagePB>* msgs) {
  if (stopping_) return;
  // Messages to one destination are usually adjacent (a leader's to each follower):
  // each run of them is queued under one lock and then sent at once, which keeps
  // latency low; while calls are out, messages gather for the next.
  for (size_t i = 0; i < msgs->size();) {
    const PeerId to = (*msgs)[i].to();
    size_t end = i + 1;
    while (end < msgs->size() && (*msgs)[end].to() == to) end++;
    std::shared_ptr<Peer> p = FindPeer(to);
    if (!p) {
      counters_.messages_dropped.fetch_add(end - i, std::memory_order_relaxed);
      LOG_EVERY_N(WARNING, 1000) << "consensus group " << group << ": no address for "
                                 << PeerName(to) << "; message dropped";
      i = end;
      continue;
    }
    {
      MutexLock l(p->mu);
      for (; i < end; i++) {
        if (p->queued.messages_size() >= FLAGS_consensus_max_queued_messages) {
          counters_.messages_dropped.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        GroupMessagePB* gm = p->queued.add_messages();
        gm->set_group(group);
        gm->mutable_message()->Swap(&(*msgs)[i]);
      }
    }
    MaybeSend(p);
  }
  msgs->clear();
}

void ConsensusRuntime::MaybeSend(const std::shared_ptr<Peer>& p, bool heartbeat) {
  if (stopping_) return;
  std::unique_ptr<Call> call;
  std::optional<ConsensusServiceProxy> proxy;
  {
    // Counted under the lock Shutdown closes, so that no call starts (from the log's
    // writer thread, say) once Shutdown has waited for the calls in flight.
    MutexLock calls(calls_mu_);
    if (calls_closed_) return;
    MutexLock l(p->mu);
    if (!p->proxy) return;
    if (IsDroppedPeer(p->id)) {
      // Fault injection: as if the network lost them.
      counters_.messages_dropped.fetch_add(p->queued.messages_size(), std::memory_order_relaxed);
      p->queued.clear_messages();
      return;
    }
    if (heartbeat) {
      if (p->in_flight > 0 || p->queued.messages_size() > 0) return;
    } else if (p->in_flight >= FLAGS_consensus_max_calls_in_flight ||
               p->queued.messages_size() == 0) {
      return;
    }
    call = std::make_unique<Call>();
    call->req.Swap(&p->queued);
    p->in_flight++;
    p->last_send_us = GetMonoTimeMicros();
    proxy.emplace(*p->proxy);
    calls_in_flight_++;
  }
  call->req.set_from_server(opts_.server_id);
  call->req.set_to_server(p->id);
  counters_.calls_sent.fetch_add(1, std::memory_order_relaxed);
  counters_.messages_sent.fetch_add(call->req.messages_size(), std::memory_order_relaxed);
  if (heartbeat) counters_.server_heartbeats.fetch_add(1, std::memory_order_relaxed);
  call->rpc.set_timeout(MonoDelta::FromMicroseconds(opts_.election_timeout_min_us));
  Call* c = call.release();
  proxy->MultiUpdateAsync(c->req, &c->resp, &c->rpc,
                          [this, p, c] { OnCallDone(p, std::unique_ptr<Call>(c)); });
}

void ConsensusRuntime::OnCallDone(const std::shared_ptr<Peer>& p, std::unique_ptr<Call> call) {
  const Status& s = call->rpc.status();
  if (s.ok()) {
    p->last_heard_us.store(GetMonoTimeMicros(), std::memory_order_relaxed);
    if (call->resp.unknown_groups_size() > 0) {
      VLOG(1) << PeerName(p->id) << " hosts none of " << call->resp.unknown_groups_size()
              << " groups it was sent messages for";
      // A leader of such a group gets its state machine to send the peer a copy.
      for (uint64_t id : call->resp.unknown_groups()) {
        std::shared_ptr<RaftGroup> g = GetGroup(id);
        if (!g) continue;
        auto* w = static_cast<RuntimeWorker*>(g->worker());
        Post(w, [g, peer = p->id] { g->PeerLacksReplica(peer); });
      }
    }
  } else {
    counters_.messages_dropped.fetch_add(call->req.messages_size(), std::memory_order_relaxed);
  }
  bool changed;
  {
    MutexLock l(p->mu);
    p->in_flight--;
    changed = p->reachable != s.ok();
    p->reachable = s.ok();
  }
  if (changed && s.ok()) {
    LOG(INFO) << "consensus peer " << PeerName(p->id) << " is reachable again";
  } else if (changed) {
    LOG(WARNING) << "consensus peer " << PeerName(p->id) << " unreachable: " << s.ToString()
                 << " (Raft messages to it are dropped until it answers)";
  }
  MaybeSend(p);
  {
    MutexLock l(calls_mu_);
    calls_in_flight_--;
  }
  calls_cv_.notify_all();
}

void ConsensusRuntime::SendServerHeartbeats(int64_t now_us) {
  std::vector<std::shared_ptr<Peer>> peers;
  {
    SharedLock l(peers_mu_);
    for (auto& [id, p] : peers_) peers.push_back(p);
  }
  for (auto& p : peers) {
    {
      MutexLock l(p->mu);
      // Half an interval: this runs once an interval, a little late or early.
      if (now_us - p->last_send_us < server_heartbeat_interval_us_ / 2) continue;
    }
    MaybeSend(p, /*heartbeat=*/true);
  }
}

void ConsensusRuntime::HandleMultiUpdate(MultiUpdateRequestPB* request,
                                         MultiUpdateResponsePB* resp, RpcContext* ctx) {
  const MultiUpdateRequestPB& req = *request;
  resp->set_server(opts_.server_id);
  if (auto p = FindPeer(req.from_server())) {
    p->last_heard_us.store(GetMonoTimeMicros(), std::memory_order_relaxed);
  }
  if (req.messages_size() == 0) return;
  counters_.messages_received.fetch_add(req.messages_size(), std::memory_order_relaxed);
  // One task per worker with every message for its groups, in request order.
  std::vector<std::vector<std::pair<std::shared_ptr<RaftGroup>, MessagePB*>>> per_worker(
      workers_.size());
  {
    SharedLock l(groups_mu_);
    for (GroupMessagePB& gm : *request->mutable_messages()) {
      if (gm.message().from() != req.from_server() || gm.message().to() != opts_.server_id) {
        counters_.messages_dropped.fetch_add(1, std::memory_order_relaxed);
        LOG_EVERY_N(WARNING, 100) << "MultiUpdate from " << PeerName(req.from_server())
                                  << " carries a message from " << PeerName(gm.message().from())
                                  << " to " << PeerName(gm.message().to()) << "; dropped";
        continue;
      }
      auto it = groups_.find(gm.group());
      if (it == groups_.end()) {
        counters_.messages_dropped.fetch_add(1, std::memory_order_relaxed);
        if (resp->unknown_groups_size() == 0 ||
            resp->unknown_groups(resp->unknown_groups_size() - 1) != gm.group()) {
          resp->add_unknown_groups(gm.group());
        }
        continue;
      }
      per_worker[gm.group() % workers_.size()].emplace_back(it->second, gm.mutable_message());
    }
  }
  bool inline_taken = false;
  const int64_t received_us = metrics_ ? GetMonoTimeMicros() : 0;
  for (size_t i = 0; i < per_worker.size(); i++) {
    if (per_worker[i].empty()) continue;
    // The request dies with the call: the messages are taken out of it.
    std::vector<std::pair<std::shared_ptr<RaftGroup>, std::shared_ptr<const MessagePB>>> batch;
    batch.reserve(per_worker[i].size());
    for (auto& [g, m] : per_worker[i]) batch.emplace_back(std::move(g), TakeMessage(m));
    RuntimeWorker* w = workers_[i].get();
    std::function<void()> step = [this, w, batch = std::move(batch), received_us] {
      const int64_t now = GetMonoTimeMicros();
      bool appends = false;
      for (auto& [g, m] : batch) {
        if (received_us != 0 && m->type() == MSG_APPEND && m->entries_size() > 0) {
          g->NoteAppendReceived(received_us);
          appends = true;
        }
        g->Step(m, now);
        Touch(w, g.get());
      }
      if (appends) metrics_->follower_queue->Increment(now - received_us);
    };
    // A sleeping worker's part runs on this reactor once the read is done (one worker
    // per read: a reactor runs one inline task at a time).
    if (!inline_taken && ctx != nullptr && FLAGS_consensus_run_on_reactor && TryBorrow(w)) {
      auto shared_step = std::make_shared<std::function<void()>>(std::move(step));
      if (ctx->RunInlineAfterRead([this, w, shared_step] { RunBorrowed(w, *shared_step); })) {
        inline_taken = true;
        counters_.inline_runs.fetch_add(1, std::memory_order_relaxed);
        continue;
      }
      step = std::move(*shared_step);
      ReleaseBorrow(w, /*wake_us=*/INT64_MAX);
    }
    Post(w, std::move(step));
  }
}

}  // namespace nyala::consensus
