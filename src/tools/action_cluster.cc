// nyala cluster ksck: is the master reachable, is every tablet server alive, does every
// table have all its tablets running on live servers? Prints a summary; a non-zero exit
// when anything is wrong.
#include <gflags/gflags.h>

#include <set>

#include "tools/tool_action.h"

namespace nyala::tools {

namespace {

Status Ksck(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(auto format, OutputFormatFlag());
  std::vector<std::string> problems;
  auto client_or = ConnectToCluster(args[0]);
  if (!client_or.ok()) {
    printf("Master %s: UNREACHABLE (%s)\n", args[0].c_str(), client_or.status().ToString().c_str());
    return Status::NetworkError("cluster is not healthy: the master is unreachable");
  }
  auto client = *client_or;
  auto master = client->GetMasterStatus();
  if (!master.ok()) {
    printf("Master %s: UNREACHABLE (%s)\n", args[0].c_str(), master.status().ToString().c_str());
    return Status::NetworkError("cluster is not healthy: the master is unreachable");
  }
  printf("Master %s (uuid %s): OK\n", args[0].c_str(), master->uuid.c_str());

  ASSIGN_OR_RETURN(auto servers, client->ListTabletServers());
  std::set<std::string> live;
  TableOutput ts_out({"tablet_server", "uuid", "state", "last_heartbeat_ms"});
  for (const auto& s : servers) {
    if (s.live)
      live.insert(s.uuid);
    else
      problems.push_back("tablet server " + s.rpc_address + " (" + s.uuid + ") is dead");
    ts_out.AddRow({s.rpc_address, s.uuid, s.live ? "LIVE" : "DEAD",
                   std::to_string(s.millis_since_heartbeat)});
  }
  printf("\nTablet servers: %zu live, %zu dead\n", live.size(), servers.size() - live.size());
  ts_out.Print(format);

  ASSIGN_OR_RETURN(auto tables, client->ListTables());
  TableOutput t_out({"table", "tablets", "healthy", "status"});
  for (const auto& name : tables) {
    auto tablets = client->ListTabletsOfTable(name);
    if (!tablets.ok()) {
      problems.push_back("table " + name + ": " + tablets.status().ToString());
      t_out.AddRow({name, "?", "0", tablets.status().ToString()});
      continue;
    }
    int healthy = 0;
    std::string status = "OK";
    for (const auto& t : *tablets) {
      bool ok = !t.replicas.empty();
      for (const auto& r : t.replicas) {
        if (!live.count(r.ts_uuid)) {
          ok = false;
          problems.push_back("table " + name + ": tablet " + t.tablet_id + " is on dead server " +
                             r.rpc_address);
        }
      }
      if (t.replicas.empty()) {
        problems.push_back("table " + name + ": tablet " + t.tablet_id + " has no replica");
      }
      healthy += ok;
    }
    if (healthy != int(tablets->size())) status = "UNAVAILABLE TABLETS";
    t_out.AddRow({name, std::to_string(tablets->size()), std::to_string(healthy), status});
  }
  printf("\nTables: %zu\n", tables.size());
  t_out.Print(format);
  if (!problems.empty()) {
    printf("\n%zu problem(s):\n", problems.size());
    for (const auto& p : problems) printf("  - %s\n", p.c_str());
    return Status::IllegalState("cluster is not healthy: " + std::to_string(problems.size()) +
                                " problem(s)");
  }
  printf("\nOK: the cluster is healthy\n");
  return Status::OK();
}

}  // namespace

void RegisterClusterActions() {
  AllActions().push_back({"cluster",
                          "ksck",
                          "Check the cluster: master reachable, every tablet server alive, every "
                          "table's tablets running on live servers. Exits 1 when unhealthy.",
                          "<master_addresses>",
                          {"format"},
                          1,
                          1,
                          Ksck});
}

}  // namespace nyala::tools
