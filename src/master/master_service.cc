#include "master/master_service.h"

#include "master/catalog_manager.h"
#include "master/master.h"
#include "master/master.pb.h"
#include "rpc/rpc_context.h"

namespace nyala::master {

using rpc::RpcContext;

void MasterServiceImpl::Ping(const PingRequestPB*, PingResponsePB*, RpcContext* ctx) {
  ctx->RespondSuccess();
}

void MasterServiceImpl::TSHeartbeat(const TSHeartbeatRequestPB* req, TSHeartbeatResponsePB* resp,
                                    RpcContext* ctx) {
  master_->catalog_manager()->TSHeartbeat(*req, resp);
  ctx->RespondSuccess();
}

void MasterServiceImpl::CreateTable(const CreateTableRequestPB* req, CreateTableResponsePB* resp,
                                    RpcContext* ctx) {
  master_->catalog_manager()->CreateTable(*req, resp);
  ctx->RespondSuccess();
}

void MasterServiceImpl::IsCreateTableDone(const IsCreateTableDoneRequestPB* req,
                                          IsCreateTableDoneResponsePB* resp, RpcContext* ctx) {
  master_->catalog_manager()->IsCreateTableDone(*req, resp);
  ctx->RespondSuccess();
}

void MasterServiceImpl::AlterTable(const AlterTableRequestPB* req, AlterTableResponsePB* resp,
                                   RpcContext* ctx) {
  master_->catalog_manager()->AlterTable(*req, resp);
  ctx->RespondSuccess();
}

void MasterServiceImpl::IsAlterTableDone(const IsAlterTableDoneRequestPB* req,
                                         IsAlterTableDoneResponsePB* resp, RpcContext* ctx) {
  master_->catalog_manager()->IsAlterTableDone(*req, resp);
  ctx->RespondSuccess();
}

void MasterServiceImpl::DeleteTable(const DeleteTableRequestPB* req, DeleteTableResponsePB* resp,
                                    RpcContext* ctx) {
  master_->catalog_manager()->DeleteTable(*req, resp);
  ctx->RespondSuccess();
}

void MasterServiceImpl::ListTables(const ListTablesRequestPB* req, ListTablesResponsePB* resp,
                                   RpcContext* ctx) {
  master_->catalog_manager()->ListTables(*req, resp);
  ctx->RespondSuccess();
}

void MasterServiceImpl::GetTableSchema(const GetTableSchemaRequestPB* req,
                                       GetTableSchemaResponsePB* resp, RpcContext* ctx) {
  master_->catalog_manager()->GetTableSchema(*req, resp);
  ctx->RespondSuccess();
}

void MasterServiceImpl::GetTableLocations(const GetTableLocationsRequestPB* req,
                                          GetTableLocationsResponsePB*, RpcContext* ctx) {
  std::shared_ptr<const std::string> bytes = master_->catalog_manager()->GetTableLocations(*req);
  ctx->RespondSuccessWithSerializedBody(Slice(*bytes));
}

void MasterServiceImpl::ListTabletServers(const ListTabletServersRequestPB* req,
                                          ListTabletServersResponsePB* resp, RpcContext* ctx) {
  master_->catalog_manager()->ListTabletServers(*req, resp);
  ctx->RespondSuccess();
}

void MasterServiceImpl::GetMasterRegistration(const GetMasterRegistrationRequestPB*,
                                              GetMasterRegistrationResponsePB* resp,
                                              RpcContext* ctx) {
  master_->FillRegistration(resp);
  ctx->RespondSuccess();
}

void MasterServiceImpl::ListTablets(const ListTabletsRequestPB* req, ListTabletsResponsePB* resp,
                                    RpcContext* ctx) {
  master_->catalog_manager()->ListTablets(*req, resp);
  ctx->RespondSuccess();
}

void MasterServiceImpl::GetTableStatistics(const GetTableStatisticsRequestPB* req,
                                           GetTableStatisticsResponsePB* resp, RpcContext* ctx) {
  master_->catalog_manager()->GetTableStatistics(*req, resp);
  ctx->RespondSuccess();
}

void MasterAdminServiceImpl::UnregisterTServer(const UnregisterTServerRequestPB* req,
                                               UnregisterTServerResponsePB* resp, RpcContext* ctx) {
  master_->catalog_manager()->UnregisterTServer(*req, resp);
  ctx->RespondSuccess();
}

void MasterAdminServiceImpl::ChangeTServerState(const ChangeTServerStateRequestPB* req,
                                                ChangeTServerStateResponsePB* resp,
                                                RpcContext* ctx) {
  master_->catalog_manager()->ChangeTServerState(*req, resp);
  ctx->RespondSuccess();
}

void MasterAdminServiceImpl::MoveReplica(const MoveReplicaRequestPB* req,
                                         MoveReplicaResponsePB* resp, RpcContext* ctx) {
  master_->catalog_manager()->MoveReplica(*req, resp);
  ctx->RespondSuccess();
}

void MasterAdminServiceImpl::SetReplicationFactor(const SetReplicationFactorRequestPB* req,
                                                  SetReplicationFactorResponsePB* resp,
                                                  RpcContext* ctx) {
  master_->catalog_manager()->SetReplicationFactor(*req, resp);
  ctx->RespondSuccess();
}

void MasterAdminServiceImpl::Rebalance(const RebalanceRequestPB* req, RebalanceResponsePB* resp,
                                       RpcContext* ctx) {
  master_->catalog_manager()->Rebalance(*req, resp);
  ctx->RespondSuccess();
}

}  // namespace nyala::master
