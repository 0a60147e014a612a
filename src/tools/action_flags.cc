// nyala tserver get_flags | set_flag and nyala master get_flags | set_flag: read and
// change the flags of one running daemon through its GenericService
// (server/generic_service.proto), as Kudu's tools do. Only flags tagged `runtime` can
// be changed; the daemon refuses the others and says why.
#include <gflags/gflags.h>

#include <cstdio>
#include <set>

#include "common/result.h"
#include "rpc/messenger.h"
#include "rpc/rpc_controller.h"
#include "rpc/sockaddr.h"
#include "server/generic_service.proxy.h"
#include "tools/tool_action.h"

DEFINE_bool(all_flags, false,
            "get_flags: show every flag; by default only flags whose value differs from "
            "their default (a flagfile setting a flag to its default does not count), or "
            "those named in --flags.");
DEFINE_string(flags, "",
              "get_flags: comma-separated flags to show, only these (default or not); "
              "empty: every flag set away from its default (every flag with --all_flags).");
DEFINE_string(tags, "",
              "get_flags: show only flags carrying one of these comma-separated tags "
              "(runtime, unsafe).");
DECLARE_string(format);
DECLARE_int64(timeout_ms);

namespace nyala::tools {

namespace {

// Exit codes of set_flag beyond 0 (changed), 1 (cannot ask) and 2 (bad command line).
constexpr int kExitNoSuchFlag = 3;
constexpr int kExitNotRuntime = 4;
constexpr int kExitBadValue = 5;

constexpr uint16_t kTServerPort = 7050;
constexpr uint16_t kMasterPort = 7051;

// One connection to the daemon at `address`, for one call.
struct DaemonConnection {
  std::shared_ptr<rpc::Messenger> messenger;
  rpc::Sockaddr addr;
  ~DaemonConnection() {
    if (messenger) messenger->Shutdown();
  }
};

Status Connect(const std::string& address, uint16_t default_port, DaemonConnection* conn) {
  ASSIGN_OR_RETURN(rpc::HostPort hp, rpc::HostPort::Parse(address, default_port));
  ASSIGN_OR_RETURN(std::vector<rpc::Sockaddr> addrs, hp.Resolve());
  if (addrs.empty()) return Status::NetworkError("cannot resolve", address);
  conn->addr = addrs.front();
  rpc::MessengerOptions opts;
  opts.name = "nyala-flags";
  opts.num_reactors = 1;
  ASSIGN_OR_RETURN(conn->messenger, rpc::Messenger::Create(opts));
  return Status::OK();
}

Status GetFlags(const std::vector<std::string>& args, uint16_t default_port) {
  ASSIGN_OR_RETURN(auto format, OutputFormatFlag());
  DaemonConnection conn;
  RETURN_NOT_OK(Connect(args[0], default_port, &conn));
  server::GetFlagsRequestPB req;
  const std::vector<std::string> named = SplitList(FLAGS_flags);
  // The daemon adds the named flags to the non-default ones; only the named are kept.
  req.set_all_flags(FLAGS_all_flags && named.empty());
  for (const auto& f : named) req.add_flags(f);
  server::GetFlagsResponsePB resp;
  rpc::RpcController rpc;
  rpc.set_timeout(MonoDelta::FromMilliseconds(FLAGS_timeout_ms));
  server::GenericServiceProxy proxy(conn.messenger, conn.addr);
  Status s = proxy.GetFlags(req, &resp, &rpc);
  if (!s.ok()) return s.CloneAndPrepend("cannot read the flags of " + args[0]);
  const std::set<std::string> named_set(named.begin(), named.end());
  const std::vector<std::string> tags = SplitList(FLAGS_tags);
  std::set<std::string> seen;
  TableOutput out({"flag", "value", "is_default", "tags"});
  for (const auto& f : resp.flags()) {
    if (!named_set.empty() && named_set.count(f.name()) == 0) continue;
    std::string tag_text;
    bool tag_match = tags.empty();
    nlohmann::json tag_list = nlohmann::json::array();
    for (const auto& t : f.tags()) {
      tag_text += (tag_text.empty() ? "" : ",") + t;
      tag_list.push_back(t);
      for (const auto& want : tags) tag_match |= want == t;
    }
    if (!tag_match) continue;
    seen.insert(f.name());
    out.AddRow({f.name(), f.value(), f.is_default_value() ? "true" : "false", tag_text},
               {f.name(), f.value(), f.is_default_value(), tag_list});
  }
  out.Print(format);
  std::string unknown;
  for (const auto& f : named) {
    if (!seen.count(f) && tags.empty()) unknown += (unknown.empty() ? "" : ", ") + f;
  }
  if (!unknown.empty()) {
    return Status::NotFound(args[0] + " has no flag(s) " + unknown);
  }
  return Status::OK();
}

int SetFlag(const std::vector<std::string>& args, uint16_t default_port) {
  std::string flag = args[1];
  while (!flag.empty() && flag.front() == '-') flag.erase(flag.begin());
  DaemonConnection conn;
  Status s = Connect(args[0], default_port, &conn);
  if (!s.ok()) return PrintError(s);
  server::SetFlagRequestPB req;
  req.set_flag(flag);
  req.set_value(args[2]);
  server::SetFlagResponsePB resp;
  rpc::RpcController rpc;
  rpc.set_timeout(MonoDelta::FromMilliseconds(FLAGS_timeout_ms));
  server::GenericServiceProxy proxy(conn.messenger, conn.addr);
  s = proxy.SetFlag(req, &resp, &rpc);
  if (!s.ok()) return PrintError(s.CloneAndPrepend("cannot set a flag of " + args[0]));
  switch (resp.result()) {
    case server::SetFlagResponsePB::SUCCESS:
      printf("--%s changed from '%s' to '%s' on %s\n", flag.c_str(), resp.old_value().c_str(),
             args[2].c_str(), args[0].c_str());
      return 0;
    case server::SetFlagResponsePB::NO_SUCH_FLAG:
      fprintf(stderr, "error: %s has no flag --%s ('nyala %s get_flags %s --all_flags' lists them)\n",
              args[0].c_str(), flag.c_str(), default_port == kMasterPort ? "master" : "tserver",
              args[0].c_str());
      return kExitNoSuchFlag;
    case server::SetFlagResponsePB::NOT_RUNTIME_SETTABLE:
      fprintf(stderr,
              "error: %s refused: %s; set it on the daemon's command line or flag file and "
              "restart it (flags with the tag 'runtime' can be changed: 'get_flags "
              "--all_flags --tags=runtime')\n",
              args[0].c_str(), resp.msg().c_str());
      return kExitNotRuntime;
    case server::SetFlagResponsePB::BAD_VALUE:
      fprintf(stderr, "error: %s refused: %s (the value kept is '%s')\n", args[0].c_str(),
              resp.msg().c_str(), resp.old_value().c_str());
      return kExitBadValue;
    default:
      fprintf(stderr, "error: %s answered with an unknown result: %s\n", args[0].c_str(),
              resp.msg().c_str());
      return 1;
  }
}

const char kGetFlagsDetails[] =
    "Prints each flag's name, current value, whether it is the default, and its tags\n"
    "('runtime': may be changed with set_flag; 'unsafe': breaks a guarantee, for tests).\n"
    "Without --all_flags or --flags, only flags whose value differs from their default\n"
    "are listed: a flag that the daemon's flagfile sets to its default is not.\n"
    "Exit code 1 when the daemon cannot be asked or a flag named in --flags does not exist.";

const char kSetFlagDetails[] =
    "Changes a flag of the running daemon (not its flag file: a restart reverts it). Only\n"
    "flags tagged 'runtime' can be changed (list them with get_flags --all_flags\n"
    "--tags=runtime); the daemon validates the value and logs the change.\n"
    "Exit codes: 0 changed; 1 the daemon cannot be asked; 2 bad command line;\n"
    "3 no such flag; 4 the flag cannot be changed at run time; 5 bad value (the old\n"
    "value stays).";

}  // namespace

void RegisterFlagActions() {
  auto& a = AllActions();
  for (const auto& [noun, port] :
       std::vector<std::pair<std::string, uint16_t>>{{"tserver", kTServerPort},
                                                      {"master", kMasterPort}}) {
    const uint16_t p = port;
    const std::string addr = "<" + noun + "_address>";
    Action get{noun,
               "get_flags",
               "Show the flags of a running " + noun + " (non-default ones unless --all_flags).",
               addr,
               {"all_flags", "flags", "tags", "format"},
               1,
               1,
               [p](const std::vector<std::string>& args) { return GetFlags(args, p); },
               kGetFlagsDetails};
    a.push_back(std::move(get));
    Action set{noun,
               "set_flag",
               "Change a flag of a running " + noun + " (only flags tagged runtime).",
               addr + " <flag> <value>",
               {},
               3,
               3,
               {},
               kSetFlagDetails,
               [p](const std::vector<std::string>& args) { return SetFlag(args, p); }};
    a.push_back(std::move(set));
  }
}

}  // namespace nyala::tools
