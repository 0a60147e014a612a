// nyala tserver list | unregister | state; nyala master status
#include <gflags/gflags.h>

#include "common/result.h"
#include "tools/cluster_admin.h"
#include "tools/tool_action.h"

DECLARE_string(format);
DECLARE_int64(timeout_ms);

namespace nyala::tools {

using nlohmann::json;

namespace {

// NONE, MAINTENANCE_MODE or DECOMMISSIONING.
std::string StateName(master::TServerStatePB state) {
  return state == master::TSERVER_STATE_NONE ? "NONE" : master::TServerStatePB_Name(state);
}

Result<std::unique_ptr<AdminClient>> Admin(const std::string& masters) {
  return AdminClient::Create(masters, MonoDelta::FromMilliseconds(FLAGS_timeout_ms));
}

// The master's ListTabletServers (not the client library's: it has no maintenance
// state).
Status ListTabletServers(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(auto format, OutputFormatFlag());
  ASSIGN_OR_RETURN(auto admin, Admin(args[0]));
  ASSIGN_OR_RETURN(master::ListTabletServersResponsePB servers, admin->ListTabletServers());
  // New columns go last: scripts read the first ones by position.
  TableOutput out({"uuid", "rpc_address", "state", "last_heartbeat_ms", "tablets", "tserver_state",
                   "replicas"});
  for (const auto& s : servers.servers()) {
    std::string address;
    if (s.registration().rpc_addresses_size() > 0) {
      const auto& hp = s.registration().rpc_addresses(0);
      address = hp.host() + ":" + std::to_string(hp.port());
    }
    const std::string& uuid = s.instance_id().permanent_uuid();
    const char* live = s.live() ? "LIVE" : "DEAD";
    const std::string state = StateName(s.state());
    out.AddRow({uuid, address, live, std::to_string(s.millis_since_heartbeat()),
                std::to_string(s.num_live_tablets()), state, std::to_string(s.num_replicas())},
               {uuid, address, live, s.millis_since_heartbeat(), s.num_live_tablets(), state,
                s.num_replicas()});
  }
  out.Print(format);
  return Status::OK();
}

Status UnregisterTServer(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(auto format, OutputFormatFlag());
  const std::string& uuid = args[1];
  ASSIGN_OR_RETURN(auto admin, Admin(args[0]));
  RETURN_NOT_OK_PREPEND(admin->UnregisterTServer(uuid), "unregistering tablet server " + uuid);
  TableOutput out({"uuid", "unregistered"});
  out.AddRow({uuid, "yes"}, {uuid, true});
  out.Print(format);
  return Status::OK();
}

// nyala tserver state enter_maintenance|exit_maintenance <masters> <uuid>
Status ChangeTServerState(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(auto format, OutputFormatFlag());
  const std::string& change = args[0];
  const std::string& uuid = args[2];
  master::ChangeTServerStateRequestPB::Change pb;
  if (change == "enter_maintenance") {
    pb = master::ChangeTServerStateRequestPB::ENTER_MAINTENANCE_MODE;
  } else if (change == "exit_maintenance") {
    pb = master::ChangeTServerStateRequestPB::EXIT_MAINTENANCE_MODE;
  } else {
    return Status::InvalidArgument("unknown tablet server state change '" + change +
                                   "': expected enter_maintenance or exit_maintenance");
  }
  ASSIGN_OR_RETURN(auto admin, Admin(args[1]));
  RETURN_NOT_OK_PREPEND(admin->ChangeTServerState(uuid, pb),
                        "changing the state of tablet server " + uuid);
  const std::string state = StateName(change == "enter_maintenance" ? master::MAINTENANCE_MODE
                                                                    : master::TSERVER_STATE_NONE);
  TableOutput out({"uuid", "tserver_state"});
  out.AddRow({uuid, state}, {uuid, state});
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
               "List the tablet servers the master knows, live or dead, with their replicas and "
               "state.",
               "<master_addresses>",
               {"format"},
               1,
               1,
               ListTabletServers,
               "tablets: replicas the server reports running; replicas: replicas the master's\n"
               "catalog places on it (voters and learners; 0 once a decommission is done).\n"
               "tserver_state: NONE, MAINTENANCE_MODE (`nyala tserver state`) or\n"
               "DECOMMISSIONING (`nyala tserver decommission`)."});
  a.push_back({"tserver",
               "unregister",
               "Make the master forget a tablet server it considers dead.",
               "<master_addresses> <tserver_uuid>",
               {"format"},
               2,
               2,
               UnregisterTServer,
               "The master refuses a server it still hears from (TABLET_SERVER_IS_LIVE): stop it\n"
               "and wait until `nyala tserver list` shows it DEAD. Its maintenance state goes\n"
               "too. Should it heartbeat again, it registers anew. Replicas of its that are still\n"
               "in their tablets' configurations are replaced as those of a failed server."});
  a.push_back(
      {"tserver",
       "state",
       "Put a tablet server in maintenance mode or take it out: enter_maintenance or "
       "exit_maintenance.",
       "<enter_maintenance|exit_maintenance> <master_addresses> <tserver_uuid>",
       {"format"},
       3,
       3,
       ChangeTServerState,
       "While a server is in maintenance mode the master starts no replacement of its\n"
       "replicas when it stops heartbeating (--follower_unavailable_considered_failed_sec),\n"
       "and adds no new replica on it. For planned downtime: enter maintenance, restart\n"
       "or repair the server, exit maintenance. The state is kept by the master across\n"
       "its restarts; `nyala tserver list` shows it."});
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
