// TabletManager: the tablets this server hosts. Opens one TabletStore (RocksDB)
// per data dir at <dir>/tablets, loads every tablet's metadata from them, finishes
// deletes a crash interrupted, and creates and deletes tablets for the admin
// service (new tablets are spread over the data dirs round-robin).
//
// After Open(), LoadRequestRecords() hands the stored responses of writes that
// carried a request id to the server's RequestTracker, so retries of writes applied
// before a restart are answered, not applied again. Deleting a tablet deletes its
// request records with its rows, and removes its per-tablet metrics.
//
// It also keeps, for heartbeats, a change sequence: every tablet created, failed or
// deleted gets the next number, so a tablet report can list exactly the tablets
// that changed since a given number.
//
// Replication (StartReplication): every tablet is a replica of its Raft group, started
// by a ReplicaStarter (replica_starter.h); the consensus peers' addresses are in a
// PeerDirectory (peer_directory.h). The manager's own threads: the admin thread
// (batches of creates and deletes) and the reporter (durable indexes, tablet stats).
//
// Thread-safety: thread-safe. Lookup() is the hot path (one mutex, one hash probe).
// A mutex over the maps is never held during disk I/O; create and delete are
// serialized by their own mutex.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "master/master.pb.h"
#include "tserver/tablet.h"
#include "tserver/tablet_metadata.pb.h"
#include "tserver/tserver.pb.h"
#include "tserver/tserver_admin.pb.h"

namespace nyala::consensus {
class ConsensusRuntime;
}

namespace nyala::tserver {

class PeerDirectory;
class ReplicaStarter;
class RequestTracker;
class RowLocks;
class TabletStore;
struct TServerMetrics;

class TabletManager {
 public:
  // `metrics` must outlive the manager (may be null in tests).
  TabletManager(std::vector<std::string> data_dirs, TServerMetrics* metrics);
  ~TabletManager();

  // Opens the stores and loads the tablets. Fails when a store cannot be opened.
  Status Open();
  // Reads every store's request records into `tracker` (before it serves any
  // request), and deletes those not worth keeping (expired, superseded, or of no
  // tablet). Corruption when a record does not decode.
  Status LoadRequestRecords(RequestTracker* tracker);
  // Makes every tablet a replica of its Raft group on `runtime` (this server being
  // `uuid`), replaying what the log holds past each tablet's applied index; tablets
  // created later join at creation. Applied writes that other replicas led go to
  // `tracker`. Call once, after LoadRequestRecords; `runtime` and `tracker` must
  // outlive the manager. A tablet whose group cannot start is FAILED (reported to the
  // master), the others run.
  Status StartReplication(consensus::ConsensusRuntime* runtime, RequestTracker* tracker,
                          const std::string& uuid);
  // Where replicas this server leads send their need of a copy for another replica
  // (ReplicaStarter::CopyNeeded). Before StartReplication.
  void set_copy_needed(std::function<void(const std::string& tablet_id,
                                          const std::string& peer_uuid, uint64_t index)>
                           fn) {
    copy_needed_ = std::move(fn);
  }
  // Syncs every store's RocksDB WAL and reports each replica's applied index durable
  // to its group, so the consensus log and the groups' in-memory logs let go of what
  // the rows hold. Runs every --tablet_durable_report_interval_ms on a thread of its
  // own once replication started; public for tests.
  void ReportDurableIndexes();
  // Measures every running tablet's size and live row estimate (Tablet::MeasureStats)
  // and makes those whose figures changed part of the next incremental report. No
  // heartbeat is triggered: the figures go with the next regular one. Runs every
  // --update_tablet_stats_interval_ms on the reporter thread; public for tests.
  void UpdateTabletStats();

  // Where the other tablet servers listen (from the master's heartbeat responses):
  // the consensus transport's peers. Nothing before StartReplication.
  void UpdatePeers(const google::protobuf::RepeatedPtrField<master::TSInfoPB>& servers);
  // The uuid of the server with Raft peer id `id`, or "".
  std::string UuidOfPeer(uint64_t id) const;
  // `t`'s Raft state now, with server uuids, when `t` is RUNNING with a Raft group
  // (false, `pb` untouched, otherwise): what heartbeats report, and ListTablets and
  // the /tablets page show. Takes the PeerDirectory's lock (mu_ may be held).
  bool ConsensusStateOf(const Tablet& t, master::ConsensusStatePB* pb) const;

  // --- Tablet copy (tablet_manager_copy.cc).
  // The source's side: exports running tablet `tablet_id` into the new directory `dir`
  // for a copy session, at one applied index (its rows family's SST files, hard-linked,
  // and its request records), and describes it in `superblock` (a serialized
  // TabletCopySuperblockPB); `files` gets every file's name. Briefly holds the
  // tablet's group worker (the export runs between two applies). NotFound when the
  // tablet does not run here.
  Status ExportForCopy(const std::string& tablet_id, const std::string& dir,
                       std::vector<std::string>* files, std::string* superblock);
  // The receiver's side: installs the copy downloaded into `staging_dir` (its files
  // are moved into a store) as tablet `tablet_id`, in place of this server's replica
  // of it if it has one (that replica's group stops with its log kept, so the group
  // starts again from the copy with its term and vote; its data goes). The copy's
  // request records go to `tracker`. Returns the copy's applied index.
  // AlreadyPresent when the replica here applied as much; Corruption when the copy
  // does not hold together. A failure before the import leaves the replica running.
  Result<uint64_t> InstallCopy(const std::string& tablet_id, const std::string& staging_dir,
                               const std::string& superblock, RequestTracker* tracker)
      EXCLUDES(admin_mu_, mu_);
  // Server `uuid` listens at host:port (PeerDirectory::AddPeer): a member being added.
  void AddPeerAddress(const std::string& uuid, const std::string& host, uint32_t port);
  // Checksums the rows of tablet `tablet_id` right after its replica applied entry
  // `at_index` (0: the last applied one now), waiting at most `timeout` for it
  // (tablet_manager_checksum.cc; ChecksumTabletResponsePB says what it holds). Fills
  // `resp`'s error when it cannot.
  void Checksum(const std::string& tablet_id, uint64_t at_index, MonoDelta timeout,
                ChecksumTabletResponsePB* resp);
  // The "host:port" of server `uuid` as the consensus peers know it, or "".
  std::string PeerAddress(const std::string& uuid) const;

  // Flushes and closes the stores. Call after everything using tablets stopped.
  void Shutdown();

  // The tablet with id `id`, or null.
  std::shared_ptr<Tablet> Lookup(std::string_view id) const;
  std::vector<std::shared_ptr<Tablet>> GetTablets() const;
  size_t NumTablets() const;

  // Creates the tablet `req` describes. Identical to an existing tablet: OK, nothing
  // done. On failure `*code` says why: TABLET_ALREADY_EXISTS (another definition
  // under that id), INVALID_SCHEMA (bad schema or partition schema), UNKNOWN_ERROR
  // (storage), and ServiceUnavailable before StartReplication(). Returns once the
  // tablet's metadata is synced and its Raft group runs.
  // Concurrent calls are group-committed: the creates that queue while one batch is
  // being written go together in the next, one synced metadata write per data dir.
  Status CreateTablet(const CreateTabletRequestPB& req, TabletServerErrorPB::Code* code);
  // The admin service's forms of CreateTablet and DeleteTablet: they queue the
  // request and return; `done` runs once the outcome is known, on the manager's admin
  // thread, which takes every request queued meanwhile as one batch (an RPC thread
  // that waited instead would see one call at a time: the RPC layer runs the calls of
  // one connection's read one after another). `req` must stay valid until `done`.
  // After Shutdown() began, `done` gets ServiceUnavailable.
  using CreateDone = std::function<void(const Status&, TabletServerErrorPB::Code)>;
  void CreateTabletAsync(const CreateTabletRequestPB* req, CreateDone done);
  void DeleteTabletAsync(std::string tablet_id, std::function<void(const Status&)> done);
  // Answers the queued asynchronous requests with ServiceUnavailable and stops the
  // admin thread; later ones are answered so at once. Before the RPC services stop
  // (their calls are answered from that thread). Shutdown() calls it too.
  void StopAdminThread();
  // Removes the replica from this server but leaves a tombstone: its group stops, its
  // data (rows, request records) goes, and its consensus state (term, vote, last log
  // position) stays in the log, so that it never votes as if it had forgotten them. It
  // is listed as TOMBSTONED, no longer reported to the master, and a copy may replace
  // it (InstallCopy). OK if it is one already; NotFound without such a tablet.
  Status TombstoneTablet(const std::string& tablet_id) EXCLUDES(admin_mu_, mu_);
  // Deletes the tablet, its rows and request records, and its per-tablet metrics.
  // NotFound if there is no such tablet. Concurrent calls are group-committed like
  // creates.
  Status DeleteTablet(const std::string& tablet_id);

  // --- Tablet reports (heartbeater.h).
  // The change number of the latest change (0 before any).
  int64_t LatestChange() const;
  // Fills `report` with every live tablet (full) or with the tablets changed after
  // change `since` (incremental, deleted ones in removed_tablet_ids). Returns the
  // change number the report is complete up to.
  int64_t BuildReport(bool full, int64_t since, master::TabletReportPB* report) const;
  // Forgets deleted tablets whose deletion every master has seen (change <= `upto`).
  void PruneReportedDeletes(int64_t upto);
  // Called (without locks held) after every change; e.g. to heartbeat sooner.
  void set_change_callback(std::function<void()> cb);

  const std::vector<std::unique_ptr<TabletStore>>& stores() const { return stores_; }
  RowLocks* row_locks() const { return row_locks_.get(); }

 private:
  void NotifyChange();
  // Starts `tablet`'s Raft group (campaigning at once when `campaign`), its changes
  // recorded for the next report.
  Status StartGroup(const std::shared_ptr<Tablet>& tablet, bool campaign) EXCLUDES(mu_);
  // The reporter thread's loop (ReportDurableIndexes, UpdateTabletStats).
  void ReporterLoop() EXCLUDES(reporter_mu_);
  // The replica's Raft state in a report (ConsensusStateOf), when it has one.
  void FillConsensus(const Tablet& t, master::ReportedTabletPB* pb) const;
  // Records a change of `id` (live, or deleted) and returns its number.
  int64_t RecordChangeLocked(const std::string& id, bool deleted) REQUIRES(mu_);
  Status OpenStore(const std::string& dir);

  // Set in the constructor / Open(), never changed after Open().
  const std::vector<std::string> data_dirs_;
  TServerMetrics* const metrics_;
  std::unique_ptr<RowLocks> row_locks_;
  std::vector<std::unique_ptr<TabletStore>> stores_;

  // A CreateTablet call waiting for its batch (CreateTablet, CreateQueuedLocked).
  struct PendingCreate {
    const CreateTabletRequestPB* req;
    TabletMetadataPB meta;  // checked and filled in before it is queued
    bool done = false;      // set, with the outcome, by the batch that took it
    Status status;
    TabletServerErrorPB::Code code = TabletServerErrorPB::UNKNOWN_ERROR;
    std::shared_ptr<Tablet> tablet;  // the tablet created (null: existed, or failed)
    CreateDone callback;  // set: queued by CreateTabletAsync, deleted once answered
  };
  // Checks `req` and fills p->meta (p->code: why not).
  static Status PrepareCreate(const CreateTabletRequestPB& req, PendingCreate* p);
  // A DeleteTablet call waiting for its batch.
  struct PendingDelete {
    const std::string* tablet_id;
    bool done = false;
    Status status;
    std::string id_storage;                      // DeleteTabletAsync's id
    std::function<void(const Status&)> callback;  // set: queued by DeleteTabletAsync
  };
  // Takes both queues and runs them as batches (admin_mu_ held), then answers the
  // asynchronous requests among them (admin_mu_ released).
  void RunQueued() EXCLUDES(admin_mu_, create_mu_);
  void AdminLoop();
  // Deletes the tablets of `batch` (taken from delete_queue_), a few synced writes
  // per store for all of them. Marks each done.
  void DeleteBatchLocked(const std::vector<PendingDelete*>& batch) REQUIRES(admin_mu_);
  // Creates the tablets of `batch` (taken from create_queue_): one synced metadata
  // write per store, then each tablet's Raft group. Marks each done.
  void CreateBatchLocked(const std::vector<PendingCreate*>& batch) REQUIRES(admin_mu_);
  // The outcome of creating `p` when a tablet of its id exists already.
  void CompareWithExisting(const Tablet& existing, PendingCreate* p);

  // Serializes creating (a batch at a time) and deleting tablets (they do disk I/O
  // outside mu_). Acquired before create_mu_.
  Mutex admin_mu_;
  size_t next_store_ GUARDED_BY(admin_mu_) = 0;
  // Creates waiting for the next batch.
  Mutex create_mu_;
  std::vector<PendingCreate*> create_queue_ GUARDED_BY(create_mu_);
  std::vector<PendingDelete*> delete_queue_ GUARDED_BY(create_mu_);
  CondVar admin_cv_;  // with create_mu_: something queued, or stopping
  bool admin_stop_ GUARDED_BY(create_mu_) = false;
  std::thread admin_thread_;  // AdminLoop, from Open() to Shutdown()

  mutable Mutex mu_;
  // Looked up by string_view without building a std::string (a tablet id is longer
  // than the small-string buffer: that was a malloc and a free per Get).
  struct IdHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::unordered_map<std::string, std::shared_ptr<Tablet>, IdHash, std::equal_to<>> tablets_
      GUARDED_BY(mu_);
  struct Change {
    int64_t seq;
    bool deleted;
  };
  std::map<std::string, Change> changes_ GUARDED_BY(mu_);
  int64_t last_change_ GUARDED_BY(mu_) = 0;
  std::function<void()> change_cb_ GUARDED_BY(mu_);

  // Set by StartReplication (before the admin service and heartbeats use them), then
  // read only; null before.
  std::unique_ptr<PeerDirectory> peers_;
  std::unique_ptr<ReplicaStarter> starter_;
  std::function<void(const std::string&, const std::string&, uint64_t)> copy_needed_;
  std::thread durable_reporter_;
  Mutex reporter_mu_;
  CondVar reporter_cv_;
  bool reporter_stop_ GUARDED_BY(reporter_mu_) = false;
};

// The report state of a tablet for the master.
master::TabletStatePB ReportedState(const Tablet& tablet);

}  // namespace nyala::tserver
