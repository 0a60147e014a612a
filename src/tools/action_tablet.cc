// nyala tablet list; nyala tablet leader_step_down
#include <gflags/gflags.h>

#include <algorithm>
#include <thread>

#include "common/result.h"
#include "common/wire_protocol.h"
#include "tools/cluster_admin.h"
#include "tools/tool_action.h"

DEFINE_string(table, "", "Only the tablets of this table (default: every table).");
DEFINE_string(new_leader_uuid, "",
              "leader_step_down: the replica (tablet server uuid) to hand leadership to; "
              "empty: the most caught-up other voter that is running.");

DECLARE_int64(timeout_ms);

namespace nyala::tools {

using nlohmann::json;

namespace {

Status ListTabletReplicas(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(auto format, OutputFormatFlag());
  ASSIGN_OR_RETURN(auto admin,
                   AdminClient::Create(args[0], MonoDelta::FromMilliseconds(FLAGS_timeout_ms)));
  ASSIGN_OR_RETURN(std::vector<TabletView> tablets,
                   GatherTablets(admin.get(), FLAGS_table, "", /*ask_servers=*/true));
  TableOutput out({"table", "tablet_id", "replica_uuid", "address", "role", "term",
                   "committed_index", "applied_index", "lag", "catch_up", "state", "source",
                   "replacement"});
  for (const TabletView& t : tablets) {
    // The leader first, then the others in placement order.
    std::vector<const ReplicaView*> order;
    const ReplicaView* leader = t.Leader();
    if (leader != nullptr) order.push_back(leader);
    for (const ReplicaView& r : t.replicas) {
      if (&r != leader) order.push_back(&r);
    }
    for (const ReplicaView* rp : order) {
      const ReplicaView& r = *rp;
      // The tablet's replacement in progress: on its first row in the table format, on
      // every row in the others.
      const bool first = rp == order.front();
      const std::string replacement = t.replacement.empty() || !first ? "-" : t.replacement;
      // A replica's own state when its server answered, else the master's last report.
      const bool known = r.live_consensus || r.reported;
      auto text = [known](uint64_t v) { return known ? std::to_string(v) : std::string("-"); };
      auto value = [known](uint64_t v) { return known ? json(v) : json(nullptr); };
      const std::optional<int64_t> lag = t.Lag(r);
      const std::string role = r.live_consensus ? r.role : r.role + (known ? "?" : "");
      const char* source = r.live_consensus ? "server" : r.reported ? "master" : "-";
      // The leader's view of this follower: replicating, catching up from the log on
      // disk, needs a copy.
      const std::string catch_up = t.CatchUp(r);
      out.AddRow(
          {t.table_name, t.tablet_id, r.ts_uuid, r.address.empty() ? "-" : r.address, role,
           text(r.term), text(r.committed_index), text(r.applied_index),
           lag ? std::to_string(*lag) : "-", catch_up.empty() ? "-" : catch_up, r.Health(), source,
           replacement},
          {t.table_name, t.tablet_id, r.ts_uuid, r.address, r.role, value(r.term),
           value(r.committed_index), value(r.applied_index), lag ? json(*lag) : json(nullptr),
           catch_up.empty() ? json(nullptr) : json(catch_up), r.Health(),
           known ? json(source) : json(nullptr),
           t.replacement.empty() ? json(nullptr) : json(t.replacement)});
    }
  }
  out.Print(format);
  return Status::OK();
}

// The running other voter with the highest applied index ("" if none is known).
std::string PickNewLeader(const TabletView& t, const std::string& leader_uuid) {
  const ReplicaView* best = nullptr;
  for (const ReplicaView& r : t.replicas) {
    if (r.ts_uuid == leader_uuid || !r.running() || !r.live_consensus || r.role == "LEARNER") {
      continue;
    }
    if (best == nullptr || r.applied_index > best->applied_index) best = &r;
  }
  return best ? best->ts_uuid : "";
}

Status LeaderStepDown(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(auto format, OutputFormatFlag());
  const std::string& tablet_id = args[1];
  const MonoDelta timeout = MonoDelta::FromMilliseconds(FLAGS_timeout_ms);
  ASSIGN_OR_RETURN(auto admin, AdminClient::Create(args[0], timeout));
  ASSIGN_OR_RETURN(std::vector<TabletView> views,
                   GatherTablets(admin.get(), "", tablet_id, /*ask_servers=*/true));
  if (views.size() != 1) return Status::NotFound("no such tablet", tablet_id);
  const TabletView& t = views[0];
  if (t.replicas.size() < 2) {
    return Status::IllegalState("tablet " + tablet_id + " has " +
                                std::to_string(t.replicas.size()) +
                                " replica: there is no other voter to hand leadership to");
  }
  // The leader: as its replica says now, else as the master last heard.
  const ReplicaView* leader = t.Leader();
  std::string leader_uuid = leader ? leader->ts_uuid : t.master_leader_uuid;
  // The transfer ends in a newer term: a leader the master reports in this one or an
  // older one is not the new leader (the master may not have heard of the current).
  const uint64_t start_term = std::max(leader ? leader->term : 0, t.master_term);
  if (leader_uuid.empty()) {
    return Status::ServiceUnavailable("tablet " + tablet_id + " has no leader now",
                                      "an election may be running; try again shortly");
  }
  auto address_of = [&](const std::string& uuid) -> std::string {
    for (const ReplicaView& r : t.replicas) {
      if (r.ts_uuid == uuid) return r.address;
    }
    return "";
  };
  tserver::LeaderStepDownRequestPB req;
  req.set_tablet_id(tablet_id);
  req.set_new_leader_uuid(FLAGS_new_leader_uuid.empty() ? PickNewLeader(t, leader_uuid)
                                                        : FLAGS_new_leader_uuid);
  tserver::LeaderStepDownResponsePB resp;
  // A replica that no longer leads names the one that does: follow it once.
  for (int attempt = 0;; attempt++) {
    const std::string address = address_of(leader_uuid);
    if (address.empty()) {
      return Status::NotFound("the leader " + leader_uuid + " of tablet " + tablet_id +
                              " is not one of its replicas the master knows");
    }
    req.set_dest_uuid(leader_uuid);
    resp.Clear();
    RETURN_NOT_OK_PREPEND(admin->LeaderStepDown(address, req, &resp),
                          "asking the leader " + leader_uuid + " at " + address);
    if (!resp.has_error()) break;
    Status s = StatusFromPB(resp.error().status());
    if (s.ok()) s = Status::RuntimeError("the leader refused without saying why");
    if (resp.error().code() == tserver::TabletServerErrorPB::NOT_THE_LEADER && attempt == 0 &&
        !resp.error().leader_uuid().empty() && resp.error().leader_uuid() != leader_uuid) {
      leader_uuid = resp.error().leader_uuid();
      if (leader_uuid == req.new_leader_uuid()) req.clear_new_leader_uuid();
      continue;
    }
    return s.CloneAndPrepend(tserver::TabletServerErrorPB::Code_Name(resp.error().code()));
  }
  const std::string target = resp.new_leader_uuid();
  fprintf(stderr,
          "Tablet %s: %s is handing leadership to %s; waiting for the master to report "
          "the new leader\n",
          tablet_id.c_str(), leader_uuid.c_str(),
          target.empty() ? "another voter" : target.c_str());

  // Until the master names another leader, with a line of progress every 2 s.
  const MonoTime start = MonoTime::Now();
  MonoTime next_note = start + MonoDelta::FromSeconds(2);
  std::string new_leader;
  uint64_t term = 0;
  for (;;) {
    auto listed = admin->ListTablets("", tablet_id);
    if (listed.ok() && listed->tablets_size() == 1) {
      const auto& pb = listed->tablets(0);
      if (!pb.leader_uuid().empty() && pb.leader_uuid() != leader_uuid && pb.term() > start_term) {
        new_leader = pb.leader_uuid();
        term = pb.term();
        break;
      }
    }
    const MonoTime now = MonoTime::Now();
    if (now - start >= timeout) {
      return Status::TimedOut(
          "the master still reports no other leader of tablet " + tablet_id + " after " +
              std::to_string((now - start).ToMilliseconds()) + " ms",
          "the transfer may have failed (its target unreachable or behind); see `nyala tablet "
          "list`");
    }
    if (now >= next_note) {
      fprintf(stderr, "  still waiting (%lld s)...\n",
              static_cast<long long>((now - start).ToMilliseconds() / 1000));
      next_note = now + MonoDelta::FromSeconds(2);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  TableOutput out({"tablet_id", "old_leader", "new_leader", "new_leader_address", "term"});
  out.AddRow({tablet_id, leader_uuid, new_leader, address_of(new_leader), std::to_string(term)},
             {tablet_id, leader_uuid, new_leader, address_of(new_leader), term});
  out.Print(format);
  return Status::OK();
}

}  // namespace

void RegisterTabletActions() {
  auto& a = AllActions();
  a.push_back({"tablet",
               "list",
               "List every tablet's replicas: server, role, term, committed and applied index, "
               "lag behind the leader, state.",
               "<master_addresses>",
               {"table", "format"},
               1,
               1,
               ListTabletReplicas,
               "Each replica's state is its tablet server's answer now (source: server); when the\n"
               "server cannot be asked (dead or unreachable), the master's last report of it is\n"
               "shown instead (source: master) and its role ends in '?' in the table format.\n"
               "lag = the leader's committed index - the replica's applied index (entries it\n"
               "has yet to apply), '-' (null in JSON) when there is no leader or no current\n"
               "state of the replica. state: RUNNING, FAILED, NOT_HOSTED (its server does not\n"
               "hold it), UNREACHABLE, DEAD (the master hears no heartbeats). A replica being\n"
               "added (a learner) has role LEARNER. replacement: the master's replacement of a\n"
               "failed replica in progress (\"replacing <failed> by <new>: adding learner\",\n"
               "\"...: promoting\", \"...: removing <failed>\"), on the tablet's first row."});
  a.push_back({"tablet",
               "leader_step_down",
               "Hand a tablet's leadership to another voter and wait until the master reports the "
               "new leader.",
               "<master_addresses> <tablet_id>",
               {"new_leader_uuid", "format"},
               2,
               2,
               LeaderStepDown,
               "Finds the leader through the master and asks it to transfer leadership (Raft's\n"
               "leadership transfer: the target is brought up to date, then campaigns at once;\n"
               "the tablet refuses writes meanwhile, at most an election timeout). Then waits,\n"
               "at most --timeout_ms, until the master reports a different leader, and prints\n"
               "it. Fails when the tablet has one replica, has no leader, or no other leader is\n"
               "reported in time."});
}

}  // namespace nyala::tools
