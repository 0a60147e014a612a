// TabletCopyServiceImpl: nyala.tserver.TabletCopyService (tablet_copy.proto), the
// RPC face of a TabletCopySourceManager. Each method forwards to the manager, which
// validates the request, and answers with the manager's TabletCopyErrorPB code or
// the data; FetchData only lowers max_length first so that the chunk fits in one
// response of the serving messenger (its max_message_size, --rpc_max_message_size).
// Chunks travel in a sidecar.
//
// BeginTabletCopySession is answered from the manager's snapshot thread; FetchData and
// EndTabletCopySession on the service thread that runs them.
//
// Fault injection, for tests (flags in tablet_copy_service.cc):
// --fault_injection_tablet_copy_fail_fetch_one_in fails one FetchData in N at the RPC
// level (ERROR_UNAVAILABLE); --fault_injection_tablet_copy_corrupt_fetch_one_in flips
// one byte of one served chunk in N after its CRC-32C was computed.
//
// Thread-safety: handlers run concurrently on any service thread. `manager` must
// outlive the service's last call: shut the messenger down before the manager.
#pragma once

#include "tserver/tablet_copy.service.h"

namespace nyala::tserver {

class TabletCopySourceManager;

class TabletCopyServiceImpl : public TabletCopyServiceIf {
 public:
  explicit TabletCopyServiceImpl(TabletCopySourceManager* manager) : manager_(manager) {}

  void BeginTabletCopySession(const BeginTabletCopySessionRequestPB* req,
                              BeginTabletCopySessionResponsePB* resp,
                              rpc::RpcContext* ctx) override;
  void FetchData(const FetchDataRequestPB* req, FetchDataResponsePB* resp,
                 rpc::RpcContext* ctx) override;
  void EndTabletCopySession(const EndTabletCopySessionRequestPB* req,
                            EndTabletCopySessionResponsePB* resp, rpc::RpcContext* ctx) override;

  // What a FetchData response carries besides its chunk, at most: a chunk is kept this
  // far under the messenger's largest message.
  static constexpr uint64_t kFetchResponseOverheadBytes = 512;

 private:
  TabletCopySourceManager* const manager_;
};

}  // namespace nyala::tserver
