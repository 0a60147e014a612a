// WriteRpc: the Write RPC of one batch to one tablet, with its retries. Owned by its
// Batcher; runs on reactor and timer threads while the batcher keeps itself alive.
// See batcher.h for the retry policy.
#pragma once

#include <memory>
#include <vector>

#include "client/meta_cache.h"
#include "rpc/rpc_controller.h"
#include "tserver/tserver.pb.h"

namespace nyala::client {
class Table;
}  // namespace nyala::client

namespace nyala::client::internal {

class Batcher;
struct InFlightOp;

class WriteRpc {
 public:
  // `ops` all belong to `tablet` and to one table; they live in the batcher.
  WriteRpc(Batcher* batcher, TabletPtr tablet, std::vector<InFlightOp*> ops);
  ~WriteRpc();

  // Builds the request; an operation that does not encode fails alone (and is
  // left out). Returns false when no operation is left to send.
  bool Encode(const Table& table);
  // Sends the request (first attempt).
  void Send();

 private:
  void OnResponse();
  // Backs off, then sends again (after a fresh lookup when `relookup`).
  void Retry(const Status& why, bool relookup);
  void Relookup();
  void FailAll(const Status& s);
  void Done();

  Batcher* const batcher_;
  TabletPtr tablet_;
  std::vector<InFlightOp*> ops_;
  std::string table_id_;
  tserver::WriteRequestPB req_;
  tserver::WriteResponsePB resp_;
  rpc::RpcController rpc_;
  int64_t seq_no_ = -1;
  int attempt_ = 0;
};

}  // namespace nyala::client::internal
