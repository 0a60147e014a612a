// For client unit tests: a fake master (GetTableSchema, GetTableLocations) and a
// fake tablet server (Write) serving one table on a real loopback messenger. Both
// count their calls and can be told to misbehave (too busy, tablet not found, hold
// responses) so the client's batching, retries and meta cache can be checked
// without the real daemons.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/row_operations.h"
#include "common/wire_protocol.h"
#include "master/master.service.h"
#include "nyala/partition.h"
#include "nyala/schema.h"
#include "rpc/fake_service_test_util.h"
#include "rpc/messenger.h"
#include "rpc/rpc_context.h"
#include "tserver/tserver.service.h"

namespace nyala::client::test {

// A gate handlers may wait at; open by default.
class Gate {
 public:
  void Close() {
    MutexLock l(mu_);
    open_ = false;
  }
  void Open() {
    MutexLock l(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void Pass() {
    UniqueLock l(mu_);
    cv_.wait(l, [this]() REQUIRES(mu_) { return open_; });
  }

 private:
  Mutex mu_;
  CondVar cv_;
  bool open_ GUARDED_BY(mu_) = true;
};

struct FakeTable {
  std::string id = "table-1";
  std::string name = "t";
  Schema schema;
  PartitionSchema partition_schema;
  std::vector<Partition> partitions;
  std::string TabletId(size_t i) const { return "tablet-" + std::to_string(i); }
};

class FakeMasterService : public master::MasterServiceIf {
 public:
  FakeMasterService(const FakeTable* table, rpc::Sockaddr* ts_addr)
      : table_(table), ts_addr_(ts_addr) {}

  void GetTableSchema(const master::GetTableSchemaRequestPB* req,
                      master::GetTableSchemaResponsePB* resp, rpc::RpcContext* ctx) override {
    if (req->table().table_name() != table_->name) {
      resp->mutable_error()->set_code(master::MasterErrorPB::TABLE_NOT_FOUND);
    } else {
      table_->schema.ToPB(resp->mutable_schema());
      table_->partition_schema.ToPB(resp->mutable_partition_schema());
      resp->set_table_id(table_->id);
      resp->set_table_name(table_->name);
      resp->set_num_replicas(1);
    }
    ctx->RespondSuccess();
  }
  void GetTableLocations(const master::GetTableLocationsRequestPB* req,
                         master::GetTableLocationsResponsePB* resp, rpc::RpcContext* ctx) override {
    locations_calls++;
    locations_gate.Pass();
    Locations(*req, resp);
    ctx->RespondSuccess();
  }
  NYALA_FAKE_UNIMPLEMENTED(master, Ping)
  NYALA_FAKE_UNIMPLEMENTED(master, TSHeartbeat)
  NYALA_FAKE_UNIMPLEMENTED(master, CreateTable)
  NYALA_FAKE_UNIMPLEMENTED(master, IsCreateTableDone)
  NYALA_FAKE_UNIMPLEMENTED(master, DeleteTable)
  NYALA_FAKE_UNIMPLEMENTED(master, ListTables)
  NYALA_FAKE_UNIMPLEMENTED(master, ListTabletServers)
  NYALA_FAKE_UNIMPLEMENTED(master, GetMasterRegistration)
  NYALA_FAKE_UNIMPLEMENTED(master, ListTablets)
  NYALA_FAKE_UNIMPLEMENTED(master, GetTableStatistics)
  NYALA_FAKE_UNIMPLEMENTED(master, AlterTable)
  NYALA_FAKE_UNIMPLEMENTED(master, IsAlterTableDone)

  std::atomic<int> locations_calls{0};
  std::atomic<uint32_t> ttl_ms{300000};
  Gate locations_gate;

 private:
  void Locations(const master::GetTableLocationsRequestPB& req,
                 master::GetTableLocationsResponsePB* resp) {
    resp->set_ttl_millis(ttl_ms.load());
    auto* ts = resp->add_ts_infos();
    ts->set_permanent_uuid("ts-1");
    auto* hp = ts->add_rpc_addresses();
    hp->set_host(ts_addr_->host());
    hp->set_port(ts_addr_->port());
    const uint32_t max = req.has_max_returned_locations() ? req.max_returned_locations() : 1u << 30;
    for (size_t i = 0; i < table_->partitions.size() && resp->tablet_locations_size() < int(max);
         i++) {
      const Partition& p = table_->partitions[i];
      if (!p.partition_key_end.empty() &&
          Slice(p.partition_key_end).compare(Slice(req.partition_key_start())) <= 0) {
        continue;
      }
      auto* loc = resp->add_tablet_locations();
      loc->set_tablet_id(table_->TabletId(i));
      p.ToPB(loc->mutable_partition());
      auto* r = loc->add_interned_replicas();
      r->set_ts_info_idx(0);
      r->set_role(master::LEADER);
    }
  }

  const FakeTable* table_;
  rpc::Sockaddr* ts_addr_;
};

class FakeTabletService : public tserver::TabletServerServiceIf {
 public:
  explicit FakeTabletService(const FakeTable* table) : table_(table) {}

  void Write(const tserver::WriteRequestPB* req, tserver::WriteResponsePB* resp,
             rpc::RpcContext* ctx) override {
    write_calls++;
    {
      MutexLock l(mu);
      if (ctx->request_id()) request_ids.push_back(*ctx->request_id());
    }
    write_gate.Pass();
    if (too_busy_left.load() > 0) {
      too_busy_left--;
      ctx->RespondRpcFailure(rpc::ErrorStatusPB::ERROR_SERVER_TOO_BUSY,
                             Status::ServiceUnavailable("too busy"));
      return;
    }
    if (not_found_left.load() > 0) {
      not_found_left--;
      resp->mutable_error()->set_code(tserver::TabletServerErrorPB::TABLET_NOT_FOUND);
      ctx->RespondSuccess();
      return;
    }
    DecodedRowOps ops;
    Status s =
        DecodeRowOperations(req->row_operations(), table_->schema, RowBlockKind::kWrites, &ops);
    if (!s.ok()) {
      resp->mutable_error()->set_code(tserver::TabletServerErrorPB::INVALID_ROW_BLOCK);
      StatusToPB(s, resp->mutable_error()->mutable_status());
      ctx->RespondSuccess();
      return;
    }
    MutexLock l(mu);
    rows_per_tablet[req->tablet_id()] += int(ops.size());
    rpcs_per_tablet[req->tablet_id()]++;
    for (size_t i = 0; i < ops.size(); i++) {
      std::string key = ops[i].row.cell(0).ToString();
      ops_per_tablet[req->tablet_id()].emplace_back(ops[i].type, key);
      if (IsDeleteLike(ops[i].type)) {
        keys.erase(key);
        continue;
      }
      if (ops[i].type == RowOpType::kInsert && keys.count(key)) {
        auto* e = resp->add_per_row_errors();
        e->set_row_index(int(i));
        StatusToPB(Status::AlreadyPresent("key exists", key), e->mutable_error());
        continue;
      }
      keys.insert(key);
    }
    ctx->RespondSuccess();
  }
  NYALA_FAKE_UNIMPLEMENTED(tserver, Get)
  bool TryGetOnReactor(const tserver::GetRequestPB*, tserver::GetResponsePB*,
                       rpc::RpcContext*) override {
    return false;
  }
  NYALA_FAKE_UNIMPLEMENTED(tserver, Scan)
  NYALA_FAKE_UNIMPLEMENTED(tserver, ScannerKeepAlive)
  NYALA_FAKE_UNIMPLEMENTED(tserver, Ping)

  std::atomic<int> write_calls{0};
  std::atomic<int> too_busy_left{0};
  std::atomic<int> not_found_left{0};
  Gate write_gate;
  Mutex mu;
  std::map<std::string, int> rows_per_tablet GUARDED_BY(mu);
  std::map<std::string, int> rpcs_per_tablet GUARDED_BY(mu);
  std::set<std::string> keys GUARDED_BY(mu);
  // Every operation received, in arrival order: (type, key cell as text).
  std::map<std::string, std::vector<std::pair<RowOpType, std::string>>> ops_per_tablet
      GUARDED_BY(mu);
  std::vector<rpc::RequestIdPB> request_ids GUARDED_BY(mu);

 private:
  const FakeTable* table_;
};

}  // namespace nyala::client::test
