// The tablet server's web pages: the rows and charts it adds to the home page,
// /tablets, /tablet?id=<tablet id> and /scans.
#include <algorithm>
#include <cstdio>

#include "common/human_readable.h"
#include "nyala/partition.h"
#include "server/webserver.h"
#include "tserver/scanners.h"
#include "tserver/tablet.h"
#include "tserver/tablet_copy_runner.h"
#include "tserver/tablet_manager.h"
#include "tserver/tablet_server.h"
#include "tserver/tablet_service.h"
#include "tserver/tablet_store.h"
#include "tserver/tserver_metrics.h"

namespace nyala::tserver {

namespace {

// The tablet's partition as typed key ranges: "HASH(k) bucket 1 of 4, k >= 100 AND k < 200".
std::string PartitionText(const Tablet& t) {
  const std::shared_ptr<const TabletSchema> ts = t.tablet_schema();
  if (!ts) return "";  // a failed or tombstoned tablet
  return t.partition_schema().PartitionToString(Partition::FromPB(ts->meta.partition()),
                                                ts->schema);
}

// The /tablets cells of a tablet's own counters.
std::string TabletCounterCells(const TabletMetrics* m) {
  if (!m) return "<td></td><td></td><td></td><td></td><td></td><td></td>";
  auto v = [](const std::shared_ptr<Counter>& c) { return std::to_string(c->value()); };
  return "<td>" + v(m->write_requests) + "</td><td>" + v(m->rows_inserted) + " / " +
         v(m->rows_upserted) + " / " + v(m->rows_updated) + " / " + v(m->rows_deleted) +
         "</td><td>" + v(m->get_requests) + "</td><td>" + v(m->get_keys) + "</td><td>" +
         v(m->scan_requests) + "</td><td>" + v(m->rows_scanned) + " / " + v(m->rows_returned) +
         "</td>";
}

// The /tablets cells of a replica's consensus state: role, term, leader, indexes and
// peers (every member of the configuration, this server marked).
std::string ConsensusCells(const master::ConsensusStatePB* c, const std::string& self) {
  using server::EscapeHtml;
  if (c == nullptr) return "<td>-</td><td></td><td></td><td></td><td></td>";
  auto name = [&](const std::string& uuid) {
    if (uuid.empty()) return std::string("(unknown server)");
    return EscapeHtml(uuid) + (uuid == self ? " (this server)" : "");
  };
  std::string peers;
  for (const auto& v : c->voter_uuids()) peers += name(v) + "<br>";
  for (const auto& l : c->learner_uuids()) peers += name(l) + " learner<br>";
  return "<td class=\"role\">" + master::ReplicaRolePB_Name(c->role()) + "</td><td>" +
         std::to_string(c->term()) + "</td><td>" +
         (c->leader_uuid().empty() ? std::string("none known") : name(c->leader_uuid())) +
         "</td><td>" + std::to_string(c->committed_index()) + " / " +
         std::to_string(c->applied_index()) + " / " + std::to_string(c->last_index()) +
         "</td><td>" + peers + "</td>";
}

// A link to the /tablet page of tablet `id`.
std::string TabletLink(const std::string& id) {
  using server::EscapeHtml;
  return "<a href=\"/tablet?id=" + EscapeHtml(server::UrlEncode(id)) + "\">" + EscapeHtml(id) +
         "</a>";
}

}  // namespace

void TabletServer::AddRateSeries(server::RateHistory* rates) {
  // Read by name from the registry, which outlives the sampling thread.
  MetricRegistry* m = metrics();
  auto family = [m](const char* name) { return [m, name] { return m->SumOfFamily(name); }; };
  rates->AddSeries("writes", "Write RPCs", "/s", family("tserver_write_requests_total"));
  rates->AddSeries("reads", "Get RPCs", "/s", family("tserver_get_requests_total"));
  rates->AddSeries("scans", "Scan RPCs", "/s", family("tserver_scan_requests_total"));
  rates->AddSeries("rows_written", "Rows written", "rows/s", family("tserver_rows_written_total"));
  rates->AddSeries("rows_read", "Rows read (scans and gets)", "rows/s", [m] {
    return m->SumOfFamily("tserver_scan_rows_returned_total") +
           m->SumOfFamily("tserver_get_rows_found_total");
  });
}

void TabletServer::AddOverviewRows(std::vector<std::pair<std::string, std::string>>* rows) {
  using server::EscapeHtml;
  MetricRegistry* m = metrics();
  rows->emplace_back("Tablets",
                     "<a href=\"/tablets\">" + std::to_string(tablets_->NumTablets()) + "</a>");
  rows->emplace_back("Open scanners", std::to_string(scanners_->NumScanners()));
  std::string masters;
  for (const auto& hp : masters_) masters += (masters.empty() ? "" : ", ") + hp.ToString();
  rows->emplace_back("Masters", EscapeHtml(masters));
  // Disk: each data dir, then the WAL dir (tserver_data_dir_bytes, tserver_wal_dir_bytes).
  auto bytes = [](double b) { return HumanReadableBytes(static_cast<int64_t>(b)); };
  std::string disk;
  for (const std::string& dir : fs()->data_dirs()) {
    disk += EscapeHtml(dir) + ": <span class=\"bytes\">" +
            HumanReadableBytes(DiskBytesUnder(dir, wal_dir_)) + "</span><br>";
  }
  disk += "WAL " + EscapeHtml(wal_dir_) + ": <span class=\"bytes\">" +
          HumanReadableBytes(DiskBytesUnder(wal_dir_, "")) + "</span>";
  rows->emplace_back("Disk use", disk);
  // Memory: RocksDB's caches and memtables (the rocksdb_* gauges), and the process.
  rows->emplace_back(
      "Memory", "RocksDB block cache " + bytes(m->SumOfFamily("rocksdb_block_cache_usage_bytes")) +
                    " of " + bytes(m->SumOfFamily("rocksdb_block_cache_capacity_bytes")) +
                    "; memtables " + bytes(m->SumOfFamily("rocksdb_memtable_bytes")) +
                    "; row cache " + bytes(static_cast<double>(TabletStore::RowCacheUsage())) +
                    "; process resident " + bytes(m->SumOfFamily("process_resident_memory_bytes")));
  // Request rates: the mean of the last minute of the charted samples.
  if (const server::RateHistory* r = rates()) {
    std::string rates_text;
    for (const std::string& name : r->names()) {
      char buf[64];
      snprintf(buf, sizeof(buf), "%.1f", r->RecentRate(name, 60));
      rates_text += (rates_text.empty() ? "" : "; ") + EscapeHtml(r->title(name)) + " " + buf +
                    " " + EscapeHtml(r->unit(name));
    }
    rows->emplace_back("Rates (last minute)", rates_text);
  }
}

void TabletServer::RegisterWebPages() {
  using server::EscapeHtml;
  webserver()->RegisterPage(
      "/tablets", "Tablets", [this](const server::WebRequest&, server::WebResponse* resp) {
        auto tablets = tablets_->GetTablets();
        std::sort(tablets.begin(), tablets.end(), [](const auto& a, const auto& b) {
          return std::tie(a->metadata().table_name(),
                          a->metadata().partition().partition_key_start()) <
                 std::tie(b->metadata().table_name(),
                          b->metadata().partition().partition_key_start());
        });
        std::string& b = resp->body;
        b += "<h2>Tablets (" + std::to_string(tablets.size()) + ")</h2>";
        b += "<table><tr><th>Tablet id</th><th>Table</th><th>Partition</th><th>State</th>"
             "<th>Role</th><th>Term</th><th>Leader</th>"
             "<th>Committed / applied / last index</th><th>Peers</th>"
             "<th>On-disk size</th><th>Write RPCs</th>"
             "<th>Rows inserted / upserted / updated / deleted</th><th>Get RPCs</th>"
             "<th>Keys looked up</th><th>Scan RPCs</th><th>Rows scanned / returned</th></tr>";
        for (const auto& t : tablets) {
          const TabletMetadataPB& m = t->metadata();
          std::string state = TabletStateName(t->state());
          if (t->state() == TabletState::kFailed) state += ": " + t->failure().ToString();
          master::ConsensusStatePB consensus;
          const bool replicated = tablets_->ConsensusStateOf(*t, &consensus);
          b += "<tr id=\"" + EscapeHtml(m.tablet_id()) + "\"><td>" + TabletLink(m.tablet_id()) +
               "</td><td>" + EscapeHtml(m.table_name()) + "</td><td>" +
               EscapeHtml(PartitionText(*t)) + "</td><td class=\"" +
               (t->state() == TabletState::kRunning ? "ok" : "bad") + "\">" + EscapeHtml(state) +
               "</td>" + ConsensusCells(replicated ? &consensus : nullptr, uuid()) + "<td>" +
               HumanReadableBytes(t->OnDiskSize()) + "</td>" +
               TabletCounterCells(t->tablet_metrics()) + "</tr>";
        }
        b += "</table>";
        // Copies this server fetches (a replica being replaced, or a new one).
        const std::vector<TabletCopyRunner::Running> copies =
            copy_runner_ ? copy_runner_->RunningCopies() : std::vector<TabletCopyRunner::Running>();
        b += "<h2>Tablet copies in progress (" + std::to_string(copies.size()) + ")</h2>";
        if (!copies.empty()) {
          b += "<table><tr><th>Tablet id</th><th>From server</th><th>Fetched</th></tr>";
          for (const auto& c : copies) {
            b += "<tr><td>" + EscapeHtml(c.tablet_id) + "</td><td>" + EscapeHtml(c.source_uuid) +
                 "</td><td>" + HumanReadableBytes(c.bytes_done) + " of " +
                 (c.bytes_total > 0 ? HumanReadableBytes(c.bytes_total) : std::string("?")) +
                 "</td></tr>";
          }
          b += "</table>";
        }
        if (copy_runner_) {
          b += "<p>Copies done since start: " + std::to_string(copy_runner_->copies_done()) +
               "; failed: " + std::to_string(copy_runner_->copies_failed()) + ".</p>";
        }
      });
  // One tablet: what /tablets shows in a row, one item a line. The master's pages link
  // each replica here.
  webserver()->RegisterPage(
      "/tablet", "", [this](const server::WebRequest& req, server::WebResponse* resp) {
        const std::string id = req.GetArg("id");
        std::shared_ptr<Tablet> t = id.empty() ? nullptr : tablets_->Lookup(id);
        std::string& b = resp->body;
        if (!t) {
          resp->status_code = 404;
          b += "<h2>Tablet " + EscapeHtml(id) + "</h2><p class=\"bad\">" +
               (id.empty() ? std::string("No tablet id given: /tablet?id=&lt;tablet id&gt;.")
                           : "This server hosts no tablet " + EscapeHtml(id) + ".") +
               " See <a href=\"/tablets\">the tablets it hosts</a>.</p>";
          return;
        }
        const TabletMetadataPB& m = t->metadata();
        std::string state = TabletStateName(t->state());
        if (t->state() == TabletState::kFailed) state += ": " + t->failure().ToString();
        std::vector<std::pair<std::string, std::string>> rows = {
            {"Tablet id", EscapeHtml(m.tablet_id())},
            {"Table", EscapeHtml(m.table_name())},
            {"Partition", EscapeHtml(PartitionText(*t))},
            {"State", "<span class=\"" +
                          std::string(t->state() == TabletState::kRunning ? "ok" : "bad") + "\">" +
                          EscapeHtml(state) + "</span>"},
            {"On-disk size", HumanReadableBytes(t->OnDiskSize())},
        };
        master::ConsensusStatePB c;
        if (tablets_->ConsensusStateOf(*t, &c)) {
          auto name = [&](const std::string& u) {
            return u.empty() ? std::string("none known")
                             : EscapeHtml(u) + (u == uuid() ? " (this server)" : "");
          };
          std::string peers;
          for (const auto& v : c.voter_uuids()) peers += name(v) + "<br>";
          for (const auto& l : c.learner_uuids()) peers += name(l) + " learner<br>";
          rows.insert(
              rows.end(),
              {{"Role", "<span class=\"role\">" + master::ReplicaRolePB_Name(c.role()) + "</span>"},
               {"Term", std::to_string(c.term())},
               {"Leader", name(c.leader_uuid())},
               {"Committed / applied / last index", std::to_string(c.committed_index()) + " / " +
                                                        std::to_string(c.applied_index()) + " / " +
                                                        std::to_string(c.last_index())},
               {"Peers", peers}});
        }
        if (const TabletMetrics* tm = t->tablet_metrics()) {
          auto v = [](const std::shared_ptr<Counter>& x) { return std::to_string(x->value()); };
          rows.insert(rows.end(), {{"Write RPCs", v(tm->write_requests)},
                                   {"Rows inserted / upserted / updated / deleted",
                                    v(tm->rows_inserted) + " / " + v(tm->rows_upserted) + " / " +
                                        v(tm->rows_updated) + " / " + v(tm->rows_deleted)},
                                   {"Get RPCs", v(tm->get_requests)},
                                   {"Keys looked up", v(tm->get_keys)},
                                   {"Scan RPCs", v(tm->scan_requests)},
                                   {"Rows scanned / returned",
                                    v(tm->rows_scanned) + " / " + v(tm->rows_returned)}});
        }
        b += "<h2>Tablet " + EscapeHtml(m.tablet_id()) + "</h2><table>";
        for (const auto& [k, val] : rows) {
          b += "<tr><th>" + EscapeHtml(k) + "</th><td>" + val + "</td></tr>";
        }
        b += "</table><p><a href=\"/tablets\">All tablets of this server</a></p>";
      });
  webserver()->RegisterPage(
      "/scans", "Scans", [this](const server::WebRequest&, server::WebResponse* resp) {
        auto scanners = scanners_->ListScanners();
        std::string& b = resp->body;
        b += "<h2>Open scanners (" + std::to_string(scanners.size()) + ")</h2>";
        b += "<table><tr><th>Scanner id</th><th>Tablet</th><th>Table</th><th>Projection</th>"
             "<th>Predicates</th><th>Rows returned</th><th>Rows scanned</th><th>Age</th>"
             "<th>Idle</th></tr>";
        for (const ScannerInfo& s : scanners) {
          b += "<tr><td>" + EscapeHtml(s.id) + "</td><td>" + EscapeHtml(s.tablet_id) + "</td><td>" +
               EscapeHtml(s.table_name) + "</td><td>" + EscapeHtml(s.projection) + "</td><td>" +
               EscapeHtml(s.predicates) + "</td><td>" + std::to_string(s.rows_returned) +
               "</td><td>" + std::to_string(s.rows_scanned) + "</td><td>" +
               EscapeHtml(s.age.ToString()) + "</td><td>" + EscapeHtml(s.idle.ToString()) +
               "</td></tr>";
        }
        b += "</table>";
      });
}

}  // namespace nyala::tserver
