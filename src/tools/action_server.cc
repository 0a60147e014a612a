// nyala tserver list; nyala master status
#include <gflags/gflags.h>

#include "tools/tool_action.h"

DECLARE_string(format);

namespace nyala::tools {

using nlohmann::json;

namespace {

Status ListTabletServers(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(auto client, ConnectToCluster(args[0]));
  ASSIGN_OR_RETURN(auto format, OutputFormatFlag());
  ASSIGN_OR_RETURN(auto servers, client->ListTabletServers());
  TableOutput out({"uuid", "rpc_address", "state", "last_heartbeat_ms", "tablets"});
  for (const auto& s : servers) {
    out.AddRow({s.uuid, s.rpc_address, s.live ? "LIVE" : "DEAD",
                std::to_string(s.millis_since_heartbeat), std::to_string(s.num_live_tablets)},
               {s.uuid, s.rpc_address, s.live ? "LIVE" : "DEAD", s.millis_since_heartbeat,
                s.num_live_tablets});
  }
  out.Print(format);
  return Status::OK();
}

Status MasterStatus(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(auto client, ConnectToCluster(args[0]));
  ASSIGN_OR_RETURN(auto format, OutputFormatFlag());
  ASSIGN_OR_RETURN(client::MasterStatus st, client->GetMasterStatus());
  const int64_t uptime_s = (GetWallTimeMicros() - st.start_time_micros) / 1000000;
  TableOutput out({"uuid", "rpc_addresses", "http_addresses", "version", "uptime_s", "tables",
                   "live_tablet_servers"});
  out.AddRow({st.uuid, st.rpc_addresses, st.http_addresses, st.version, std::to_string(uptime_s),
              std::to_string(st.num_tables), std::to_string(st.num_live_tablet_servers)},
             {st.uuid, st.rpc_addresses, st.http_addresses, st.version, uptime_s, st.num_tables,
              st.num_live_tablet_servers});
  out.Print(format);
  return Status::OK();
}

}  // namespace

void RegisterServerActions() {
  auto& a = AllActions();
  a.push_back({"tserver",
               "list",
               "List the tablet servers the master knows, live or dead.",
               "<master_addresses>",
               {"format"},
               1,
               1,
               ListTabletServers});
  a.push_back({"master",
               "status",
               "Show the master's identity, addresses and catalog size.",
               "<master_addresses>",
               {"format"},
               1,
               1,
               MasterStatus});
}

}  // namespace nyala::tools
