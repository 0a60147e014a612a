// WriteRpc: the Write RPC of one batch to one tablet, with its retries. Owned by its
// Batcher; runs on reactor and timer threads while the batcher keeps itself alive.
// See batcher.h for the retry policy.
//
// Schema changes: rows are encoded against the Table's schema. When the client knows
// a newer schema of the table (ClientData::NewestSchema), or the tablet answers
// TABLET_HAS_A_NEWER_SCHEMA (the master's schema is then fetched), the block is
// translated to the newer schema by column id before it is sent: a renamed column
// keeps its value, an added one is left for the server to default, and a row that sets
// a column the table dropped fails alone (InvalidArgument naming the column). The
// block, row indexes and row count callers see stay the original ones.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "client/meta_cache.h"
#include "nyala/client.h"
#include "rpc/rpc_controller.h"
#include "tserver/tserver.pb.h"

namespace nyala::client::internal {

class Batcher;
struct TabletBuffer;

class WriteRpc {
 public:
  // Takes the rows `buffer` encoded (it must hold some); `buffer` and the batcher
  // must outlive this object.
  WriteRpc(Batcher* batcher, TabletBuffer* buffer);
  ~WriteRpc();

  // Sends the request (first attempt).
  void Send();

  // After the RPC finished: the outcome. Either failed_all() is not OK (every row
  // failed with it) or row_errors() lists the rows that failed, by index in block().
  const Status& failed_all() const { return failed_all_; }
  const std::vector<std::pair<int, Status>>& row_errors() const { return row_errors_; }
  const RowOperationsPB& block() const {
    return original_block_ ? *original_block_ : req_.row_operations();
  }
  // The buffer the rows came from (their tags).
  const TabletBuffer& buffer() const { return *buffer_; }
  int num_rows() const { return num_rows_; }
  const Table& table() const;

 private:
  void OnResponse();
  // Translates the block to `schema` when it is newer than the one it is in (see the
  // file comment); an error fails the whole batch.
  Status TranslateTo(std::shared_ptr<const Schema> schema);
  // Fetches the table's schema from the master, translates, sends again.
  void RefreshSchema();
  // Backs off, then sends again (after a fresh lookup when `relookup`).
  void Retry(const Status& why, bool relookup, MonoDelta max_backoff = MonoDelta::FromSeconds(2));
  void Relookup();
  void FailAll(const Status& s);
  void Done();

  Batcher* const batcher_;
  TabletBuffer* const buffer_;
  TabletPtr tablet_;
  std::shared_ptr<RemoteTabletServer> server_;  // the replica of the call in flight
  Status last_replica_answer_;  // the last error a tablet server answered (not a dead one's)
  int num_rows_ = 0;
  std::string table_id_;
  tserver::WriteRequestPB req_;
  tserver::WriteResponsePB resp_;
  rpc::RpcController rpc_;
  int64_t seq_no_ = -1;
  int attempt_ = 0;
  Status failed_all_;
  std::vector<std::pair<int, Status>> row_errors_;
  // The schema the block is in now (the Table's until translated).
  std::shared_ptr<const Schema> schema_;
  // Once translated: the block as the batcher encoded it, each row sent's index in it,
  // and the rows that failed the translation.
  std::unique_ptr<RowOperationsPB> original_block_;
  std::vector<int> original_index_;
  std::vector<std::pair<int, Status>> translation_errors_;
  int schema_refreshes_ = 0;
  Status translation_status_;  // a translation at construction that failed
};

}  // namespace nyala::client::internal
