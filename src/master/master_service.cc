#include "master/master_service.h"

#include "master/catalog_manager.h"
#include "master/master.h"
#include "master/master.pb.h"
#include "rpc/rpc_context.h"

namespace nyala::master {

using rpc::MethodCost;
using rpc::RpcContext;

MasterServiceImpl::MasterServiceImpl(Master* m) : ServiceIf(kServiceName) {
  RegisterMethod<PingRequestPB, PingResponsePB>(
      "Ping", [](const PingRequestPB*, PingResponsePB*, RpcContext* ctx) { ctx->RespondSuccess(); },
      MethodCost::kCheap);
  RegisterMethod<TSHeartbeatRequestPB, TSHeartbeatResponsePB>(
      "TSHeartbeat",
      [m](const TSHeartbeatRequestPB* req, TSHeartbeatResponsePB* resp, RpcContext* ctx) {
        m->catalog_manager()->TSHeartbeat(*req, resp);
        ctx->RespondSuccess();
      });
  RegisterMethod<CreateTableRequestPB, CreateTableResponsePB>(
      "CreateTable",
      [m](const CreateTableRequestPB* req, CreateTableResponsePB* resp, RpcContext* ctx) {
        m->catalog_manager()->CreateTable(*req, resp);
        ctx->RespondSuccess();
      });
  RegisterMethod<IsCreateTableDoneRequestPB, IsCreateTableDoneResponsePB>(
      "IsCreateTableDone", [m](const IsCreateTableDoneRequestPB* req,
                               IsCreateTableDoneResponsePB* resp, RpcContext* ctx) {
        m->catalog_manager()->IsCreateTableDone(*req, resp);
        ctx->RespondSuccess();
      });
  RegisterMethod<DeleteTableRequestPB, DeleteTableResponsePB>(
      "DeleteTable",
      [m](const DeleteTableRequestPB* req, DeleteTableResponsePB* resp, RpcContext* ctx) {
        m->catalog_manager()->DeleteTable(*req, resp);
        ctx->RespondSuccess();
      });
  RegisterMethod<ListTablesRequestPB, ListTablesResponsePB>(
      "ListTables",
      [m](const ListTablesRequestPB* req, ListTablesResponsePB* resp, RpcContext* ctx) {
        m->catalog_manager()->ListTables(*req, resp);
        ctx->RespondSuccess();
      });
  RegisterMethod<GetTableSchemaRequestPB, GetTableSchemaResponsePB>(
      "GetTableSchema",
      [m](const GetTableSchemaRequestPB* req, GetTableSchemaResponsePB* resp, RpcContext* ctx) {
        m->catalog_manager()->GetTableSchema(*req, resp);
        ctx->RespondSuccess();
      });
  RegisterMethod<GetTableLocationsRequestPB, GetTableLocationsResponsePB>(
      "GetTableLocations",
      [m](const GetTableLocationsRequestPB* req, GetTableLocationsResponsePB*, RpcContext* ctx) {
        std::shared_ptr<const std::string> bytes = m->catalog_manager()->GetTableLocations(*req);
        ctx->RespondSuccessWithSerializedBody(Slice(*bytes));
      });
  RegisterMethod<ListTabletServersRequestPB, ListTabletServersResponsePB>(
      "ListTabletServers", [m](const ListTabletServersRequestPB* req,
                               ListTabletServersResponsePB* resp, RpcContext* ctx) {
        m->catalog_manager()->ListTabletServers(*req, resp);
        ctx->RespondSuccess();
      });
  RegisterMethod<GetMasterRegistrationRequestPB, GetMasterRegistrationResponsePB>(
      "GetMasterRegistration", [m](const GetMasterRegistrationRequestPB*,
                                   GetMasterRegistrationResponsePB* resp, RpcContext* ctx) {
        m->FillRegistration(resp);
        ctx->RespondSuccess();
      });
}

}  // namespace nyala::master
