// MasterServiceImpl: nyala.master.MasterService (declared in master.proto, which also
// says where each method runs) over a Master's catalog manager; MasterAdminServiceImpl:
// nyala.master.MasterAdminService, the operators' calls about tablet servers. Application errors
// travel in each response's `error` (MasterErrorPB) with RespondSuccess; RPC-level
// failures are the framework's. GetTableLocations answers with the already
// serialized response (RpcContext::RespondSuccessWithSerializedBody).
//
// Thread-safety: handlers run on any service thread; the Master must outlive the service.
#pragma once

#include "master/master.service.h"

namespace nyala::master {

class Master;

class MasterServiceImpl : public MasterServiceIf {
 public:
  explicit MasterServiceImpl(Master* master) : master_(master) {}

  void Ping(const PingRequestPB* req, PingResponsePB* resp, rpc::RpcContext* ctx) override;
  void TSHeartbeat(const TSHeartbeatRequestPB* req, TSHeartbeatResponsePB* resp,
                   rpc::RpcContext* ctx) override;
  void CreateTable(const CreateTableRequestPB* req, CreateTableResponsePB* resp,
                   rpc::RpcContext* ctx) override;
  void AlterTable(const AlterTableRequestPB* req, AlterTableResponsePB* resp,
                  rpc::RpcContext* ctx) override;
  void IsAlterTableDone(const IsAlterTableDoneRequestPB* req, IsAlterTableDoneResponsePB* resp,
                        rpc::RpcContext* ctx) override;
  void IsCreateTableDone(const IsCreateTableDoneRequestPB* req, IsCreateTableDoneResponsePB* resp,
                         rpc::RpcContext* ctx) override;
  void DeleteTable(const DeleteTableRequestPB* req, DeleteTableResponsePB* resp,
                   rpc::RpcContext* ctx) override;
  void ListTables(const ListTablesRequestPB* req, ListTablesResponsePB* resp,
                  rpc::RpcContext* ctx) override;
  void GetTableSchema(const GetTableSchemaRequestPB* req, GetTableSchemaResponsePB* resp,
                      rpc::RpcContext* ctx) override;
  void GetTableLocations(const GetTableLocationsRequestPB* req, GetTableLocationsResponsePB* resp,
                         rpc::RpcContext* ctx) override;
  void ListTabletServers(const ListTabletServersRequestPB* req, ListTabletServersResponsePB* resp,
                         rpc::RpcContext* ctx) override;
  void GetMasterRegistration(const GetMasterRegistrationRequestPB* req,
                             GetMasterRegistrationResponsePB* resp, rpc::RpcContext* ctx) override;
  void ListTablets(const ListTabletsRequestPB* req, ListTabletsResponsePB* resp,
                   rpc::RpcContext* ctx) override;
  void GetTableStatistics(const GetTableStatisticsRequestPB* req,
                          GetTableStatisticsResponsePB* resp, rpc::RpcContext* ctx) override;

 private:
  Master* const master_;
};

class MasterAdminServiceImpl : public MasterAdminServiceIf {
 public:
  explicit MasterAdminServiceImpl(Master* master) : master_(master) {}

  void UnregisterTServer(const UnregisterTServerRequestPB* req, UnregisterTServerResponsePB* resp,
                         rpc::RpcContext* ctx) override;
  void ChangeTServerState(const ChangeTServerStateRequestPB* req,
                          ChangeTServerStateResponsePB* resp, rpc::RpcContext* ctx) override;
  void MoveReplica(const MoveReplicaRequestPB* req, MoveReplicaResponsePB* resp,
                   rpc::RpcContext* ctx) override;
  void SetReplicationFactor(const SetReplicationFactorRequestPB* req,
                            SetReplicationFactorResponsePB* resp, rpc::RpcContext* ctx) override;
  void Rebalance(const RebalanceRequestPB* req, RebalanceResponsePB* resp,
                 rpc::RpcContext* ctx) override;

 private:
  Master* const master_;
};

}  // namespace nyala::master
