// The tablet server's two RPC services.
//
//   TabletServiceImpl       nyala.tserver.TabletServerService: Write, Get, Scan,
//                           ScannerKeepAlive, Ping (Ping runs on the reactor).
//   TabletAdminServiceImpl  nyala.tserver.TabletServerAdminService: CreateTablet,
//                           DeleteTablet, ListTablets (used by the master).
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

#include "rpc/service_if.h"
#include "tserver/tserver.pb.h"

namespace nyala::tserver {

class RequestTracker;
class ScannerManager;
class TabletManager;
struct TServerMetrics;

struct TabletServiceDeps {
  TabletManager* tablets = nullptr;
  ScannerManager* scanners = nullptr;
  RequestTracker* tracker = nullptr;
  TServerMetrics* metrics = nullptr;  // may be null
};

class TabletServiceImpl : public rpc::ServiceIf {
 public:
  static constexpr const char* kServiceName = "nyala.tserver.TabletServerService";
  explicit TabletServiceImpl(TabletServiceDeps deps);

 private:
  // Answers a Get. On the reactor (on_reactor) it must not block: it returns false,
  // leaving the call to a service thread, when the rows are not all in memory, the
  // tablet lock is taken, there are many keys, or the answer would be an error.
  bool HandleGet(const GetRequestPB& req, GetResponsePB* resp, rpc::RpcContext* ctx,
                 bool on_reactor);

  const TabletServiceDeps deps_;
};

class TabletAdminServiceImpl : public rpc::ServiceIf {
 public:
  static constexpr const char* kServiceName = "nyala.tserver.TabletServerAdminService";
  // `server_uuid` is checked against requests' dest_uuid when they set it.
  TabletAdminServiceImpl(TabletManager* tablets, std::string server_uuid, TServerMetrics* metrics);

 private:
  TabletManager* const tablets_;
  const std::string uuid_;
  TServerMetrics* const metrics_;
};

}  // namespace nyala::tserver
