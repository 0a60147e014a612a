// Moving replicas: nyala tablet change_config add_replica|remove_replica|move_replica,
// nyala table set_replication_factor, nyala tserver decommission, nyala cluster
// rebalance. Each asks the master (or, for add_replica and remove_replica, the tablet's
// leader) and then, unless --nowait, waits for the change to finish with a line of
// progress every few seconds.
#include <gflags/gflags.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/result.h"
#include "common/wire_protocol.h"
#include "tools/cluster_admin.h"
#include "tools/tool_action.h"

DECLARE_int64(timeout_ms);
DEFINE_bool(wait, true,
            "change_config, set_replication_factor, decommission: wait until the change is "
            "done, printing progress (--nowait: return once it started).");
DEFINE_int32(wait_timeout_sec, 3600,
             "The longest a command waits for replicas to move (each move copies a tablet).");
DEFINE_validator(wait_timeout_sec, [](const char*, int32_t v) { return v > 0; });
DEFINE_bool(cancel, false, "decommission: stop decommissioning the server instead.");
DEFINE_bool(dry_run, false, "rebalance: print the moves it would start, and start none.");
DEFINE_int32(max_concurrent_moves, 5,
             "rebalance: replica moves (each a tablet copy) running at once, over the cluster.");
DEFINE_validator(max_concurrent_moves, [](const char*, int32_t v) { return v >= 1; });
DEFINE_bool(leader_rebalancing, true,
            "rebalance: once replicas are even, even out the leaders too (leadership "
            "transfers).");

namespace nyala::tools {

namespace {

Result<std::unique_ptr<AdminClient>> Admin(const std::string& masters) {
  return AdminClient::Create(masters, MonoDelta::FromMilliseconds(FLAGS_timeout_ms));
}

// Calls `poll` every 500 ms until it says done (true) or fails, at most
// --wait_timeout_sec; prints what `progress` says every 3 s while waiting.
Status WaitUntil(const std::string& what, const std::function<Result<bool>()>& poll,
                 const std::function<std::string()>& progress) {
  const MonoTime start = MonoTime::Now();
  MonoTime next_note = start + MonoDelta::FromSeconds(3);
  for (;;) {
    ASSIGN_OR_RETURN(bool done, poll());
    if (done) return Status::OK();
    const MonoTime now = MonoTime::Now();
    if (now - start >= MonoDelta::FromSeconds(FLAGS_wait_timeout_sec)) {
      return Status::TimedOut(what + " is not done after " +
                                  std::to_string(FLAGS_wait_timeout_sec) +
                                  " s (--wait_timeout_sec)",
                              progress() + "; it goes on: watch it with `nyala tablet list`");
    }
    if (now >= next_note) {
      fprintf(stderr, "  %s (%lld s)\n", progress().c_str(),
              static_cast<long long>((now - start).ToMilliseconds() / 1000));
      next_note = now + MonoDelta::FromSeconds(3);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

// "host:port" of a registered tablet server, for a ChangeConfig's peer.
Result<std::pair<std::string, int>> TServerAddress(AdminClient* admin, const std::string& uuid) {
  ASSIGN_OR_RETURN(master::ListTabletServersResponsePB servers, admin->ListTabletServers());
  for (const auto& s : servers.servers()) {
    if (s.instance_id().permanent_uuid() != uuid) continue;
    if (!s.live()) {
      return Status::IllegalState("tablet server " + uuid + " is not live",
                                  "start it, or pick another with `nyala tserver list`");
    }
    if (s.registration().rpc_addresses_size() == 0) break;
    const auto& hp = s.registration().rpc_addresses(0);
    return std::make_pair(hp.host(), int(hp.port()));
  }
  return Status::NotFound("no tablet server " + uuid + " is registered",
                          "see `nyala tserver list`");
}

// The master's view of one tablet.
Result<master::ListTabletsResponsePB::TabletPB> MasterTablet(AdminClient* admin,
                                                             const std::string& tablet_id) {
  ASSIGN_OR_RETURN(master::ListTabletsResponsePB listed, admin->ListTablets("", tablet_id));
  if (listed.tablets_size() != 1) return Status::NotFound("no such tablet", tablet_id);
  return listed.tablets(0);
}

// Members of `t` by role.
struct Members {
  std::vector<std::string> voters;
  std::vector<std::string> learners;
  bool Has(const std::string& uuid) const {
    return std::count(voters.begin(), voters.end(), uuid) ||
           std::count(learners.begin(), learners.end(), uuid);
  }
};
Members MembersOf(const master::ListTabletsResponsePB::TabletPB& t) {
  Members m;
  for (const auto& r : t.replicas()) {
    (r.role() == master::LEARNER ? m.learners : m.voters).push_back(r.ts_uuid());
  }
  return m;
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

// One ChangeConfig to the tablet's leader, found through the master and the servers;
// follows one NOT_THE_LEADER answer. INVALID_CONFIG and the others become a Status
// naming the code.
Status ChangeConfigOnLeader(AdminClient* admin, const std::string& tablet_id,
                            tserver::ChangeConfigRequestPB req) {
  ASSIGN_OR_RETURN(std::vector<TabletView> views,
                   GatherTablets(admin, "", tablet_id, /*ask_servers=*/true));
  if (views.size() != 1) return Status::NotFound("no such tablet", tablet_id);
  const TabletView& t = views[0];
  const ReplicaView* leader = t.Leader();
  std::string leader_uuid = leader ? leader->ts_uuid : t.master_leader_uuid;
  if (leader_uuid.empty()) {
    return Status::ServiceUnavailable("tablet " + tablet_id + " has no leader now",
                                      "an election may be running; try again shortly");
  }
  auto address_of = [&](const std::string& uuid) {
    for (const ReplicaView& r : t.replicas) {
      if (r.ts_uuid == uuid) return r.address;
    }
    return std::string();
  };
  req.set_tablet_id(tablet_id);
  for (int attempt = 0;; attempt++) {
    const std::string address = address_of(leader_uuid);
    if (address.empty()) {
      return Status::NotFound("the leader " + leader_uuid + " of tablet " + tablet_id +
                              " is not one of its replicas the master knows");
    }
    req.set_dest_uuid(leader_uuid);
    tserver::ChangeConfigResponsePB resp;
    RETURN_NOT_OK_PREPEND(admin->ChangeConfig(address, req, &resp),
                          "asking the leader " + leader_uuid + " at " + address);
    if (!resp.has_error()) return Status::OK();
    Status s = StatusFromPB(resp.error().status());
    if (s.ok()) s = Status::RuntimeError("the leader refused without saying why");
    if (resp.error().code() == tserver::TabletServerErrorPB::NOT_THE_LEADER && attempt == 0 &&
        !resp.error().leader_uuid().empty() && resp.error().leader_uuid() != leader_uuid) {
      leader_uuid = resp.error().leader_uuid();
      continue;
    }
    return s.CloneAndPrepend(tserver::TabletServerErrorPB::Code_Name(resp.error().code()));
  }
}

void PrintTablet(const master::ListTabletsResponsePB::TabletPB& t, const std::string& change,
                 OutputFormat format) {
  const Members m = MembersOf(t);
  TableOutput out({"tablet_id", "change", "voters", "learners", "leader"});
  out.AddRow({t.tablet_id(), change, Join(m.voters), Join(m.learners), t.leader_uuid()},
             {t.tablet_id(), change, m.voters, m.learners, t.leader_uuid()});
  out.Print(format);
}

// nyala tablet change_config add_replica|remove_replica|move_replica <masters>
// <tablet_id> <ts_uuid> [<to_ts_uuid>]
Status ChangeConfig(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(auto format, OutputFormatFlag());
  const std::string& change = args[0];
  const std::string& tablet_id = args[2];
  const std::string& uuid = args[3];
  ASSIGN_OR_RETURN(auto admin, Admin(args[1]));
  AdminClient* a = admin.get();
  if (change == "move_replica") {
    if (args.size() != 5) {
      return Status::InvalidArgument(
          "move_replica takes <tablet_id> <from_ts_uuid> <to_ts_uuid> (\"\" lets the master "
          "choose the target)");
    }
    const std::string& to = args[4];
    master::MoveReplicaRequestPB req;
    req.set_tablet_id(tablet_id);
    req.set_from_uuid(uuid);
    req.set_to_uuid(to);
    RETURN_NOT_OK_PREPEND(a->MoveReplica(req), "moving the replica of tablet " + tablet_id);
    fprintf(stderr,
            "Tablet %s: moving its replica off %s to %s (a learner there, copied, "
            "promoted; then %s removed)\n",
            tablet_id.c_str(), uuid.c_str(), to.empty() ? "a server the master picks" : to.c_str(),
            uuid.c_str());
    std::string status = "starting";
    if (FLAGS_wait) {
      RETURN_NOT_OK(WaitUntil(
          "moving the replica of tablet " + tablet_id,
          [&]() -> Result<bool> {
            ASSIGN_OR_RETURN(auto t, MasterTablet(a, tablet_id));
            status = t.replacement().description();
            const Members m = MembersOf(t);
            return !m.Has(uuid) && m.learners.empty() && (to.empty() || m.Has(to));
          },
          [&] {
            return status.empty() ? std::string("waiting for the leader's report") : status;
          }));
    }
    ASSIGN_OR_RETURN(auto t, MasterTablet(a, tablet_id));
    PrintTablet(t, FLAGS_wait ? "moved" : "moving", format);
    return Status::OK();
  }
  if (args.size() != 4) {
    return Status::InvalidArgument(change + " takes <tablet_id> <ts_uuid>");
  }
  tserver::ChangeConfigRequestPB req;
  req.mutable_peer()->set_permanent_uuid(uuid);
  if (change == "add_replica") {
    ASSIGN_OR_RETURN(auto hp, TServerAddress(a, uuid));
    req.mutable_peer()->set_host(hp.first);
    req.mutable_peer()->set_port(hp.second);
    req.set_type(tserver::ADD_LEARNER);
    RETURN_NOT_OK_PREPEND(ChangeConfigOnLeader(a, tablet_id, req),
                          "adding " + uuid + " to tablet " + tablet_id + " as a learner");
    fprintf(stderr, "Tablet %s: %s added as a learner; it copies the tablet and catches up\n",
            tablet_id.c_str(), uuid.c_str());
    if (FLAGS_wait) {
      // Promoted once caught up: the leader refuses (INVALID_CONFIG) until then.
      req.set_type(tserver::PROMOTE_LEARNER);
      std::string last;
      RETURN_NOT_OK(WaitUntil(
          "promoting " + uuid,
          [&]() -> Result<bool> {
            Status s = ChangeConfigOnLeader(a, tablet_id, req);
            last = s.ToString();
            if (s.ok()) return true;
            if (s.IsNotFound()) return s;
            return false;
          },
          [&] { return "not promoted yet: " + last; }));
    }
  } else if (change == "remove_replica") {
    req.set_type(tserver::REMOVE_PEER);
    RETURN_NOT_OK_PREPEND(ChangeConfigOnLeader(a, tablet_id, req),
                          "removing " + uuid + " from tablet " + tablet_id);
  } else {
    return Status::InvalidArgument("unknown change '" + change +
                                   "': expected add_replica, remove_replica or move_replica");
  }
  ASSIGN_OR_RETURN(auto t, MasterTablet(a, tablet_id));
  fprintf(stderr,
          "Note: the master keeps every tablet at its table's replication factor (%d here): "
          "it brings the tablet back to it, %s (to change the factor use `nyala table "
          "set_replication_factor`; to move a replica, move_replica)\n",
          t.num_replicas(),
          change == "add_replica" ? "removing a voter" : "adding a replica elsewhere");
  PrintTablet(t, change, format);
  return Status::OK();
}

// nyala table set_replication_factor <masters> <table> <N>
Status SetReplicationFactor(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(auto format, OutputFormatFlag());
  const std::string& table = args[1];
  int rf = 0;
  try {
    size_t used = 0;
    rf = std::stoi(args[2], &used);
    if (used != args[2].size()) throw std::invalid_argument("trailing");
  } catch (const std::exception&) {
    return Status::InvalidArgument("replication factor '" + args[2] + "' is not a number");
  }
  ASSIGN_OR_RETURN(auto admin, Admin(args[0]));
  master::SetReplicationFactorRequestPB req;
  req.mutable_table()->set_table_name(table);
  req.set_num_replicas(rf);
  ASSIGN_OR_RETURN(auto resp, admin->SetReplicationFactor(req));
  fprintf(stderr, "Table %s: replication factor %d (was %d); the master now %s replicas\n",
          table.c_str(), rf, resp.old_num_replicas(),
          rf > resp.old_num_replicas()   ? "adds"
          : rf < resp.old_num_replicas() ? "removes"
                                         : "keeps");
  int done = 0;
  int total = 0;
  if (FLAGS_wait) {
    RETURN_NOT_OK(WaitUntil(
        "changing the replication factor of table " + table,
        [&]() -> Result<bool> {
          ASSIGN_OR_RETURN(auto listed, admin->ListTablets(table));
          done = 0;
          total = listed.tablets_size();
          for (const auto& t : listed.tablets()) {
            const Members m = MembersOf(t);
            done += int(m.voters.size()) == rf && m.learners.empty() ? 1 : 0;
          }
          return done == total;
        },
        [&] {
          return std::to_string(done) + " of " + std::to_string(total) + " tablets have " +
                 std::to_string(rf) + " voters";
        }));
  }
  TableOutput out({"table", "replication_factor", "was", "done"});
  const char* finished = FLAGS_wait ? "yes" : "no";
  out.AddRow({table, std::to_string(rf), std::to_string(resp.old_num_replicas()), finished},
             {table, rf, resp.old_num_replicas(), FLAGS_wait});
  out.Print(format);
  return Status::OK();
}

// nyala tserver decommission <masters> <uuid>
Status Decommission(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(auto format, OutputFormatFlag());
  const std::string& uuid = args[1];
  ASSIGN_OR_RETURN(auto admin, Admin(args[0]));
  const auto change = FLAGS_cancel ? master::ChangeTServerStateRequestPB::CANCEL_DECOMMISSION
                                   : master::ChangeTServerStateRequestPB::START_DECOMMISSION;
  RETURN_NOT_OK_PREPEND(admin->ChangeTServerState(uuid, change),
                        std::string(FLAGS_cancel ? "cancelling" : "starting") +
                            " the decommission of tablet server " + uuid);
  TableOutput out({"uuid", "tserver_state", "replicas"});
  if (FLAGS_cancel) {
    out.AddRow({uuid, "NONE", ""}, {uuid, "NONE", nullptr});
    out.Print(format);
    return Status::OK();
  }
  int32_t left = -1;
  auto count = [&]() -> Result<bool> {
    ASSIGN_OR_RETURN(auto servers, admin->ListTabletServers());
    for (const auto& s : servers.servers()) {
      if (s.instance_id().permanent_uuid() == uuid) left = s.num_replicas();
    }
    return left == 0;
  };
  fprintf(stderr, "Tablet server %s: decommissioning; the master moves each of its replicas\n",
          uuid.c_str());
  if (FLAGS_wait) {
    RETURN_NOT_OK(WaitUntil("decommissioning tablet server " + uuid, count, [&] {
      // With the master's word on one of the tablets still there (why it waits, if so).
      std::string example;
      auto listed = admin->ListTablets("");
      for (int i = 0; listed.ok() && i < listed->tablets_size() && example.empty(); i++) {
        const auto& t = listed->tablets(i);
        if (MembersOf(t).Has(uuid) && !t.replacement().description().empty()) {
          example = " (tablet " + t.tablet_id() + ": " + t.replacement().description() + ")";
        }
      }
      return std::to_string(left) + " replicas left on " + uuid + example;
    }));
    fprintf(stderr,
            "Tablet server %s holds no replicas: it can be stopped, then removed with `nyala "
            "tserver unregister`\n",
            uuid.c_str());
  } else {
    RETURN_NOT_OK(count().status());
  }
  out.AddRow({uuid, "DECOMMISSIONING", std::to_string(left)}, {uuid, "DECOMMISSIONING", left});
  out.Print(format);
  return Status::OK();
}

// nyala cluster rebalance <masters>
Status Rebalance(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(auto format, OutputFormatFlag());
  ASSIGN_OR_RETURN(auto admin, Admin(args[0]));
  master::RebalanceRequestPB req;
  req.set_dry_run(FLAGS_dry_run);
  req.set_max_moves(FLAGS_max_concurrent_moves);
  req.set_no_leaders(!FLAGS_leader_rebalancing);
  TableOutput moves({"kind", "tablet_id", "table", "from", "to"});
  auto add_moves = [&](const master::RebalanceResponsePB& r) {
    for (const auto* list : {&r.moves(), &r.leader_transfers()}) {
      const std::string kind = list == &r.moves() ? "replica" : "leader";
      for (const auto& m : *list) {
        moves.AddRow({kind, m.tablet_id(), m.table_name(), m.from_uuid(), m.to_uuid()},
                     {kind, m.tablet_id(), m.table_name(), m.from_uuid(), m.to_uuid()});
        if (!FLAGS_dry_run) {
          fprintf(stderr, "  %s of tablet %s (%s): %s -> %s\n", kind.c_str(), m.tablet_id().c_str(),
                  m.table_name().c_str(), m.from_uuid().c_str(), m.to_uuid().c_str());
        }
      }
    }
  };
  auto print_loads = [&](const master::RebalanceResponsePB& r) {
    TableOutput out(
        {"uuid", "replicas_before", "replicas_after", "leaders_before", "leaders_after"});
    for (int i = 0; i < r.before_size() && i < r.after_size(); i++) {
      const auto& b = r.before(i);
      const auto& a = r.after(i);
      out.AddRow({b.uuid(), std::to_string(b.replicas()), std::to_string(a.replicas()),
                  std::to_string(b.leaders()), std::to_string(a.leaders())},
                 {b.uuid(), b.replicas(), a.replicas(), b.leaders(), a.leaders()});
    }
    out.Print(format);
  };
  master::RebalanceResponsePB first;
  master::RebalanceResponsePB last;
  int rounds = 0;
  if (FLAGS_dry_run) {
    ASSIGN_OR_RETURN(first, admin->Rebalance(req));
    add_moves(first);
    if (first.moves_in_progress() > 0) {
      fprintf(stderr, "%d moves are running already; the plan counts them as done\n",
              first.moves_in_progress());
    }
    moves.Print(format);
    print_loads(first);
    return Status::OK();
  }
  RETURN_NOT_OK(WaitUntil(
      "rebalancing",
      [&]() -> Result<bool> {
        ASSIGN_OR_RETURN(last, admin->Rebalance(req));
        if (rounds++ == 0) first = last;
        add_moves(last);
        return last.balanced();
      },
      [&] {
        return std::to_string(last.moves_in_progress()) + " moves running, " +
               std::to_string(moves.num_rows()) + " started";
      }));
  fprintf(stderr, "Balanced: %zu moves and transfers\n", moves.num_rows());
  // The servers before the first move and now.
  for (int i = 0; i < first.before_size() && i < last.before_size(); i++) {
    *first.mutable_after(i) = last.before(i);
  }
  print_loads(first);
  return Status::OK();
}

}  // namespace

void RegisterReplicaActions() {
  auto& a = AllActions();
  a.push_back(
      {"tablet",
       "change_config",
       "Change one tablet's replicas: add_replica, remove_replica or move_replica.",
       "<add_replica|remove_replica|move_replica> <master_addresses> <tablet_id> <ts_uuid> "
       "[<to_ts_uuid>]",
       {"wait", "wait_timeout_sec", "format"},
       4,
       5,
       ChangeConfig,
       "move_replica <tablet_id> <from_ts_uuid> <to_ts_uuid>: the master adds a learner on\n"
       "the target (\"\" lets it pick the least loaded server), which copies the tablet and\n"
       "catches up, promotes it, then removes the replica on the source, handing leadership\n"
       "away first if it leads. The tablet never has fewer voters than its replication\n"
       "factor. This is the command to move a replica.\n"
       "add_replica <tablet_id> <ts_uuid>: asks the tablet's leader to add a learner on the\n"
       "server, then (with --wait) promotes it once caught up. remove_replica <tablet_id>\n"
       "<ts_uuid>: asks the leader to remove that member. The master keeps every tablet at\n"
       "its table's replication factor: after add_replica it removes a voter (the one on\n"
       "the most loaded server that does not lead), after remove_replica it adds one. To\n"
       "change the number of replicas, use `nyala table set_replication_factor`.\n"
       "With --wait (the default) the command returns when the change is done, printing\n"
       "progress every 3 s, at most --wait_timeout_sec."});
  a.push_back({"table",
               "set_replication_factor",
               "Change a table's replication factor; the master adds or removes replicas.",
               "<master_addresses> <table> <replication_factor>",
               {"wait", "wait_timeout_sec", "format"},
               3,
               3,
               SetReplicationFactor,
               "The factor must be odd, at most --max_num_replicas (master) and at most the\n"
               "number of live tablet servers that can take replicas. Raising it adds learners\n"
               "(each copies its tablet), promoted once caught up; lowering it removes voters\n"
               "one at a time (a down one first, else the one on the most loaded server that\n"
               "does not lead). Writes go on throughout. With --wait (the default) the command\n"
               "returns once every tablet has that many voters."});
  a.push_back({"tserver",
               "decommission",
               "Move every replica off a tablet server, then report that it can be stopped.",
               "<master_addresses> <tserver_uuid>",
               {"cancel", "wait", "wait_timeout_sec", "format"},
               2,
               2,
               Decommission,
               "The server enters state DECOMMISSIONING (kept by the master across restarts;\n"
               "`nyala tserver list` shows it): the master moves each of its replicas to\n"
               "another server, as it replaces a failed one (a learner elsewhere, promoted,\n"
               "then the replica here removed; a leader hands leadership away first), at most\n"
               "--max_concurrent_tablet_copies (master) per target server at a time, and puts\n"
               "no new replica on it. The command waits until the server holds none. --cancel\n"
               "ends the state (moves already done stay)."});
  a.push_back(
      {"cluster",
       "rebalance",
       "Even out replicas, then leaders, over the live tablet servers.",
       "<master_addresses>",
       {"dry_run", "max_concurrent_moves", "leader_rebalancing", "wait_timeout_sec", "format"},
       1,
       1,
       Rebalance,
       "Moves replicas from the servers holding the most to those holding the fewest\n"
       "(a newly added server gets its share), at most --max_concurrent_moves at a\n"
       "time, each through a learner as move_replica does; once replica counts are\n"
       "within one of each other, hands leadership from servers leading the most\n"
       "tablets to those leading the fewest. Servers that are dead, in maintenance\n"
       "mode or decommissioning are left out. Prints each move as it starts and the\n"
       "servers' counts before and after. --dry_run prints the first round of moves\n"
       "and the counts they lead to, and moves nothing."});
}

}  // namespace nyala::tools
