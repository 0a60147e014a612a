// GenericServiceImpl: nyala.server.GenericService (generic_service.proto), which
// ServerBase registers on every daemon: SetFlag changes a flag tagged `runtime`
// (common/flag_tags.h) while the server runs, logging each change, and refuses every
// other flag; GetFlags lists flags with their values and tags: by default only those
// whose value differs from their default (set to the default, on the command line or
// in a flagfile, does not count).
//
// Thread-safety: handlers run on any service thread; they touch nothing but gflags,
// whose registry has its own lock.
#pragma once

#include "server/generic_service.service.h"

namespace nyala::server {

class GenericServiceImpl : public GenericServiceIf {
 public:
  GenericServiceImpl() = default;

  void SetFlag(const SetFlagRequestPB* req, SetFlagResponsePB* resp, rpc::RpcContext* ctx) override;
  void GetFlags(const GetFlagsRequestPB* req, GetFlagsResponsePB* resp,
                rpc::RpcContext* ctx) override;
};

}  // namespace nyala::server
