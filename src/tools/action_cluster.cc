// nyala cluster ksck: is the master reachable, is every tablet server alive, and for
// every tablet: does it have a leader and a majority (available), and is every replica
// reachable, running and caught up (healthy)? The tablet servers are asked for their
// replicas' states (cluster_admin.h); the verdicts are ksck.h's. Exits 0 when all is
// healthy, else with the worst verdict's code.
#include <gflags/gflags.h>

#include <map>

#include "common/result.h"
#include "rpc/messenger.h"
#include "tools/cluster_admin.h"
#include "tools/ksck.h"
#include "tools/ksck_checksum.h"
#include "tools/tool_action.h"

DEFINE_int64(max_replica_lag, 1000,
             "ksck: a running replica more than this many log entries behind its leader's "
             "committed index makes its tablet under-replicated.");

DEFINE_bool(checksum_scan, false,
            "ksck: also checksum every running replica of every available tablet right after "
            "each applied the same log entry, and report replicas that disagree (exit code 5).");
DEFINE_int32(checksum_timeout_sec, 60,
             "ksck --checksum_scan: how long one replica may take to reach the index and "
             "checksum its rows.");

DECLARE_int64(timeout_ms);

namespace nyala::tools {

using nlohmann::json;

namespace {

struct TableSummary {
  int tablets = 0;
  int healthy = 0;
  int under_replicated = 0;
  int unavailable = 0;
};

json ReplicaJson(const TabletView& t, const ReplicaView& r) {
  auto lag = t.Lag(r);
  return {{"uuid", r.ts_uuid},
          {"address", r.address},
          {"role", r.role},
          {"term", r.live_consensus ? json(r.term) : json(nullptr)},
          {"applied_index", r.live_consensus ? json(r.applied_index) : json(nullptr)},
          {"lag", lag ? json(*lag) : json(nullptr)},
          {"catch_up", t.CatchUp(r).empty() ? json(nullptr) : json(t.CatchUp(r))},
          {"state", r.Health()}};
}

// The check; sets *exit_code. A non-OK Status: the check could not run.
Status Ksck(const std::vector<std::string>& args, int* exit_code) {
  *exit_code = kKsckError;
  ASSIGN_OR_RETURN(auto format, OutputFormatFlag());
  const bool as_json = format == OutputFormat::kJson;
  json doc;
  // A failure before the check could run: JSON says so too (stdout stays one document).
  auto unreachable = [&](const Status& s) {
    if (as_json) {
      doc["master"] = {{"address", args[0]}, {"status", "UNREACHABLE"}, {"error", s.ToString()}};
      doc["status"] = "ERROR";
      doc["exit_code"] = kKsckError;
      printf("%s\n", DumpJson(doc, 2).c_str());
    } else {
      printf("Master %s: UNREACHABLE (%s)\n", args[0].c_str(), s.ToString().c_str());
    }
    return s.CloneAndPrepend("cannot check the cluster: the master is unreachable");
  };
  auto client_or = ConnectToCluster(args[0]);
  if (!client_or.ok()) return unreachable(client_or.status());
  auto client = *client_or;
  auto master = client->GetMasterStatus();
  if (!master.ok()) return unreachable(master.status());
  ASSIGN_OR_RETURN(auto admin,
                   AdminClient::Create(args[0], MonoDelta::FromMilliseconds(FLAGS_timeout_ms)));
  ASSIGN_OR_RETURN(auto servers, client->ListTabletServers());
  ASSIGN_OR_RETURN(std::vector<TabletView> tablets,
                   GatherTablets(admin.get(), "", "", /*ask_servers=*/true));

  std::vector<std::string> problems;
  int dead = 0;
  TableOutput ts_out({"tablet_server", "uuid", "state", "last_heartbeat_ms"});
  for (const auto& s : servers) {
    if (!s.live) {
      dead++;
      problems.push_back("tablet server " + s.rpc_address + " (" + s.uuid + ") is dead");
    }
    ts_out.AddRow({s.rpc_address, s.uuid, s.live ? "LIVE" : "DEAD",
                   std::to_string(s.millis_since_heartbeat)},
                  {s.rpc_address, s.uuid, s.live ? "LIVE" : "DEAD", s.millis_since_heartbeat});
  }

  // Servers the master thinks live but that did not answer: said once each.
  std::map<std::string, std::string> unreachable_servers;
  for (const TabletView& t : tablets) {
    for (const ReplicaView& r : t.replicas) {
      if (r.asked && !r.server_status.ok()) {
        unreachable_servers[r.address + " (" + r.ts_uuid + ")"] = r.server_status.ToString();
      }
    }
  }
  for (const auto& [server, why] : unreachable_servers) {
    problems.push_back("tablet server " + server + " is unreachable: " + why);
  }

  std::vector<TabletVerdict> verdicts;
  std::map<std::string, TableSummary> tables;
  TableOutput bad_out({"table", "tablet_id", "health", "leader", "replicas_running"});
  json tablets_json = json::array();
  int healthy = 0, under = 0, unavailable = 0;
  for (const TabletView& t : tablets) {
    TabletVerdict v = CheckTablet(t, FLAGS_max_replica_lag);
    TableSummary& sum = tables[t.table_name];
    sum.tablets++;
    switch (v.health) {
      case TabletHealth::kHealthy:
        sum.healthy++, healthy++;
        break;
      case TabletHealth::kUnderReplicated:
        sum.under_replicated++, under++;
        break;
      case TabletHealth::kUnavailable:
        sum.unavailable++, unavailable++;
        break;
    }
    const ReplicaView* leader = t.Leader();
    int running = 0;
    for (const ReplicaView& r : t.replicas) running += r.running();
    const std::string running_text =
        std::to_string(running) + "/" + std::to_string(t.replicas.size());
    if (v.health != TabletHealth::kHealthy) {
      bad_out.AddRow({t.table_name, t.tablet_id, TabletHealthName(v.health),
                      leader ? leader->ts_uuid : "-", running_text});
      for (const std::string& why : v.reasons) {
        problems.push_back("table " + t.table_name + ": tablet " + t.tablet_id + " is " +
                           TabletHealthName(v.health) + ": " + why);
      }
    }
    if (as_json) {
      json replicas = json::array();
      for (const ReplicaView& r : t.replicas) replicas.push_back(ReplicaJson(t, r));
      tablets_json.push_back({{"table", t.table_name},
                              {"tablet_id", t.tablet_id},
                              {"health", TabletHealthName(v.health)},
                              {"leader", leader ? json(leader->ts_uuid) : json(nullptr)},
                              {"reasons", v.reasons},
                              {"replicas", replicas}});
    }
    verdicts.push_back(std::move(v));
  }
  TableOutput t_out({"table", "tablets", "healthy", "under_replicated", "unavailable"});
  for (const auto& [name, s] : tables) {
    t_out.AddRow({name, std::to_string(s.tablets), std::to_string(s.healthy),
                  std::to_string(s.under_replicated), std::to_string(s.unavailable)},
                 {name, s.tablets, s.healthy, s.under_replicated, s.unavailable});
  }
  *exit_code = KsckExitCode(verdicts, dead);
  int mismatched = 0, checksummed = 0;
  json checksums_json = json::array();
  if (FLAGS_checksum_scan) {
    rpc::MessengerOptions mo;
    mo.name = "ksck-checksum";
    ASSIGN_OR_RETURN(std::shared_ptr<rpc::Messenger> messenger, rpc::Messenger::Create(mo));
    for (size_t i = 0; i < tablets.size(); i++) {
      const TabletView& t = tablets[i];
      if (verdicts[i].health == TabletHealth::kUnavailable) continue;
      TabletChecksums c =
          ChecksumTablet(messenger, t, MonoDelta::FromSeconds(FLAGS_checksum_timeout_sec));
      checksummed++;
      mismatched += c.mismatch;
      for (const std::string& why : c.problems) {
        problems.push_back("table " + t.table_name + ": tablet " + t.tablet_id +
                           ": checksum scan: " + why);
      }
      if (as_json) {
        json replicas = json::array();
        for (const ReplicaChecksum& r : c.replicas) {
          replicas.push_back(
              {{"uuid", r.ts_uuid},
               {"rows", r.status.ok() ? json(r.rows) : json(nullptr)},
               {"checksum", r.status.ok() ? json(r.checksum) : json(nullptr)},
               {"error", r.status.ok() ? json(nullptr) : json(r.status.ToString())}});
        }
        checksums_json.push_back({{"tablet_id", t.tablet_id},
                                  {"index", c.index},
                                  {"agree", !c.mismatch && c.problems.empty()},
                                  {"replicas", replicas}});
      }
    }
    messenger->Shutdown();
    if (mismatched > 0) *exit_code = kKsckChecksumMismatch;
  }
  const char* status = *exit_code == kKsckHealthy            ? "HEALTHY"
                       : *exit_code == kKsckUnderReplicated  ? "UNDER_REPLICATED"
                       : *exit_code == kKsckChecksumMismatch ? "CHECKSUM_MISMATCH"
                                                             : "UNAVAILABLE";

  if (as_json) {
    doc["master"] = {{"address", args[0]}, {"uuid", master->uuid}, {"status", "OK"}};
    doc["tablet_servers"] = json::parse(ts_out.Render(OutputFormat::kJson));
    doc["tables"] = json::parse(t_out.Render(OutputFormat::kJson));
    doc["tablets"] = std::move(tablets_json);
    doc["summary"] = {{"tablets", tablets.size()},
                      {"healthy", healthy},
                      {"under_replicated", under},
                      {"unavailable", unavailable},
                      {"dead_tablet_servers", dead}};
    if (FLAGS_checksum_scan) doc["checksums"] = std::move(checksums_json);
    doc["problems"] = problems;
    doc["status"] = status;
    doc["exit_code"] = *exit_code;
    printf("%s\n", DumpJson(doc, 2).c_str());
    return Status::OK();
  }
  printf("Master %s (uuid %s): OK\n", args[0].c_str(), master->uuid.c_str());
  printf("\nTablet servers: %zu live, %d dead\n", servers.size() - size_t(dead), dead);
  ts_out.Print(format);
  printf("\nTables: %zu\n", tables.size());
  t_out.Print(format);
  printf("\nTablets: %zu (%d healthy, %d under-replicated, %d unavailable)\n", tablets.size(),
         healthy, under, unavailable);
  if (bad_out.num_rows() > 0) bad_out.Print(format);
  if (!problems.empty()) {
    printf("\n%zu problem(s):\n", problems.size());
    for (const auto& p : problems) printf("  - %s\n", p.c_str());
  }
  if (FLAGS_checksum_scan) {
    printf("\nChecksum scan: %d tablet(s) checksummed, %d with replicas that disagree\n",
           checksummed, mismatched);
  }
  if (*exit_code == kKsckHealthy) {
    printf("\nOK: the cluster is healthy\n");
  } else {
    printf("\n%s: %d tablet(s) unavailable, %d under-replicated, %d tablet server(s) dead\n",
           status, unavailable, under, dead);
  }
  return Status::OK();
}

int KsckMain(const std::vector<std::string>& args) {
  int exit_code = kKsckError;
  Status s = Ksck(args, &exit_code);
  if (!s.ok()) return PrintError(s);
  if (exit_code != kKsckHealthy) {
    fprintf(stderr, "error: the cluster is not healthy (exit code %d)\n", exit_code);
  }
  return exit_code;
}

}  // namespace

void RegisterClusterActions() {
  Action a;
  a.noun = "cluster";
  a.verb = "ksck";
  a.summary =
      "Check the cluster: the master, every tablet server, and every tablet's leader, "
      "majority and replicas. Exit code: 0 healthy, 3 under-replicated, 4 unavailable.";
  a.args_usage = "<master_addresses>";
  a.flags = {"format", "max_replica_lag", "checksum_scan", "checksum_timeout_sec"};
  a.min_args = 1;
  a.max_args = 1;
  a.run_with_exit_code = KsckMain;
  a.details =
      "Asks the master for every tablet and its replicas, and every tablet server the\n"
      "master does not report dead for the state of its replicas now. Each tablet is:\n"
      "  HEALTHY           a leader, and every replica reachable, running and at most\n"
      "                    --max_replica_lag entries behind the leader's commit index;\n"
      "  UNDER_REPLICATED  a leader and a majority of replicas running, but some replica\n"
      "                    dead, unreachable, failed, missing or lagging;\n"
      "  UNAVAILABLE       no leader, fewer than a majority of replicas running, or not\n"
      "                    yet created: it takes no writes.\n"
      "Exit codes: 0 every tablet healthy and every tablet server live; 1 the check could\n"
      "not run (e.g. the master is unreachable); 2 bad usage; 3 some tablet under-\n"
      "replicated or some tablet server dead, none unavailable; 4 some tablet unavailable;\n"
      "5 (with --checksum_scan) replicas of some tablet disagree.\n"
      "--checksum_scan: every running replica of every available tablet checksums its\n"
      "rows right after it applied the same log entry (the highest any replica applied;\n"
      "under a write load, one a little ahead); replicas that disagree, or that cannot be\n"
      "checksummed within --checksum_timeout_sec, are named.\n"
      "--format=json prints one JSON object (also when the check cannot run), with\n"
      "\"status\" and \"exit_code\" (and \"checksums\" with --checksum_scan).";
  AllActions().push_back(std::move(a));
}

}  // namespace nyala::tools
