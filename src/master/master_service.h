// MasterServiceImpl: nyala.master.MasterService (master.proto) over a Master's
// catalog manager. Application errors travel in each response's `error`
// (MasterErrorPB) with RespondSuccess; RPC-level failures are the framework's.
// Ping is cheap (runs on the reactor). GetTableLocations answers with the
// already serialized response (RpcContext::RespondSuccessWithSerializedBody).
//
// Thread-safety: handlers run on any service thread; the Master must outlive the service.
#pragma once

#include "rpc/service_if.h"

namespace nyala::master {

class Master;

class MasterServiceImpl : public rpc::ServiceIf {
 public:
  static constexpr const char* kServiceName = "nyala.master.MasterService";
  explicit MasterServiceImpl(Master* master);
};

}  // namespace nyala::master
