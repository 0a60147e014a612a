#include "server/generic_service.h"

#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <set>

#include "common/flag_tags.h"
#include "rpc/rpc_context.h"

namespace nyala::server {

void GenericServiceImpl::SetFlag(const SetFlagRequestPB* req, SetFlagResponsePB* resp,
                                 rpc::RpcContext* ctx) {
  const std::string& name = req->flag();
  const std::string who = ctx->remote_address().ToString();
  gflags::CommandLineFlagInfo info;
  if (name.empty() || !gflags::GetCommandLineFlagInfo(name.c_str(), &info)) {
    resp->set_result(SetFlagResponsePB::NO_SUCH_FLAG);
    resp->set_msg("no flag --" + name);
    LOG(WARNING) << "SetFlag from " << who << " refused: " << resp->msg();
    return ctx->RespondSuccess();
  }
  resp->set_old_value(info.current_value);
  if (!FlagHasTag(name, flag_tags::runtime)) {
    resp->set_result(SetFlagResponsePB::NOT_RUNTIME_SETTABLE);
    resp->set_msg("--" + name + " cannot be changed while the server runs (not tagged runtime)");
    LOG(WARNING) << "SetFlag from " << who << " refused: " << resp->msg();
    return ctx->RespondSuccess();
  }
  // Validators run under gflags' lock before the value is stored.
  const std::string out = gflags::SetCommandLineOption(name.c_str(), req->value().c_str());
  if (out.empty()) {
    resp->set_result(SetFlagResponsePB::BAD_VALUE);
    resp->set_msg("bad value for --" + name + ": '" + req->value() + "'");
    LOG(WARNING) << "SetFlag from " << who << " refused: " << resp->msg();
    return ctx->RespondSuccess();
  }
  resp->set_result(SetFlagResponsePB::SUCCESS);
  resp->set_msg(out);
  LOG(WARNING) << "SetFlag from " << who << ": --" << name << "='" << req->value() << "' (was '"
               << info.current_value << "')"
               << (FlagHasTag(name, flag_tags::unsafe) ? " [unsafe flag]" : "");
  ctx->RespondSuccess();
}

void GenericServiceImpl::GetFlags(const GetFlagsRequestPB* req, GetFlagsResponsePB* resp,
                                  rpc::RpcContext* ctx) {
  const std::set<std::string> named(req->flags().begin(), req->flags().end());
  std::vector<gflags::CommandLineFlagInfo> flags;
  gflags::GetAllFlags(&flags);  // sorted by name
  for (const gflags::CommandLineFlagInfo& f : flags) {
    // By value, not gflags' is_default: that is false for every flag a flagfile names,
    // and the shipped flagfiles name nearly all of them, most at their defaults.
    const bool is_default = f.current_value == f.default_value;
    if (!req->all_flags() && is_default && named.count(f.name) == 0) continue;
    GetFlagsResponsePB::Flag* out = resp->add_flags();
    out->set_name(f.name);
    out->set_value(f.current_value);
    out->set_is_default_value(is_default);
    for (std::string& tag : GetFlagTags(f.name)) out->add_tags(std::move(tag));
  }
  ctx->RespondSuccess();
}

}  // namespace nyala::server
