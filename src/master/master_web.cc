// Master web pages: /tables, /tablet-servers and /rpc-latency.
#include <optional>
#include <set>

#include "common/human_readable.h"
#include "master/catalog_manager.h"
#include "master/master.h"
#include "master/master_service.h"
#include "master/ts_manager.h"
#include "nyala/partition.h"
#include "server/webserver.h"

namespace nyala::master {

using server::EscapeHtml;
using server::WebRequest;
using server::WebResponse;

namespace {

const char* TableStateName(TableStatePB s) { return TableStatePB_Name(s).c_str(); }

// The tablet server's own web UI (its first advertised web address) + `path`, or ""
// when it registered none.
std::string WebUrl(const TSDescriptor& d, const std::string& path = "/") {
  if (d.registration.http_addresses().empty()) return "";
  const HostPortPB& hp = d.registration.http_addresses(0);
  return server::HttpUrl(hp.host(), hp.port(), path);
}

// `text` (HTML) linked to `url`, or plain when there is no url.
std::string Link(const std::string& url, const std::string& text) {
  return url.empty() ? text : "<a href=\"" + EscapeHtml(url) + "\">" + text + "</a>";
}

// A replica's server, linked to its web UI, and its copy of `tablet_id`, linked to
// the server's page of that tablet.
std::string ServerCell(const std::string& uuid, TSManager* ts, const std::string& tablet_id) {
  auto d = ts->Lookup(uuid);
  if (!d) return EscapeHtml(uuid) + " (not registered)";
  return Link(WebUrl(*d), EscapeHtml(uuid)) + " (" + EscapeHtml(d->RpcAddressString()) +
         (d->live ? "" : ", dead") + ", " +
         Link(WebUrl(*d, "/tablet?id=" + server::UrlEncode(tablet_id)), "replica") + ")";
}

// --- Table statistics (the sizes tablet servers report; `nyala table statistics`).

// The table's size on disk and live row estimate, then each tablet's and each
// replica's (one copy per tablet counts: CatalogManager's TabletStatsOf).
std::string TableStatisticsHtml(const TableSnapshot& t) {
  int64_t size = 0, rows = 0;
  int without = 0;
  std::string tablets;
  for (const TabletSnapshot& tablet : t.tablets) {
    ReportedTabletStatsPB chosen;
    const bool has = TabletStatsOf(tablet.leader_uuid, tablet.replica_stats, &chosen);
    if (has) {
      size += chosen.on_disk_size();
      rows += chosen.live_row_count();
    } else {
      without++;
    }
    tablets += "<tr><td>" + EscapeHtml(tablet.id) + "</td><td>" +
               (has ? HumanReadableBytes(chosen.on_disk_size()) : std::string("not reported")) +
               "</td><td>" + (has ? std::to_string(chosen.live_row_count()) : std::string()) +
               "</td><td>";
    for (const auto& uuid : tablet.entry.replica_uuids()) {
      auto st = tablet.replica_stats.find(uuid);
      tablets += EscapeHtml(uuid) + ": " +
                 (st == tablet.replica_stats.end()
                      ? std::string("not reported")
                      : HumanReadableBytes(st->second.on_disk_size()) + ", " +
                            std::to_string(st->second.live_row_count()) + " rows") +
                 "<br>";
    }
    tablets += "</td></tr>";
  }
  std::string b = "<h4>Size</h4><p class=\"table-stats\">On disk: " + HumanReadableBytes(size) +
                  "; live rows (estimate): " + std::to_string(rows) +
                  (without > 0 ? "; " + std::to_string(without) + " tablet(s) not reported yet"
                               : std::string()) +
                  "</p><table><tr><th>Tablet</th><th>On disk</th><th>Live rows (estimate)</th>"
                  "<th>Replicas (on disk, live rows)</th></tr>" +
                  tablets + "</table>";
  return b;
}

}  // namespace

void Master::RegisterWebPages() {
  webserver()->RegisterPage("/tables", "Tables", [this](const WebRequest&, WebResponse* resp) {
    std::string& b = resp->body;
    b += "<h2>Tables</h2>";
    for (const TableSnapshot& t : catalog_->GetTableSnapshots()) {
      // The catalog keeps deleted tables (marked TABLE_DELETED) to recognise their
      // tablets reported later; they are gone for the user.
      if (t.entry.state() == TABLE_DELETED) continue;
      b += "<h3>" + EscapeHtml(t.entry.name()) + "</h3><p>id " + EscapeHtml(t.id) + ", " +
           TableStateName(t.entry.state()) + ", " + std::to_string(t.entry.num_replicas()) +
           " replica(s)</p><p>Columns: ";
      for (const auto& c : t.entry.schema().columns()) {
        b += EscapeHtml(c.name()) + " " + DataTypePB_Name(c.type()) + (c.is_key() ? " KEY" : "") +
             (c.is_nullable() ? " NULLABLE" : "") + "; ";
      }
      // Partitions as typed key ranges; the raw encoded keys only if the stored
      // schema does not parse (it always should).
      auto schema = Schema::FromPB(t.entry.schema());
      Result<PartitionSchema> ps =
          schema.ok() ? PartitionSchema::FromPB(t.entry.partition_schema(), *schema)
                      : Result<PartitionSchema>(schema.status());
      auto partition_text = [&](const Partition& p) {
        return ps.ok() ? ps->PartitionToString(p, *schema) : p.ToString();
      };
      if (ps.ok()) b += "<br>Partitioning: " + EscapeHtml(ps->ToString());
      b += "</p><table><tr><th>Tablet</th><th>Partition</th><th>State</th><th>Leader</th>"
           "<th>Term</th><th>Replicas (role, term, committed / applied / last index)</th>"
           "<th>Replacement</th></tr>";
      for (const TabletSnapshot& tablet : t.tablets) {
        // The tablet's id links to its leader's page of it, when a leader is known.
        const std::optional<TSDescriptor> leader =
            tablet.leader_uuid.empty() ? std::nullopt : ts_manager_->Lookup(tablet.leader_uuid);
        b += "<tr><td>" +
             Link(leader ? WebUrl(*leader, "/tablet?id=" + server::UrlEncode(tablet.id)) : "",
                  EscapeHtml(tablet.id)) +
             "</td><td>" + EscapeHtml(partition_text(Partition::FromPB(tablet.entry.partition()))) +
             "</td><td>" + TabletStatePB_Name(tablet.entry.state()) + "</td><td>" +
             (tablet.leader_uuid.empty() ? std::string("none known")
                                         : EscapeHtml(tablet.leader_uuid)) +
             "</td><td>" + std::to_string(tablet.term) + "</td><td>";
        std::vector<std::string> members(tablet.entry.replica_uuids().begin(),
                                         tablet.entry.replica_uuids().end());
        members.insert(members.end(), tablet.entry.learner_uuids().begin(),
                       tablet.entry.learner_uuids().end());
        for (const auto& uuid : members) {
          b += ServerCell(uuid, ts_manager_.get(), tablet.id);
          const std::optional<TSDescriptor> d = ts_manager_->Lookup(uuid);
          if (d && !d->live) {
            // Its last report is history: no role, no indexes.
            b += " <b class=\"bad\">DEAD</b> (no report since its server stopped "
                 "heartbeating)<br>";
            continue;
          }
          auto role = tablet.roles.find(uuid);
          b += " ";
          b += ReplicaRolePB_Name(role == tablet.roles.end() ? UNKNOWN_ROLE : role->second);
          auto st = tablet.replica_states.find(uuid);
          if (st != tablet.replica_states.end()) {
            const ConsensusStatePB& c = st->second;
            b += ", term " + std::to_string(c.term()) + ", " + std::to_string(c.committed_index()) +
                 " / " + std::to_string(c.applied_index()) + " / " + std::to_string(c.last_index());
          } else {
            b += ", not reported";
          }
          b += "<br>";
        }
        // A replica being replaced: "replacing <failed> by <new>: adding learner".
        b += "</td><td class=\"replacement\">" +
             (tablet.replacement.step() == ReplacementPB::UNKNOWN_STEP
                  ? std::string("-")
                  : EscapeHtml(tablet.replacement.description())) +
             "</td></tr>";
      }
      b += "</table>";
      b += TableStatisticsHtml(t);
    }
  });
  webserver()->RegisterPage(
      "/tablet-servers", "Tablet servers", [this](const WebRequest&, WebResponse* resp) {
        const auto placed = catalog_->ReplicasPerServer();
        const auto states = catalog_->TServerStates();
        const MonoTime now = MonoTime::Now();
        std::string& b = resp->body;
        b += "<h2>Tablet servers</h2><table><tr><th>UUID</th><th>RPC</th><th>Web</th>"
             "<th>State</th><th>Mode</th><th>Last heartbeat</th>"
             "<th>Tablets reported running</th><th>Replicas placed</th></tr>";
        for (const TSDescriptor& ts : ts_manager_->GetAll()) {
          std::string web;  // each advertised web address, linked
          for (const auto& hp : ts.registration.http_addresses()) {
            web += Link(server::HttpUrl(hp.host(), hp.port()),
                        EscapeHtml(hp.host() + ":" + std::to_string(hp.port()))) +
                   " ";
          }
          auto p = placed.find(ts.uuid);
          // An operator's state (`nyala tserver state`, `nyala tserver decommission`):
          // maintenance holds back the replacement of the server's replicas; a
          // decommissioning server is being emptied.
          auto st = states.find(ts.uuid);
          const char* mode = st == states.end()               ? "normal"
                             : st->second == MAINTENANCE_MODE ? "maintenance"
                             : st->second == DECOMMISSIONING  ? "decommissioning"
                                                              : "unknown";
          b += "<tr><td>" + Link(WebUrl(ts), EscapeHtml(ts.uuid)) + "</td><td>" +
               EscapeHtml(ts.RpcAddressString()) + "</td><td>" + web + "</td><td>" +
               (ts.live ? "live" : "dead") + "</td><td>" + mode + "</td><td>" +
               std::to_string((now - ts.last_heartbeat).ToMilliseconds()) + " ms ago</td><td>" +
               std::to_string(ts.running_tablets.size()) + "</td><td>" +
               std::to_string(p == placed.end() ? 0 : p->second) + "</td></tr>";
        }
        b += "</table>";
      });
  // The server-side handler latency of one MasterService method in Kudu's histogram
  // text (benchmarks read it): /rpc-latency?method=GetTableLocations
  webserver()->RegisterRaw("/rpc-latency", [this](const WebRequest& req, WebResponse* resp) {
    resp->content_type = "text/plain";
    static const std::set<std::string> kMethods(std::begin(MasterServiceIf::kMethodNames),
                                                std::end(MasterServiceIf::kMethodNames));
    const std::string method = req.GetArg("method", MasterServiceIf::kGetTableLocationsMethodName);
    if (!kMethods.count(method)) {
      resp->status_code = 404;
      resp->body = "no such method\n";
      return;
    }
    MetricLabels labels = {{"service", MasterServiceIf::kServiceName}, {"method", method}};
    Histogram* h = metrics()->FindOrCreateHistogram(
        "rpc_handler_duration_seconds", "Time from the start of the handler to its response",
        labels);
    Counter* too_busy = metrics()->FindOrCreateCounter(
        "rpc_too_busy_total", "Calls rejected with SERVER_TOO_BUSY because the queue was full",
        labels);
    resp->body = "too_busy: " + std::to_string(too_busy->value()) + "\n" + h->ToString() + "\n";
  });
}

}  // namespace nyala::master
