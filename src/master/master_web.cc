// Master web pages: /tables, /tablet-servers and /rpc-latency.
#include <set>

#include "common/partition.h"
#include "master/catalog_manager.h"
#include "master/master.h"
#include "master/master_service.h"
#include "master/ts_manager.h"
#include "server/webserver.h"

namespace nyala::master {

using server::EscapeHtml;
using server::WebRequest;
using server::WebResponse;

namespace {

const char* TableStateName(TableStatePB s) { return TableStatePB_Name(s).c_str(); }

std::string ServerCell(const std::string& uuid, TSManager* ts) {
  auto d = ts->Lookup(uuid);
  std::string out = EscapeHtml(uuid);
  if (d) {
    out += " (" + EscapeHtml(d->RpcAddressString()) + (d->live ? "" : ", dead") + ")";
  } else {
    out += " (not registered)";
  }
  return out;
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
           "<th>Term</th><th>Replicas (role, term, committed / applied / last index)</th></tr>";
      for (const TabletSnapshot& tablet : t.tablets) {
        b += "<tr><td>" + EscapeHtml(tablet.id) + "</td><td>" +
             EscapeHtml(partition_text(Partition::FromPB(tablet.entry.partition()))) + "</td><td>" +
             TabletStatePB_Name(tablet.entry.state()) + "</td><td>" +
             (tablet.leader_uuid.empty() ? std::string("none known")
                                         : EscapeHtml(tablet.leader_uuid)) +
             "</td><td>" + std::to_string(tablet.term) + "</td><td>";
        for (const auto& uuid : tablet.entry.replica_uuids()) {
          b += ServerCell(uuid, ts_manager_.get());
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
        b += "</td></tr>";
      }
      b += "</table>";
    }
  });
  webserver()->RegisterPage(
      "/tablet-servers", "Tablet servers", [this](const WebRequest&, WebResponse* resp) {
        const auto placed = catalog_->ReplicasPerServer();
        const MonoTime now = MonoTime::Now();
        std::string& b = resp->body;
        b += "<h2>Tablet servers</h2><table><tr><th>UUID</th><th>RPC</th><th>Web</th>"
             "<th>State</th><th>Last heartbeat</th><th>Tablets reported running</th>"
             "<th>Replicas placed</th></tr>";
        for (const TSDescriptor& ts : ts_manager_->GetAll()) {
          std::string web;
          for (const auto& hp : ts.registration.http_addresses()) {
            web += hp.host() + ":" + std::to_string(hp.port()) + " ";
          }
          auto p = placed.find(ts.uuid);
          b += "<tr><td>" + EscapeHtml(ts.uuid) + "</td><td>" + EscapeHtml(ts.RpcAddressString()) +
               "</td><td>" + EscapeHtml(web) + "</td><td>" + (ts.live ? "live" : "dead") +
               "</td><td>" + std::to_string((now - ts.last_heartbeat).ToMilliseconds()) +
               " ms ago</td><td>" + std::to_string(ts.running_tablets.size()) + "</td><td>" +
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
        "rpc_handler_latency_us", "Time from the start of the handler to its response (us)",
        labels);
    Counter* too_busy = metrics()->FindOrCreateCounter(
        "rpc_too_busy_total", "Calls rejected with SERVER_TOO_BUSY because the queue was full",
        labels);
    resp->body = "too_busy: " + std::to_string(too_busy->value()) + "\n" + h->ToString() + "\n";
  });
}

}  // namespace nyala::master
