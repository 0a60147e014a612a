// The Nyala C++ client: how applications reach a cluster.
//
//   NYALA_ASSIGN_OR_RETURN(std::shared_ptr<Client> client,
//       ClientBuilder().add_master_server_addr("127.0.0.1:7051").Build());
//   NYALA_ASSIGN_OR_RETURN(std::shared_ptr<Table> table, client->OpenTable("metrics"));
//   std::shared_ptr<Session> session = client->NewSession();
//   NYALA_RETURN_NOT_OK(session->SetFlushMode(Session::FlushMode::kAutoFlushBackground));
//   auto op = table->NewInsert();
//   NYALA_RETURN_NOT_OK(op->Set("key", Cell::Int64(1)));
//   NYALA_RETURN_NOT_OK(session->Apply(std::move(op)));
//   NYALA_RETURN_NOT_OK(session->Flush());
//
// Objects and threads:
//  - Client is thread-safe and shared (shared_ptr); it owns the messenger (reactor
//    threads), the meta cache of tablet locations and a timer thread. Tables,
//    sessions and scanners keep their client alive.
//  - Table is immutable after OpenTable and thread-safe; Get/MultiGet may be called
//    from many threads at once.
//  - Session, Scanner and WriteOperation are thread-compatible: one thread at a time
//    (a Session's background flushing is internal and needs no care from callers).
//  - No call may be made from a client callback (FlushAsync's) that blocks.
//
// Every fallible call returns Status or Result<T>; nothing throws. This header and the
// nyala/ headers it includes are the installed client API (libnyala_client): they
// include only the standard library and each other, so no protobuf, libevent or
// internal header is reachable from an application; the wire types stay inside
// src/client.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nyala/export.h"
#include "nyala/monotime.h"
#include "nyala/partition.h"
#include "nyala/predicate.h"
#include "nyala/result.h"
#include "nyala/row.h"
#include "nyala/row_op_type.h"
#include "nyala/schema.h"
#include "nyala/slice.h"
#include "nyala/status.h"
#include "nyala/types.h"

namespace nyala::client {

NYALA_EXPORT_BEGIN

class Client;
class Scanner;
class Session;
class Table;

// The client's internals, for the library's own classes (client-internal.h); not
// exported.
namespace internal {
class NYALA_NO_EXPORT ClientData;
NYALA_NO_EXPORT ClientData* DataOf(const Client& client);
class NYALA_NO_EXPORT GetCall;
class NYALA_NO_EXPORT ScanBatchData;
}  // namespace internal

/// Builds a Client. Only the master addresses are required.
class ClientBuilder {
 public:
  ClientBuilder();
  ~ClientBuilder();
  ClientBuilder(const ClientBuilder&) = delete;
  ClientBuilder& operator=(const ClientBuilder&) = delete;

  /// Adds one master, "host:port" (port defaults to 7051).
  ClientBuilder& add_master_server_addr(std::string addr);
  /// Replaces the master list; each entry may itself be a comma-separated list.
  ClientBuilder& master_server_addrs(std::vector<std::string> addrs);
  /// Timeout of one data operation (write flush, Get, scan batch): default 10 s.
  ClientBuilder& default_rpc_timeout(MonoDelta timeout);
  /// Timeout of catalog operations (create, delete, list, open): default 30 s.
  ClientBuilder& default_admin_operation_timeout(MonoDelta timeout);
  /// Reactor threads of the client's messenger: default 1.
  ClientBuilder& num_reactors(int n);
  /// Whether one-key Gets that this client's threads make at the same time to the same
  /// tablet share one Get RPC (client/get_coalescer.h): default true. Off, every
  /// Table::Get is an RPC of its own, which costs a hundred concurrent readers a
  /// request and a thread wakeup each on both sides.
  ClientBuilder& share_concurrent_gets(bool share);

  /// Resolves the masters and starts the client's threads. InvalidArgument for an
  /// empty or unparsable master list; NetworkError when no name resolves.
  Result<std::shared_ptr<Client>> Build();

 private:
  struct NYALA_NO_EXPORT Options;
  std::unique_ptr<Options> opts_;
};

/// One tablet server as the master sees it.
struct TabletServerInfo {
  std::string uuid;
  std::string rpc_address;  ///< first registered RPC address, "host:port"
  bool live = false;
  int64_t millis_since_heartbeat = 0;
  int num_live_tablets = 0;
};

/// The master's own registration (GetMasterRegistration).
struct MasterStatus {
  std::string uuid;
  std::string rpc_addresses;   ///< comma-separated "host:port"
  std::string http_addresses;  ///< comma-separated "host:port"
  std::string version;
  int64_t start_time_micros = 0;  ///< wall clock
  int num_tables = 0;
  int num_live_tablet_servers = 0;
};

/// One replica of a tablet, as the master reports it (live servers only).
struct ReplicaInfo {
  std::string ts_uuid;
  std::string rpc_address;
  bool is_leader = false;
};

/// One tablet of a table and where it lives.
struct TabletInfo {
  std::string tablet_id;
  Partition partition;
  std::vector<ReplicaInfo> replicas;
};

/// Builds a table schema column by column: key columns first.
class SchemaBuilder {
 public:
  /// A primary-key column (never nullable). Must precede every AddColumn.
  SchemaBuilder& AddKeyColumn(std::string name, DataType type);
  /// A value column, NOT NULL unless `nullable`, with an optional default.
  SchemaBuilder& AddColumn(std::string name, DataType type, bool nullable = false,
                           Value default_value = Value());
  /// Validates (Schema::Create) and returns the schema. InvalidArgument when a key
  /// column was added after a value column, or for anything Schema::Create rejects.
  Result<Schema> Build() const;

 private:
  std::vector<ColumnSchema> columns_;
  int num_keys_ = 0;
  bool key_after_value_ = false;
};

/// Which replica of a tablet answers a read (Table::Get, Table::MultiGet, Scanner).
enum class ReplicaSelection {
  /// The leader, linearizably (the default): the read sees every write acknowledged
  /// before it began, and never one that is later rolled back. Without a leader (an
  /// election, no majority) reads wait for one, until their timeout.
  kLeaderOnly,
  /// The closest replica: one on this host when there is one, else one picked per
  /// client (its reads keep to it; a failure moves them to the next). Any replica
  /// answers at once from the writes it has applied, without asking the others.
  /// Weaker: such a read sees only committed writes (never one later rolled back),
  /// but it may miss writes acknowledged before it began (a replica applies them a
  /// moment after the leader, or much later when it was cut off), and two reads that
  /// reach different replicas may see the tablet go back in time. Bounded: a replica
  /// answers only if it held everything its leader had committed at most
  /// --follower_read_max_lag_ms (a tablet server flag, 30 s) ago; one further behind,
  /// catching up, or needing a copy of the tablet refuses, and the read goes to
  /// another replica. So it answers while the tablet has no leader for up to that
  /// long.
  kClosestReplica,
};

/// Creates a table: schema, partitioning, replicas. Get one from
/// Client::NewTableCreator(); set schema() before building rows with NewRow().
class TableCreator {
 public:
  ~TableCreator();

  TableCreator& table_name(std::string name);
  /// Copied. Rows from NewRow() point at this copy: call schema() once.
  TableCreator& schema(const Schema& schema);
  /// Adds a hash dimension over key columns `columns` with `num_buckets` (>= 2) buckets.
  TableCreator& add_hash_partitions(std::vector<std::string> columns, int32_t num_buckets,
                                    uint32_t seed = 0);
  /// Range partitioning on these key columns (default: none, one unbounded range).
  TableCreator& set_range_partition_columns(std::vector<std::string> columns);
  /// A row of this table's schema, for split points and bounds. REQUIRES: schema() set.
  Row NewRow() const;
  /// Splits the ranges at `split` (every range column set).
  TableCreator& add_range_partition_split(const Row& split);
  /// Adds the range [lower, upper); a row with no range column set is unbounded.
  TableCreator& add_range_partition(const Row& lower, const Row& upper);
  /// Replicas per tablet (0 = the master's default).
  TableCreator& num_replicas(int n);
  /// A free-text description of the table.
  TableCreator& comment(std::string comment);
  /// Wait until every tablet runs (default true).
  TableCreator& wait(bool wait);
  /// Overall deadline of Create(): default the client's admin timeout.
  TableCreator& timeout(MonoDelta timeout);

  /// Sends CreateTable and, with wait(true), polls IsCreateTableDone until done.
  /// InvalidArgument for a bad local definition; the master's error otherwise
  /// (AlreadyPresent for an existing name); TimedOut when the tablets did not all
  /// start in time (the table exists and keeps starting).
  Status Create();

 private:
  friend class Client;
  explicit TableCreator(std::shared_ptr<Client> client);

  std::shared_ptr<Client> client_;
  std::string name_;
  std::unique_ptr<Schema> schema_;
  std::vector<HashDimension> hash_;
  std::vector<std::string> range_columns_;
  std::vector<Row> splits_;
  std::vector<std::pair<Row, Row>> bounds_;
  int num_replicas_ = 0;
  std::string comment_;
  bool wait_ = true;
  MonoDelta timeout_;
};

/// Alters a table: its columns, name, comment and range partitions, as one change
/// applied whole or not at all, online (no rewrite of stored rows; every replica of
/// every tablet switches at one point of its log). Get one from
/// Client::NewTableAlterer(). The primary key and column types cannot change; an added
/// column must be nullable or have a default, which the rows already stored read as
/// its value. Sessions, Tables and Scanners opened before keep working: writes built
/// against the old schema are translated to the new one by column id (a write that
/// sets a dropped column fails for that row), reads name columns as they are now.
class TableAlterer {
 public:
  ~TableAlterer();

  TableAlterer& RenameTo(std::string new_name);
  TableAlterer& SetComment(std::string comment);
  /// A non-key column, nullable or with a default (`default_value` absent: none).
  TableAlterer& AddColumn(std::string name, DataType type, bool nullable,
                          Value default_value = Value(), std::string comment = "");
  TableAlterer& DropColumn(std::string name);
  TableAlterer& RenameColumn(std::string name, std::string new_name);
  /// Rows written from now on that do not set the column get `value`.
  TableAlterer& SetColumnDefault(std::string name, Value value);
  TableAlterer& RemoveColumnDefault(std::string name);
  TableAlterer& SetColumnComment(std::string name, std::string comment);
  /// The range [lower, upper) with its hash buckets: rows of the table (its key
  /// columns are read; a row with no range column set is unbounded).
  TableAlterer& AddRangePartition(const Row& lower, const Row& upper);
  /// An existing range exactly; its tablets and their rows are deleted.
  TableAlterer& DropRangePartition(const Row& lower, const Row& upper);
  /// Wait until every tablet has the change (default true).
  TableAlterer& wait(bool wait);
  /// Overall deadline of Alter(): default the client's admin timeout.
  TableAlterer& timeout(MonoDelta timeout);

  /// Sends AlterTable and, with wait(true), polls IsAlterTableDone until done. The
  /// master's error when it refuses (NotFound for an unknown table or column,
  /// AlreadyPresent for a name taken, InvalidArgument naming the step and why);
  /// TimedOut when the tablets did not all take it in time (the change is made and
  /// keeps being carried to them).
  Status Alter();

 private:
  friend class Client;
  struct Step;
  TableAlterer(std::shared_ptr<Client> client, std::string name);

  std::shared_ptr<Client> client_;
  std::string name_;
  std::string new_name_;
  std::optional<std::string> comment_;
  std::vector<std::unique_ptr<Step>> steps_;
  bool wait_ = true;
  MonoDelta timeout_;
  Status error_;  // the first bad argument, reported by Alter()
};

/// One write to one row: its type and a Row of the table's schema. Set columns by
/// name or index; a wrong type, an unknown column or NULL in a NOT NULL column is an
/// error from Set itself. Strings are copied into the operation.
class WriteOperation {
 public:
  ~WriteOperation();
  WriteOperation(const WriteOperation&) = delete;
  WriteOperation& operator=(const WriteOperation&) = delete;

  RowOpType type() const { return type_; }
  const Table& table() const { return *table_; }
  const Row& row() const { return row_; }
  /// The row itself. Row::Set borrows string bytes: they must outlive the flush.
  Row* mutable_row() { return &row_; }

  Status Set(std::string_view column, const Cell& value) { return row_.SetCopy(column, value); }
  Status Set(int column, const Cell& value) { return row_.SetCopy(column, value); }
  Status SetNull(std::string_view column) { return row_.SetNull(column); }
  Status SetNull(int column) { return row_.SetNull(column); }

  /// A number of the caller's choosing (default 0), e.g. the input line the row came
  /// from. It travels with the operation through the session in every flush mode: the
  /// failed_op() of the operation's WriteError carries the same tag. That operation is
  /// a copy, not the object applied (the session frees operations once encoded), so
  /// match errors to what was applied by tag, never by address.
  void set_tag(int64_t tag) { tag_ = tag; }
  int64_t tag() const { return tag_; }

  /// "INSERT (key=1, v="a")".
  std::string ToString() const;

 private:
  friend class Table;
  WriteOperation(std::shared_ptr<const Table> table, RowOpType type);

  std::shared_ptr<const Table> table_;  // keeps the schema alive
  RowOpType type_;
  Row row_;
  int64_t tag_ = 0;
};

/// A block of result rows (a scan batch, or the rows a Get found), in the projection
/// schema. Owns its bytes; cheap to move. Accessors check the column type.
class ScanBatch {
 public:
  /// A borrowed view of one row; valid while the batch lives.
  class RowPtr {
   public:
    bool IsNull(int col) const;
    /// The cell, unchecked (a NULL cell for NULL). REQUIRES: 0 <= col < columns.
    Cell cell(int col) const;
    Result<bool> GetBool(int col) const;
    Result<int8_t> GetInt8(int col) const;
    Result<int16_t> GetInt16(int col) const;
    Result<int32_t> GetInt32(int col) const;
    Result<int64_t> GetInt64(int col) const;
    Result<int64_t> GetUnixtimeMicros(int col) const;
    Result<float> GetFloat(int col) const;
    Result<double> GetDouble(int col) const;
    /// STRING and BINARY; the bytes live as long as the batch.
    Result<Slice> GetString(int col) const;
    /// By column name: NotFound for a column not in the projection.
    Result<int64_t> GetInt64(std::string_view col) const;
    Result<int32_t> GetInt32(std::string_view col) const;
    Result<Slice> GetString(std::string_view col) const;
    /// "(key=1, v="a")".
    std::string ToString() const;

   private:
    friend class ScanBatch;
    RowPtr(const internal::ScanBatchData* b, int64_t row) : b_(b), row_(row) {}
    Result<Cell> Typed(int col, DataType t1, DataType t2) const;
    const internal::ScanBatchData* b_;
    int64_t row_;
  };

  ScanBatch();
  ~ScanBatch();
  ScanBatch(ScanBatch&&) noexcept;
  ScanBatch& operator=(ScanBatch&&) noexcept;

  int num_rows() const;
  /// REQUIRES: 0 <= i < num_rows().
  RowPtr row(int i) const;
  /// The columns of each row. REQUIRES: the batch came from a scan or Get.
  const Schema& projection_schema() const;
  /// Bytes of the batch's row data as received (fixed-size cells and the bytes of
  /// strings and binaries), e.g. for throughput figures.
  size_t data_size_bytes() const;

 private:
  friend class internal::ScanBatchData;
  std::shared_ptr<internal::ScanBatchData> data_;
};

/// The answer of Table::Get / MultiGet: per requested key whether it was found and,
/// if so, its row.
class GetResult {
 public:
  size_t num_keys() const { return locations_.size(); }
  bool found(size_t key_index) const { return locations_[key_index].batch >= 0; }
  size_t num_found() const;
  /// The row of key `key_index`, or nullopt when it was missing.
  std::optional<ScanBatch::RowPtr> row(size_t key_index) const;

 private:
  friend class internal::GetCall;
  struct Location {
    int batch = -1;
    int row = -1;
  };
  std::vector<ScanBatch> batches_;
  std::vector<Location> locations_;  // one per requested key
};

/// An open table: its schema and partitioning, and the factory of its operations and
/// predicates. Immutable; shared by the operations and scanners made from it.
class Table : public std::enable_shared_from_this<Table> {
 public:
  ~Table();

  const std::string& name() const { return name_; }
  const std::string& id() const { return id_; }
  const Schema& schema() const { return schema_; }
  const PartitionSchema& partition_schema() const { return partition_schema_; }
  int num_replicas() const { return num_replicas_; }
  /// The table's comment ("" when none), as the master had it when the table was opened.
  const std::string& comment() const { return comment_; }
  const std::shared_ptr<Client>& client() const { return client_; }

  std::unique_ptr<WriteOperation> NewInsert() const { return NewOp(RowOpType::kInsert); }
  std::unique_ptr<WriteOperation> NewUpsert() const { return NewOp(RowOpType::kUpsert); }
  std::unique_ptr<WriteOperation> NewUpdate() const { return NewOp(RowOpType::kUpdate); }
  std::unique_ptr<WriteOperation> NewDelete() const { return NewOp(RowOpType::kDelete); }
  std::unique_ptr<WriteOperation> NewInsertIgnore() const {
    return NewOp(RowOpType::kInsertIgnore);
  }
  std::unique_ptr<WriteOperation> NewUpdateIgnore() const {
    return NewOp(RowOpType::kUpdateIgnore);
  }
  std::unique_ptr<WriteOperation> NewDeleteIgnore() const {
    return NewOp(RowOpType::kDeleteIgnore);
  }
  /// An empty row of this table (for Get keys and scan bounds).
  Row NewRow() const { return Row(&schema_); }

  /// `column <op> value`. InvalidArgument for a value of another type than the
  /// column's or NULL; NotFound for an unknown column.
  Result<ColumnPredicate> NewComparisonPredicate(std::string_view column,
                                                 ColumnPredicate::CompareOp op,
                                                 const Cell& value) const;
  Result<ColumnPredicate> NewInListPredicate(std::string_view column,
                                             const std::vector<Cell>& values) const;
  Result<ColumnPredicate> NewIsNullPredicate(std::string_view column) const;
  Result<ColumnPredicate> NewIsNotNullPredicate(std::string_view column) const;

  /// Point lookup of one full primary key (every key column set in `key`) through
  /// the tablet server's Get RPC. `projection` names the columns (empty = all);
  /// `selection` which replica answers (see ReplicaSelection).
  Result<GetResult> Get(const Row& key, const std::vector<std::string>& projection = {},
                        ReplicaSelection selection = ReplicaSelection::kLeaderOnly) const;
  /// Many keys at once: grouped per tablet, one Get RPC per tablet, in parallel.
  /// The result lists the keys in request order.
  Result<GetResult> MultiGet(const std::vector<Row>& keys,
                             const std::vector<std::string>& projection = {},
                             ReplicaSelection selection = ReplicaSelection::kLeaderOnly) const;

 private:
  friend class Client;
  Table(std::shared_ptr<Client> client, std::string name, std::string id, Schema schema,
        PartitionSchema partition_schema, int num_replicas);
  std::unique_ptr<WriteOperation> NewOp(RowOpType type) const;

  const std::shared_ptr<Client> client_;
  const std::string name_;
  const std::string id_;
  const Schema schema_;
  const PartitionSchema partition_schema_;
  const int num_replicas_;
  std::string comment_;  // set by Client::OpenTable
  // The schema of rows read with every column (Get's default projection), made once.
  std::shared_ptr<const Schema> full_projection_;
  friend class internal::GetCall;
};

/// A failed write: the operation (a copy of the one applied, with its tag) and why
/// it failed. TimedOut means the outcome is unknown: the row may have been written.
class WriteError {
 public:
  WriteError(std::unique_ptr<WriteOperation> op, Status status)
      : op_(std::move(op)), status_(std::move(status)) {}
  const WriteOperation& failed_op() const { return *op_; }
  std::unique_ptr<WriteOperation> release_failed_op() { return std::move(op_); }
  const Status& status() const { return status_; }

 private:
  std::unique_ptr<WriteOperation> op_;
  Status status_;
};

/// A context for writes: buffers operations and sends them, grouped per tablet (one
/// Write RPC per tablet per batch, sent in parallel). Row errors are kept until
/// fetched with GetPendingErrors.
///
/// Flush modes:
///  - kAutoFlushSync (default): Apply sends the operation and waits; it returns the
///    row's error (which is also kept as a pending error).
///  - kAutoFlushBackground: Apply buffers and returns at once while the buffer has
///    room. A buffer filled to the watermark is sent in the background; a partly
///    filled one is sent after the flush interval. When the buffer is full and the
///    maximum number of batches is in flight, Apply blocks until one completes (it
///    never drops an operation).
///  - kManualFlush: Apply buffers; Flush sends. Apply returns Incomplete when the
///    buffer is full.
/// Writes are retried (same request id, so a retried write applies once) until the
/// session timeout; a write is reported failed only when it cannot have applied, or
/// as TimedOut when the deadline passed with its outcome unknown.
class Session {
 public:
  enum class FlushMode { kAutoFlushSync, kAutoFlushBackground, kManualFlush };

  /// Flushes what is buffered and waits for it (see Close()).
  ~Session();

  /// InvalidArgument while operations are buffered (flush first).
  Status SetFlushMode(FlushMode mode);
  FlushMode flush_mode() const;
  /// Buffer size in bytes (default 7 MiB). IllegalState while operations are buffered.
  Status SetMutationBufferSpace(size_t bytes);
  /// Fraction of the buffer at which a background flush starts (default 0.5), in (0, 1].
  Status SetMutationBufferFlushWatermark(double fraction);
  /// Buffers, current one included, that may exist at once (default 2, >= 1).
  Status SetMutationBufferMaxNum(int n);
  /// Background mode: a non-empty buffer is sent after this long (default 1000 ms).
  Status SetFlushInterval(MonoDelta interval);
  /// Deadline of each flushed batch, from the moment it is sent (default: the
  /// client's RPC timeout). InvalidArgument unless positive. Within it, a batch for a
  /// replicated tablet waits at most 3 s for one replica (a stopped leader still
  /// accepts connections) before trying the others; the retry keeps the request id,
  /// so the write is applied once.
  Status SetTimeout(MonoDelta timeout);

  /// Takes `op`. InvalidArgument, at once, for an operation whose row misses its key
  /// or columns its type needs; IllegalState after Close(). See the flush modes.
  Status Apply(std::unique_ptr<WriteOperation> op);
  /// Sends everything buffered and waits for every batch in flight. IOError when some
  /// operations failed (see GetPendingErrors).
  Status Flush();
  /// Sends what is buffered; `done` runs (on a client thread; it must not block)
  /// when that batch completed, with OK or IOError.
  void FlushAsync(std::function<void(const Status&)> done);
  /// Flushes, waits, and refuses further operations.
  Status Close();

  bool HasPendingOperations() const;
  /// Operations buffered, not yet sent.
  int CountBufferedOperations() const;

  int CountPendingErrors() const;
  /// Moves the kept errors out. `overflowed` is set when errors were dropped because
  /// more than 10000 were kept.
  void GetPendingErrors(std::vector<std::unique_ptr<WriteError>>* errors, bool* overflowed);

  /// What became of the operations this session accepted (every Apply that returned
  /// OK, and in kAutoFlushSync every Apply that returned a row's error), counted from
  /// each operation's own outcome, errors dropped by the collector included. An
  /// operation still buffered or in flight is in none of the three; after Flush()
  /// they add up to every operation accepted.
  struct WriteCounts {
    int64_t succeeded = 0;  ///< acknowledged by the tablet server: applied
    int64_t failed = 0;     ///< failed and not applied (a row error, a batch refused)
    int64_t timed_out = 0;  ///< failed with TimedOut: outcome unknown, may have applied
  };
  WriteCounts GetWriteCounts() const;

  class NYALA_NO_EXPORT Data;
  Data* data_for_tests() const { return data_.get(); }

 private:
  friend class Client;
  explicit Session(std::shared_ptr<Client> client);
  std::shared_ptr<Data> data_;
};

/// Reads rows of one table: a projection, predicates and key bounds; tablets are
/// scanned one after the other in partition-key order, skipping those the key
/// predicates rule out (equality on all columns of a hash dimension picks its bucket;
/// range bounds prune range partitions).
///
/// Guarantees. Each tablet is read at its leader, linearizably: a tablet's rows are
/// one snapshot of it taken when its scan began, holding every write acknowledged
/// before then. If the tablet server dies in the middle of a tablet (a replicated
/// one) or does not answer a batch within 3 s, the scan continues on the tablet's
/// leader (a new one, or the same after a pause) from the key after the last row it
/// returned: the rows after that point come from a second snapshot, taken when the
/// scan resumed, so no row is returned twice or skipped, but the tablet's rows are no
/// longer one snapshot (a row written between the two may be seen, and one deleted
/// may be missed, as with Kudu's fault-tolerant scans). Different tablets are read at
/// different times.
class Scanner {
 public:
  enum class ReadMode { kReadLatest, kReadAtSnapshot };

  /// `table` is kept alive by the scanner.
  explicit Scanner(std::shared_ptr<const Table> table);
  ~Scanner();  ///< closes the open server-side scanner, if any
  Scanner(const Scanner&) = delete;
  Scanner& operator=(const Scanner&) = delete;

  /// Setters: before Open() only (IllegalState after).
  /// Columns to return, in this order (default: all). NotFound for an unknown name.
  Status SetProjectedColumnNames(std::vector<std::string> names);
  /// ANDed with the others; build it with the Table's New*Predicate.
  Status AddPredicate(ColumnPredicate predicate);
  /// Rows with primary key >= `key` (every key column set).
  Status AddLowerBound(const Row& key);
  /// Rows with primary key < `key`.
  Status AddExclusiveUpperBound(const Row& key);
  /// At most this many rows over the whole scan (0 = all).
  Status SetLimit(int64_t limit);
  /// Only the tablets whose partitions overlap the partition keys [start, end)
  /// ("" end: to the last tablet), e.g. one tablet's partition_key_start and
  /// partition_key_end (TabletInfo::partition) to scan that tablet alone, as Kudu's
  /// scan tokens do. Default: every tablet.
  Status SetPartitionKeyRange(std::string start, std::string end);
  /// Bytes per batch the server aims for (0 = server default, 1 MiB).
  Status SetBatchSizeBytes(uint32_t bytes);
  /// kReadLatest (the default) only: NotSupported for kReadAtSnapshot, which needs
  /// history the tablet servers do not keep yet.
  Status SetReadMode(ReadMode mode);
  /// Which replica of each tablet is read (default kLeaderOnly; see ReplicaSelection).
  /// With kClosestReplica the class comment's guarantees are ReplicaSelection's.
  Status SetSelection(ReplicaSelection selection);
  /// Deadline of each batch RPC (default: the client's RPC timeout). InvalidArgument
  /// unless positive.
  Status SetTimeout(MonoDelta timeout);
  /// While open, send ScannerKeepAlive every `period` (zero = never, the default).
  /// InvalidArgument when negative.
  Status SetKeepAlivePeriod(MonoDelta period);

  /// Plans the scan: looks up the table's tablets and prunes them. Rows come with
  /// NextBatch().
  Status Open();
  bool HasMoreRows() const;
  /// The next batch (possibly empty). A tablet server lost mid-scan is reported as
  /// NetworkError naming the tablet and the server; an expired scanner as NotFound.
  Status NextBatch(ScanBatch* batch);
  /// Resets the idle timer of the current server-side scanner.
  Status KeepAlive();
  /// Releases the current server-side scanner. Idempotent.
  void Close();

  /// Tablets the plan kept after pruning (valid after Open()).
  int NumTabletsToScanForTests() const;

  class NYALA_NO_EXPORT Data;

 private:
  std::unique_ptr<Data> data_;
};

/// The entry point: catalog operations and the factory of sessions and tables.
class Client : public std::enable_shared_from_this<Client> {
 public:
  ~Client();

  std::unique_ptr<TableCreator> NewTableCreator();
  /// NotFound when there is no such table.
  Result<bool> IsCreateTableInProgress(const std::string& name);
  /// An alteration of table `name` (see TableAlterer).
  std::unique_ptr<TableAlterer> NewTableAlterer(const std::string& name);
  /// Whether an alteration of the table is still being carried to its tablets (or a
  /// range partition it added is still starting). NotFound when there is no such table.
  Result<bool> IsAlterTableInProgress(const std::string& name);
  Status DeleteTable(const std::string& name);
  /// Names of the tables whose name contains `filter` (all when empty), sorted.
  Result<std::vector<std::string>> ListTables(const std::string& filter = "");
  /// Whether a table of exactly this name exists; an error (not false) when the
  /// master cannot say, e.g. it is unreachable.
  Result<bool> TableExists(const std::string& name);
  /// NotFound when there is no such table.
  Result<std::shared_ptr<Table>> OpenTable(const std::string& name);
  Result<std::vector<TabletServerInfo>> ListTabletServers();
  /// Every tablet of a table in partition-key order, straight from the master.
  Result<std::vector<TabletInfo>> ListTabletsOfTable(const std::string& name);
  /// The master's registration; an error when it is unreachable.
  Result<MasterStatus> GetMasterStatus();
  std::shared_ptr<Session> NewSession();

  MonoDelta default_rpc_timeout() const;
  MonoDelta default_admin_operation_timeout() const;

 private:
  friend class ClientBuilder;
  friend internal::ClientData* internal::DataOf(const Client& client);
  NYALA_NO_EXPORT explicit Client(std::unique_ptr<internal::ClientData> data);
  std::unique_ptr<internal::ClientData> data_;
};

NYALA_EXPORT_END

}  // namespace nyala::client
