// CatalogManager: the master's tables and tablets. It validates and creates
// tables, places their tablets on tablet servers (placement.h), drives
// CreateTablet / DeleteTablet on the servers from a background thread
// (tablet_rpc_tasks.h), follows tablet reports from heartbeats, replaces failed
// replicas (replica_replacement.h), keeps the operators' tablet-server states, and
// answers GetTableLocations through the table-locations cache.
//
// State machine. Tablet: CREATING (placed, CreateTablet sent to every replica with
// the tablet's Raft configuration) -> RUNNING (a leader is known: some replica
// reported role LEADER in the newest term reported) -> DELETED with its table; or
// CREATING -> REPLACED when no leader is known within --tablet_creation_timeout_ms,
// a new tablet with the same partition being placed in its stead (avoiding the old
// replicas that never confirmed, where possible). CreateTablet keeps being sent to
// replicas that have not confirmed (by a successful response or by reporting the
// tablet running) after the tablet runs, while this master instance lives. Table:
// CREATING -> RUNNING (all its tablets running) -> DELETED. Deleted tables and
// their tablets stay in the catalog so that servers reporting them later are told
// to delete them.
//
// Leaders. Each replica's last reported ConsensusStatePB is kept in memory (not in
// the sys catalog, whose replica_uuids stay the tablet's replica set). A tablet's
// leader is the replica reporting LEADER in the highest term any replica reported
// (terms seen never go back in this instance); a higher term reported as follower
// supersedes an older leader claim. GetTableLocations lists the leader first, every
// replica with its role (UNKNOWN_ROLE until it reports). After a restart no leader
// is known until reports arrive.
//
// Configurations. A tablet's replica set is its Raft configuration: replica_uuids
// (voters) and learner_uuids in the sys catalog. It starts as the replicas placed,
// all voters; once the tablet runs, the master follows the configuration the
// tablet's leader reports (FollowConfigs: written to the sys catalog, the table's
// locations purged). A server reporting a replica of a running tablet outside that
// configuration is told to tombstone it (DeleteTablet TABLET_DATA_TOMBSTONED), once
// per change of its report, when two reports of the tablet's leader arrived since,
// each without it, and no change adding it is in flight (a learner gets its copy only
// after the leader added it, so the second of those reports would list it); the
// leader's server is asked for full reports meanwhile. Replicas reported of tablets
// that are not current (deleted, replaced, unknown) are deleted outright.
//
// Replacement (catalog_manager_replicas.cc). Each background pass decides, per
// running tablet, the next configuration change (replica_replacement.h: a failed
// voter is replaced ADD_LEARNER, PROMOTE_LEARNER, REMOVE_PEER; a learner that cannot
// finish is removed) and sends it to the tablet's leader, at most one change in
// flight per tablet and --max_concurrent_tablet_copies learners being added per
// target server. Which change is pending, what is being replaced and the learners'
// progress are in memory only: after a restart the decisions start again from the
// configuration the catalog holds and the leaders report.
//
// Durability. Every change to persisted state is written to the SysCatalog
// (sync, one batch) before the in-memory state changes; Load() rebuilds the
// in-memory state. Which replicas confirmed, their reported consensus states, and
// RPC progress are in memory only (after a restart, CREATING tablets are simply
// created again: CreateTablet is idempotent).
//
// Lock ordering (acquire in this order, never the reverse):
//   write_mu_  serialises every catalog mutation: read state, write the sys
//              catalog, apply. Held across sys-catalog I/O, never across RPCs.
//   state_mu_  (RwMutex) guards the in-memory maps, table/tablet state and which
//              servers are live (TSManager transitions that change answers are
//              made holding it exclusively). Held exclusively only for in-memory
//              updates; the table-locations cache of a table is purged under it
//              before the change is applied, and misses are inserted under it
//              shared, so a cached answer is never stale.
//   TSManager::mu_, TabletRpcTasks::mu_, TableLocationsCache::mu_, report_mu_: leaves.
//
// Thread-safety: every public method is thread-safe. RPC-level methods fill the
// response's `error` (MasterErrorPB) on failure and never block on tablet
// servers. `sys_catalog`, `ts_manager` and `metrics` must outlive this object.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/metrics.h"
#include "common/mutex.h"
#include "common/result.h"
#include "common/rw_mutex.h"
#include "common/status.h"
#include "master/master.pb.h"
#include "master/placement.h"
#include "master/replica_replacement.h"
#include "master/sys_catalog.h"
#include "master/table_locations_cache.h"
#include "master/tablet_rpc_tasks.h"
#include "master/ts_manager.h"
#include "nyala/monotime.h"
#include "nyala/partition.h"
#include "rpc/messenger.h"

namespace nyala::master {

// What the web UI shows of one tablet (a copy).
struct TabletSnapshot {
  std::string id;
  SysTabletEntryPB entry;
  std::string leader_uuid;                                 // "" while no leader is known
  uint64_t term = 0;                                       // the newest term reported
  std::map<std::string, ConsensusStatePB> replica_states;  // by server uuid, as reported
  std::map<std::string, ReplicaRolePB> roles;              // as GetTableLocations says
  ReplacementPB replacement;  // step UNKNOWN_STEP unless a replica is being replaced
  // By server uuid: each replica's last reported size (catalog_manager_statistics.cc).
  std::map<std::string, ReportedTabletStatsPB> replica_stats;
};

// What the web UI shows of one table (a copy).
struct TableSnapshot {
  std::string id;
  SysTableEntryPB entry;
  std::vector<TabletSnapshot> tablets;  // current ones, by partition
};

class CatalogManager {
 public:
  // `messenger` carries the calls to tablet servers.
  CatalogManager(SysCatalog* sys_catalog, TSManager* ts_manager,
                 std::shared_ptr<rpc::Messenger> messenger, MetricRegistry* metrics);
  ~CatalogManager();
  CatalogManager(const CatalogManager&) = delete;
  CatalogManager& operator=(const CatalogManager&) = delete;

  // Reads the sys catalog into memory. Call once, before anything else.
  Status Load() EXCLUDES(write_mu_, state_mu_);
  // Starts / stops the background thread (placement retries, RPCs, dead servers).
  void StartBackgroundTasks();
  void Shutdown();

  // --- RPC operations (master.proto) ---
  void CreateTable(const CreateTableRequestPB& req, CreateTableResponsePB* resp)
      EXCLUDES(write_mu_, state_mu_);
  void IsCreateTableDone(const IsCreateTableDoneRequestPB& req, IsCreateTableDoneResponsePB* resp)
      EXCLUDES(state_mu_);
  void DeleteTable(const DeleteTableRequestPB& req, DeleteTableResponsePB* resp)
      EXCLUDES(write_mu_, state_mu_);
  // Writes the alteration (alter_table.h) to the sys catalog and applies it in memory:
  // the new schema, name and comment; new tablets for ranges added, placed as
  // CreateTable places them; the tablets of ranges dropped deleted. The background
  // thread then sends the new schema to every tablet's leader (AlterSchema) until each
  // has it (catalog_manager_alter.cc).
  void AlterTable(const AlterTableRequestPB& req, AlterTableResponsePB* resp)
      EXCLUDES(write_mu_, state_mu_);
  void IsAlterTableDone(const IsAlterTableDoneRequestPB& req, IsAlterTableDoneResponsePB* resp)
      EXCLUDES(state_mu_);
  void ListTables(const ListTablesRequestPB& req, ListTablesResponsePB* resp) EXCLUDES(state_mu_);
  void GetTableSchema(const GetTableSchemaRequestPB& req, GetTableSchemaResponsePB* resp)
      EXCLUDES(state_mu_);
  void ListTabletServers(const ListTabletServersRequestPB& req, ListTabletServersResponsePB* resp)
      EXCLUDES(state_mu_);
  void TSHeartbeat(const TSHeartbeatRequestPB& req, TSHeartbeatResponsePB* resp)
      EXCLUDES(write_mu_, state_mu_);
  // The serialized GetTableLocationsResponsePB (an answer or an error) for `req`:
  // from the cache when `use_cache` and the cache is on, else built now (and then
  // cached when it is a successful answer).
  std::shared_ptr<const std::string> GetTableLocations(const GetTableLocationsRequestPB& req,
                                                       bool use_cache = true) EXCLUDES(state_mu_);
  // Every current tablet of the table `req` names (of every live table when it names
  // none) with each replica's server, liveness, role and last reported consensus state.
  void ListTablets(const ListTabletsRequestPB& req, ListTabletsResponsePB* resp)
      EXCLUDES(state_mu_);

  // A table's on-disk size and live row estimate, in total and per tablet and
  // replica, from the replicas' last reported statistics
  // (catalog_manager_statistics.cc).
  void GetTableStatistics(const GetTableStatisticsRequestPB& req,
                          GetTableStatisticsResponsePB* resp) EXCLUDES(state_mu_);

  // --- Operator calls (MasterAdminService; catalog_manager_replicas.cc) ---
  // Forgets a tablet server the master considers dead, and its maintenance state.
  void UnregisterTServer(const UnregisterTServerRequestPB& req, UnregisterTServerResponsePB* resp)
      EXCLUDES(write_mu_, state_mu_);
  // Puts a tablet server in or out of maintenance mode, in the sys catalog first.
  void ChangeTServerState(const ChangeTServerStateRequestPB& req,
                          ChangeTServerStateResponsePB* resp) EXCLUDES(write_mu_, state_mu_);
  // Starts moving one replica of a tablet (the answer comes before the move ends).
  void MoveReplica(const MoveReplicaRequestPB& req, MoveReplicaResponsePB* resp)
      EXCLUDES(write_mu_, state_mu_);
  // Changes a table's replication factor in the sys catalog; the background thread
  // adds or removes replicas.
  void SetReplicationFactor(const SetReplicationFactorRequestPB& req,
                            SetReplicationFactorResponsePB* resp) EXCLUDES(write_mu_, state_mu_);
  // Plans replica moves and leadership transfers that even out the servers, and starts
  // them unless req.dry_run() (catalog_manager_rebalance.cc).
  void Rebalance(const RebalanceRequestPB& req, RebalanceResponsePB* resp)
      EXCLUDES(write_mu_, state_mu_);
  // The operator state of every server that has one other than TSERVER_STATE_NONE.
  std::map<std::string, TServerStatePB> TServerStates() const EXCLUDES(state_mu_);

  // --- Introspection ---
  // The cluster at a glance (the master's home page): tablets of live tables that lack a
  // live leader or a live majority of voters (unavailable) or have fewer live voters
  // than their table's replication factor (under-replicated), and tables an alteration
  // is still being carried to.
  struct HealthSummary {
    int tables = 0;
    int tablets = 0;
    int under_replicated = 0;
    int unavailable = 0;
    std::vector<std::string> altering;  // table names
  };
  HealthSummary GetHealthSummary() const EXCLUDES(state_mu_);
  std::vector<TableSnapshot> GetTableSnapshots() const EXCLUDES(state_mu_);
  int NumTables() const EXCLUDES(state_mu_);  // not deleted
  // Replicas placed per server (tablets not deleted or replaced).
  std::map<std::string, int64_t> ReplicasPerServer() const EXCLUDES(state_mu_);
  TableLocationsCache* locations_cache() const { return cache_.get(); }
  // The master's identity in heartbeat responses.
  void set_master_instance(NodeInstancePB instance) { master_instance_ = std::move(instance); }

  // One pass of the background work, now, on the calling thread.
  void RunBackgroundPassForTests() { BackgroundPass(); }
  size_t NumPendingTabletsForTests() const EXCLUDES(state_mu_);
  size_t NumRpcTasksForTests() const { return tasks_->NumTasks(); }
  size_t NumRpcsInFlightForTests() const { return tasks_->NumInFlight(); }
  int64_t ReplacementsStartedForTests() const { return replacements_started_->value(); }
  int64_t ReplacementsCompletedForTests() const { return replacements_completed_->value(); }
  // Replaces the generator of new tablet ids (default: server::GenerateUuid).
  void SetTabletIdGeneratorForTests(std::function<std::string()> gen) EXCLUDES(write_mu_) {
    MutexLock w(write_mu_);
    tablet_id_generator_ = std::move(gen);
  }

 private:
  struct TabletInfo {
    std::string id;
    SysTabletEntryPB pb;
    Partition partition;
    // In memory only.
    std::set<std::string> confirmed;     // replicas known to hold it
    std::set<std::string> delete_acked;  // replicas known to have dropped it
    MonoTime creation_deadline;
    // Each replica's last report (only replicas reporting it RUNNING), by uuid.
    std::map<std::string, ConsensusStatePB> replica_states;
    uint64_t max_term = 0;    // the newest term any replica reported
    std::string leader_uuid;  // the replica reporting LEADER in max_term; "" if none
    // Each replica's last reported size (ReportedTabletStatsPB), by uuid; kept while
    // the replica reports the tablet RUNNING. Changes no answer of GetTableLocations.
    std::map<std::string, ReportedTabletStatsPB> replica_stats;
    // The newest schema version the tablet is known to have applied (a replica's
    // report, or its leader's answer to AlterSchema); in memory only.
    uint32_t schema_version = 0;

    // --- Configuration changes (catalog_manager_replicas.cc), in memory only ---
    // The change the master asked the leader for, until the leader's report shows it,
    // another leader reports, or the failure timeout passes.
    std::optional<PendingChange> change;
    bool change_answered = false;  // the leader answered that it committed
    MonoTime change_since;         // sent, then answered
    std::string change_leader;     // the leader asked
    uint64_t change_term = 0;      // the newest term known when it was asked
    // A NOT_THE_LEADER answer from this leader in this term: no change is asked of it
    // until a leader reports again ("" when none).
    std::string refused_by;
    uint64_t refused_term = 0;
    bool AwaitsLeaderReport() const {
      return !refused_by.empty() && refused_by == leader_uuid && refused_term == max_term;
    }
    // The voter the master last started replacing and the learner it added for it.
    std::string replacing;
    std::string replacement;
    // Every learner the master asked to add and that is still a member.
    std::set<std::string> own_learners;
    // Why no learner could be added in the last pass ("" when one could).
    std::string no_target;
    struct LearnerProgress {
      int state = -1;  // FollowerStatusPB::State, -1 when the leader does not list it
      uint64_t match_index = 0;
      MonoTime since;  // when the leader's view of it last changed
    };
    std::map<std::string, LearnerProgress> learner_progress;  // by learner uuid
    // An operator's move of the replica on `from` (MoveReplica, a rebalance) to `to`
    // ("" lets the master choose), until `from` leaves the configuration.
    struct Move {
      std::string from;
      std::string to;
    };
    std::optional<Move> move;
    // The leader the master last asked to hand leadership away, and until when it does
    // not ask again (a transfer takes at most an election timeout).
    std::string transfer_from;
    MonoTime transfer_until;
    // What the pending change is to the replacement, for the counters.
    enum class ChangeRole { kOther, kStartsReplacement, kCompletesReplacement, kRemovesLearner };
    ChangeRole change_role = ChangeRole::kOther;

    bool IsVoter(const std::string& uuid) const;
    bool IsLearner(const std::string& uuid) const;
    bool IsMember(const std::string& uuid) const { return IsVoter(uuid) || IsLearner(uuid); }
    // Voters, then learners.
    std::vector<std::string> Members() const;
    // The role GetTableLocations gives `uuid`: LEADER for the leader, LEARNER for a
    // learner, a stale leader claim (an older term) FOLLOWER, UNKNOWN_ROLE without a
    // report.
    ReplicaRolePB RoleOf(const std::string& uuid) const;
    // Recomputes max_term and leader_uuid from replica_states: the members' reports,
    // and the leadership claims of replicas outside the configuration (a leader the
    // master has not followed yet).
    void UpdateLeader();
  };
  struct TableInfo {
    std::string id;
    SysTableEntryPB pb;
    // The current (not replaced) tablets by partition_key_start.
    std::map<std::string, std::shared_ptr<TabletInfo>> tablets_by_start;
    // Every tablet ever created for the table, including replaced ones.
    std::vector<std::string> all_tablet_ids;
  };

  // --- catalog_manager.cc: loading, background thread, helpers ---
  void BackgroundLoop();
  void BackgroundPass() EXCLUDES(write_mu_, state_mu_);
  // Marks expired servers dead, purging the locations of their tables first.
  void CheckDeadServers(MonoTime now) EXCLUDES(state_mu_);
  // Ids of the live tables with a replica on `uuid`.
  std::vector<std::string> TablesOnServerLocked(const std::string& uuid) const
      REQUIRES_SHARED(state_mu_);
  void InvalidateLocked(const std::string& table_id) REQUIRES(state_mu_);
  // Table by id or name (id wins); nullptr if unknown or deleted.
  std::shared_ptr<TableInfo> FindTableLocked(const TableIdentifierPB& id) const
      REQUIRES_SHARED(state_mu_);
  // Replicas per live server that can take new ones (not decommissioning); with
  // `leaders`, also leaders per server (the known leader of each tablet, else its first
  // replica: the one that campaigns first).
  ServerLoads LiveServerLoadsLocked(ServerLoads* leaders = nullptr) const
      REQUIRES_SHARED(state_mu_);
  // A new tablet id whose Raft group id (consensus/peer_id.h) is neither an existing
  // tablet's nor in `taken` (ids picked for the same batch); adds it to `taken`.
  Result<std::string> NewTabletIdLocked(std::set<uint64_t>* taken) const REQUIRES(write_mu_)
      REQUIRES_SHARED(state_mu_);
  // Records a tablet just written to the sys catalog in the in-memory maps.
  void AddTabletLocked(std::shared_ptr<TabletInfo> tablet) REQUIRES(state_mu_);

  // --- catalog_manager_tables.cc ---
  // Validates `req`; fills the parsed schema pieces. Sets *code on failure.
  Status ValidateCreateTable(const CreateTableRequestPB& req, Schema* schema,
                             PartitionSchema* partition_schema, std::vector<Partition>* partitions,
                             int* num_replicas, MasterErrorPB::Code* code) const;

  // --- catalog_manager_alter.cc ---
  // The background pass's part: asks each running tablet behind its table's schema
  // version, through its leader, to apply it; adds the tasks it wants to `needed`.
  void DriveAlters(MonoTime now, std::set<TabletRpcTasks::Key>* needed) EXCLUDES(state_mu_);
  // Tablets of `table` running with its schema version (the alteration is done when
  // that is all of them).
  int TabletsAlteredLocked(const TableInfo& table) const REQUIRES_SHARED(state_mu_);
  // New tablets for `partitions` of `table`, placed as CreateTable places them, ready to
  // be written to the sys catalog (their ids are unique against the catalog and
  // `taken`).
  Result<std::vector<std::shared_ptr<TabletInfo>>> NewTabletsLocked(
      const std::string& table_id, int num_replicas, const std::vector<Partition>& partitions,
      ServerLoads* loads, ServerLoads* leaders, std::set<uint64_t>* taken) REQUIRES(write_mu_)
      REQUIRES_SHARED(state_mu_);

  // --- catalog_manager_tablets.cc ---
  // CREATING tablets among `tablet_ids` that have a leader become RUNNING; tables
  // with every tablet running become RUNNING.
  Status MarkTabletsRunning(const std::vector<std::string>& tablet_ids)
      EXCLUDES(write_mu_, state_mu_);
  // CREATING tablets in pending_tablets_ that have a leader (e.g. a failed write).
  std::vector<std::string> PendingTabletsWithLeader() const EXCLUDES(state_mu_);
  // Records that `uuid` holds `t` (in memory); drops `t` from pending_tablets_ when
  // it runs and every replica confirmed.
  void ConfirmReplicaLocked(TabletInfo* t, const std::string& uuid) REQUIRES(state_mu_);
  void ApplyTaskResults() EXCLUDES(write_mu_, state_mu_);
  Status ReplaceTimedOutTablets(MonoTime now) EXCLUDES(write_mu_, state_mu_);
  // Sends the CreateTablet / DeleteTablet calls due; forgets the backoff state of
  // tasks neither these nor `needed` (the replacement's) want any more.
  void SendPendingRpcs(MonoTime now, std::set<TabletRpcTasks::Key> needed) EXCLUDES(state_mu_);
  void ProcessTabletReport(const std::string& uuid, const TabletReportPB& report)
      EXCLUDES(write_mu_, state_mu_);
  // Stores (or, with nullptr, drops) `uuid`'s consensus state of `t`, purging the
  // table's cached locations first when the leader, term or a role changes.
  void SetReplicaStateLocked(TabletInfo* t, const std::string& uuid, const ConsensusStatePB* state)
      REQUIRES(state_mu_);

  // --- catalog_manager_replicas.cc: configurations, replacements, leftovers ---
  // What the replacement decisions need of every server, taken once per pass or call.
  struct HealthSnapshot {
    MonoTime now;
    MonoDelta failed_after;  // --follower_unavailable_considered_failed_sec
    std::map<std::string, TSManager::Liveness> servers;
  };
  HealthSnapshot TakeHealthSnapshot(MonoTime now) const;
  ServerHealth HealthLocked(const HealthSnapshot& h, const std::string& uuid) const
      REQUIRES_SHARED(state_mu_);
  bool InMaintenanceLocked(const std::string& uuid) const REQUIRES_SHARED(state_mu_);
  bool DecommissioningLocked(const std::string& uuid) const REQUIRES_SHARED(state_mu_);
  // Replicas per server over every tablet not deleted or replaced.
  std::map<std::string, int64_t> ReplicasPerServerLocked() const REQUIRES_SHARED(state_mu_);
  ReplacementInput ReplacementInputLocked(const TabletInfo& t, const HealthSnapshot& h) const
      REQUIRES_SHARED(state_mu_);
  // What ListTablets and /tables show of `t`'s replacement.
  ReplacementPB ReplacementStatusLocked(const TabletInfo& t, const HealthSnapshot& h) const
      REQUIRES_SHARED(state_mu_);
  // Notes a report of `t` by its leader: the configuration's history, the learners'
  // progress, a pending change it shows. Adds `t` to unfollowed_ when its
  // configuration differs from the catalog's.
  void NoteLeaderReportLocked(TabletInfo* t, const ConsensusStatePB& state, MonoTime now)
      REQUIRES(state_mu_);
  // Notes a report of `t` by `uuid`, a server outside its configuration.
  void NoteNonMemberReportLocked(const TabletInfo& t, const std::string& uuid,
                                 const ReportedTabletPB& rt) REQUIRES(state_mu_);
  // Writes the configuration that each of `tablet_ids`' leader reports, where it
  // differs from the catalog's, then applies it.
  Status FollowConfigs(const std::vector<std::string>& tablet_ids) EXCLUDES(write_mu_, state_mu_);
  std::vector<std::string> UnfollowedConfigs() const EXCLUDES(state_mu_);
  // The background pass's part: decides and sends configuration changes and
  // tombstones; adds the tasks it still wants to `needed`.
  void ReplaceFailedReplicas(MonoTime now, std::set<TabletRpcTasks::Key>* needed)
      EXCLUDES(write_mu_, state_mu_);
  void ApplyChangeConfigResult(const TabletRpcTasks::Result& r, MonoTime now) REQUIRES(state_mu_);
  // The next heartbeat response to `uuid` asks for a full tablet report (at most once
  // per interval per server).
  void RequestFullReport(const std::string& uuid, MonoTime now) EXCLUDES(report_mu_);
  bool TakeFullReportRequest(const std::string& uuid) EXCLUDES(report_mu_);

  // --- catalog_manager_locations.cc ---
  // ListTablets' entries of `table`'s current tablets (only `only_tablet` if not "").
  void AddTabletsLocked(const TableInfo& table, const std::string& only_tablet,
                        const HealthSnapshot& health, ListTabletsResponsePB* resp) const
      REQUIRES_SHARED(state_mu_);
  // Builds the answer for `table`; an error response for TABLET_NOT_RUNNING.
  // `first` is the first tablet to return (tablets_by_start.end() for none).
  void BuildLocationsLocked(
      const TableInfo& table, const GetTableLocationsRequestPB& req,
      std::map<std::string, std::shared_ptr<TabletInfo>>::const_iterator first,
      GetTableLocationsResponsePB* resp) const REQUIRES_SHARED(state_mu_);

  // Set in the constructor, never changed.
  SysCatalog* const sys_catalog_;
  TSManager* const ts_manager_;
  const std::shared_ptr<rpc::Messenger> messenger_;
  const std::unique_ptr<TableLocationsCache> cache_;  // null when disabled
  const std::shared_ptr<TabletRpcTasks> tasks_;
  // master_replica_replacements_{started,completed}_total and
  // master_replacement_learners_removed_total.
  Counter* const replacements_started_;
  Counter* const replacements_completed_;
  Counter* const learners_removed_;
  NodeInstancePB master_instance_;

  Mutex write_mu_ ACQUIRED_BEFORE(state_mu_);
  std::mt19937_64 rng_ GUARDED_BY(write_mu_);
  std::function<std::string()> tablet_id_generator_ GUARDED_BY(write_mu_);

  mutable RwMutex state_mu_;
  std::unordered_map<std::string, std::shared_ptr<TableInfo>> tables_ GUARDED_BY(state_mu_);
  std::unordered_map<std::string, std::string> table_ids_by_name_ GUARDED_BY(state_mu_);
  std::unordered_map<std::string, std::shared_ptr<TabletInfo>> tablets_ GUARDED_BY(state_mu_);
  // Raft group id -> tablet id, for every tablet in tablets_.
  std::unordered_map<uint64_t, std::string> tablet_ids_by_group_ GUARDED_BY(state_mu_);
  // Tablets with RPC work left: CREATING, or DELETED/REPLACED with replicas to drop.
  std::set<std::string> pending_tablets_ GUARDED_BY(state_mu_);
  // (server, tablet) pairs a server reported that it should not have.
  std::set<std::pair<std::string, std::string>> orphans_ GUARDED_BY(state_mu_);
  // Replicas of running tablets reported by servers outside the configuration, by
  // (server, tablet): what the report said (to tell a change of it), how many reports
  // of the tablet's leader lacking the server arrived since that report (at most 2),
  // and whether the tombstone for that report was acknowledged.
  struct Leftover {
    std::string report;
    int leader_reports_without = 0;
    bool tombstoned = false;
  };
  std::map<std::pair<std::string, std::string>, Leftover> leftovers_ GUARDED_BY(state_mu_);
  // Running tablets whose leader reports a configuration the catalog does not hold yet.
  std::set<std::string> unfollowed_ GUARDED_BY(state_mu_);
  // Operator states (sys catalog), by server uuid; TSERVER_STATE_NONE is absent.
  std::map<std::string, SysTServerStateEntryPB> tserver_states_ GUARDED_BY(state_mu_);
  MonoTime load_time_;  // set by Load(); servers unknown since then count silent since

  // Servers whose next heartbeat response asks for a full tablet report, and when each
  // was last asked.
  mutable Mutex report_mu_;
  std::set<std::string> full_report_wanted_ GUARDED_BY(report_mu_);
  std::map<std::string, MonoTime> full_report_asked_ GUARDED_BY(report_mu_);

  std::atomic<bool> stopping_{false};
  std::thread bg_thread_;
};

// The figures a tablet counts for in its table's statistics: its leader's report,
// else (no leader known, or the leader has not reported its figures) the largest
// size any replica reported. False (`out` untouched) when no replica reported any.
bool TabletStatsOf(const std::string& leader_uuid,
                   const std::map<std::string, ReportedTabletStatsPB>& replica_stats,
                   ReportedTabletStatsPB* out);

// Fills `err` with `code` and `s` (tserver's SetError has the same shape).
void SetError(MasterErrorPB::Code code, const Status& s, MasterErrorPB* err);
// The NotFound that goes with MasterErrorPB::TABLE_NOT_FOUND: it names the table `id`
// names (its id, else its name) and says how to list the tables.
Status TableNotFound(const TableIdentifierPB& id);

}  // namespace nyala::master
