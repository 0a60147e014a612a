// The tablet server's two RPC services, declared in tserver.proto and
// tserver_admin.proto (which also say where each method runs):
//
//   TabletServiceImpl       nyala.tserver.TabletServerService: Write, Get, Scan,
//                           ScannerKeepAlive, Ping.
//   TabletAdminServiceImpl  nyala.tserver.TabletServerAdminService: CreateTablet,
//                           DeleteTablet, ListTablets (used by the master),
//                           LeaderStepDown (and ListTablets: the CLI),
//                           StartTabletCopy (used by tablets' leaders).
//
// Application errors (unknown tablet, malformed block, expired scanner...) are
// answered with RespondSuccess and a TabletServerErrorPB in the response, and
// logged; RespondFailure is kept for RPC-level failures (a stale retried write).
// Row results travel in two sidecars (rows, indirect data) in the layout of
// common/row_block.h, their indexes in the response's RowwiseRowBlockPB.
//
// Thread-safety: handlers run on service threads concurrently. The dependencies
// must outlive the services (the messenger is shut down first).
#pragma once

#include <string>

#include "tserver/tserver.service.h"
#include "tserver/tserver_admin.service.h"

namespace nyala::tserver {

class RequestTracker;
class Tablet;
class ScannerManager;
class TabletCopyRunner;
class TabletManager;
struct TServerMetrics;

struct TabletServiceDeps {
  TabletManager* tablets = nullptr;
  ScannerManager* scanners = nullptr;
  RequestTracker* tracker = nullptr;
  TServerMetrics* metrics = nullptr;  // may be null
};

class TabletServiceImpl : public TabletServerServiceIf {
 public:
  explicit TabletServiceImpl(TabletServiceDeps deps) : deps_(deps) {}

  void Write(const WriteRequestPB* req, WriteResponsePB* resp, rpc::RpcContext* ctx) override;
  // Get runs on the reactor thread that read it when its rows are in memory (no
  // service-thread wakeup: on this machine that is most of a small Get's cost), and on
  // a service thread when it needs the disk, the tablet lock is taken, it has many
  // keys, or it fails (the service thread answers errors and logs them).
  void Get(const GetRequestPB* req, GetResponsePB* resp, rpc::RpcContext* ctx) override;
  bool TryGetOnReactor(const GetRequestPB* req, GetResponsePB* resp, rpc::RpcContext* ctx) override;
  void Scan(const ScanRequestPB* req, ScanResponsePB* resp, rpc::RpcContext* ctx) override;
  void ScannerKeepAlive(const ScannerKeepAliveRequestPB* req, ScannerKeepAliveResponsePB* resp,
                        rpc::RpcContext* ctx) override;
  void Ping(const PingRequestPB* req, PingResponsePB* resp, rpc::RpcContext* ctx) override;

 private:
  // Answers a Get. On the reactor (on_reactor) it must not block: it returns false,
  // leaving the call to a service thread, when the rows are not all in memory, the
  // tablet lock is taken, there are many keys, or the answer would be an error.
  bool HandleGet(const GetRequestPB& req, GetResponsePB* resp, rpc::RpcContext* ctx,
                 bool on_reactor);

  const TabletServiceDeps deps_;
};

class TabletAdminServiceImpl : public TabletServerAdminServiceIf {
 public:
  // `server_uuid` is checked against requests' dest_uuid when they set it.
  // `copies` answers StartTabletCopy (null: refused, tests).
  TabletAdminServiceImpl(TabletManager* tablets, std::string server_uuid, TServerMetrics* metrics,
                         TabletCopyRunner* copies = nullptr)
      : tablets_(tablets), uuid_(std::move(server_uuid)), metrics_(metrics), copies_(copies) {}

  void CreateTablet(const CreateTabletRequestPB* req, CreateTabletResponsePB* resp,
                    rpc::RpcContext* ctx) override;
  void DeleteTablet(const DeleteTabletRequestPB* req, DeleteTabletResponsePB* resp,
                    rpc::RpcContext* ctx) override;
  void ListTablets(const ListTabletsRequestPB* req, ListTabletsResponsePB* resp,
                   rpc::RpcContext* ctx) override;
  // Answers once the group started the transfer (or refused it), from the group's
  // worker thread.
  void LeaderStepDown(const LeaderStepDownRequestPB* req, LeaderStepDownResponsePB* resp,
                      rpc::RpcContext* ctx) override;
  // Answered at once: the copy runs on a thread of the TabletCopyRunner.
  void StartTabletCopy(const StartTabletCopyRequestPB* req, StartTabletCopyResponsePB* resp,
                       rpc::RpcContext* ctx) override;
  // Answered from the group's worker thread once the change committed (or failed).
  void ChangeConfig(const ChangeConfigRequestPB* req, ChangeConfigResponsePB* resp,
                    rpc::RpcContext* ctx) override;
  // Blocks its service thread until the replica reaches the index asked for (at most
  // the request's timeout, capped at 60 s) and its rows are read.
  void ChecksumTablet(const ChecksumTabletRequestPB* req, ChecksumTabletResponsePB* resp,
                      rpc::RpcContext* ctx) override;
  // Answered from the group's worker thread once the schema change is applied on this
  // leader (or at once when refused or already applied).
  void AlterSchema(const AlterSchemaRequestPB* req, AlterSchemaResponsePB* resp,
                   rpc::RpcContext* ctx) override;

 private:
  // True, with `err` set, when `dest` names another server than this one.
  bool WrongServer(const std::string& dest, TabletServerErrorPB* err) const;

  TabletManager* const tablets_;
  const std::string uuid_;
  TServerMetrics* const metrics_;
  TabletCopyRunner* const copies_;
};

}  // namespace nyala::tserver
