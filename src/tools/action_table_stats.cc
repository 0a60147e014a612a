// nyala table statistics: a table's size on disk and live row estimate, in total and
// per tablet and replica, from the master's GetTableStatistics (the figures the
// tablet servers report with their tablets every --update_tablet_stats_interval_ms).
#include <gflags/gflags.h>
#include <nlohmann/json.hpp>

#include <cstdio>

#include "common/human_readable.h"
#include "common/result.h"
#include "nyala/client.h"
#include "nyala/partition.h"
#include "tools/cluster_admin.h"
#include "tools/tool_action.h"

DECLARE_int64(timeout_ms);

namespace nyala::tools {

using nlohmann::json;

namespace {

std::string Address(const master::TSInfoPB& info) {
  if (info.rpc_addresses().empty()) return "";
  const auto& hp = info.rpc_addresses(0);
  return hp.host() + ":" + std::to_string(hp.port());
}

Status TableStatistics(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(auto format, OutputFormatFlag());
  ASSIGN_OR_RETURN(auto admin,
                   AdminClient::Create(args[0], MonoDelta::FromMilliseconds(FLAGS_timeout_ms)));
  ASSIGN_OR_RETURN(master::GetTableStatisticsResponsePB st, admin->GetTableStatistics(args[1]));
  // Partitions as typed key ranges, from the table's schema; as encoded keys if the
  // table cannot be opened (dropped meanwhile, say).
  ASSIGN_OR_RETURN(auto client, ConnectToCluster(args[0]));
  Result<std::shared_ptr<client::Table>> table = client->OpenTable(args[1]);
  auto partition_text = [&](const PartitionPB& pb) {
    const Partition p = Partition::FromPB(pb);
    if (!table.ok()) return p.ToString();
    return (*table)->partition_schema().PartitionToString(p, (*table)->schema());
  };
  if (format == OutputFormat::kJson) {
    json tablets = json::array();
    for (const auto& t : st.tablets()) {
      json replicas = json::array();
      for (const auto& r : t.replicas()) {
        replicas.push_back({{"ts_uuid", r.ts_uuid()},
                            {"address", Address(r.ts_info())},
                            {"live", r.ts_live()},
                            {"role", master::ReplicaRolePB_Name(r.role())},
                            {"on_disk_size", r.has_stats() ? json(r.on_disk_size()) : json()},
                            {"live_row_count", r.has_stats() ? json(r.live_row_count()) : json()}});
      }
      tablets.push_back({{"tablet_id", t.tablet_id()},
                         {"partition", partition_text(t.partition())},
                         {"on_disk_size", t.has_stats() ? json(t.on_disk_size()) : json()},
                         {"live_row_count", t.has_stats() ? json(t.live_row_count()) : json()},
                         {"replicas", replicas}});
    }
    json j = {{"table_name", st.table_name()},
              {"table_id", st.table_id()},
              {"on_disk_size", st.on_disk_size()},
              {"live_row_count", st.live_row_count()},
              {"num_replicas", st.num_replicas()},
              {"num_tablets", st.tablets_size()},
              {"tablets_without_stats", st.tablets_without_stats()},
              {"tablets", tablets}};
    printf("%s\n", DumpJson(j).c_str());
    return Status::OK();
  }
  // One line per replica (CSV: every column a value; table: for people).
  TableOutput out({"tablet_id", "partition", "tablet_on_disk_size", "tablet_live_row_count",
                   "ts_uuid", "address", "role", "on_disk_size", "live_row_count"});
  for (const auto& t : st.tablets()) {
    for (const auto& r : t.replicas()) {
      const bool csv = format == OutputFormat::kCsv;
      auto size_text = [&](bool has, int64_t v) {
        return has ? (csv ? std::to_string(v) : HumanReadableBytes(v))
                   : std::string(csv ? "" : "-");
      };
      auto rows_text = [&](bool has, int64_t v) {
        return has ? std::to_string(v) : std::string(csv ? "" : "-");
      };
      out.AddRow({t.tablet_id(), partition_text(t.partition()),
                  size_text(t.has_stats(), t.on_disk_size()),
                  rows_text(t.has_stats(), t.live_row_count()), r.ts_uuid(), Address(r.ts_info()),
                  master::ReplicaRolePB_Name(r.role()) + (r.ts_live() ? "" : " (dead)"),
                  size_text(r.has_stats(), r.on_disk_size()),
                  rows_text(r.has_stats(), r.live_row_count())});
    }
  }
  if (format == OutputFormat::kTable) {
    printf("Table %s (id %s), %d tablet(s) of %d replica(s)\n", st.table_name().c_str(),
           st.table_id().c_str(), st.tablets_size(), st.num_replicas());
    printf("  on disk size:   %s (%lld bytes)\n", HumanReadableBytes(st.on_disk_size()).c_str(),
           static_cast<long long>(st.on_disk_size()));
    printf("  live row count: %lld (estimate)\n", static_cast<long long>(st.live_row_count()));
    if (st.tablets_without_stats() > 0) {
      printf("  %d tablet(s) not reported yet (counted as 0)\n", st.tablets_without_stats());
    }
    printf("\n");
  }
  out.Print(format);
  return Status::OK();
}

const char kStatisticsDetails[] =
    "The figures are those the tablet servers reported last: each measures its tablets\n"
    "every --update_tablet_stats_interval_ms (a tablet server flag, default 5 s) and sends\n"
    "what changed with its next heartbeat, so fresh writes show up after a few seconds.\n"
    "on_disk_size: bytes of the rows in RocksDB (SST files and memtables). live_row_count:\n"
    "RocksDB's key estimate (exact for inserts; updates and deletes are counted only\n"
    "approximately until compaction); `nyala table count` counts exactly.\n"
    "The table's figures count one copy of each tablet (its leader's, else its largest\n"
    "replica's), not every replica. Per replica: '-' (null in JSON) until it reports.\n"
    "--format=json prints one object: table_name, table_id, on_disk_size, live_row_count,\n"
    "num_replicas, num_tablets, tablets_without_stats, and tablets (tablet_id, partition,\n"
    "on_disk_size, live_row_count, replicas: ts_uuid, address, live, role, on_disk_size,\n"
    "live_row_count). Sizes are bytes, as numbers.";

}  // namespace

void RegisterTableStatisticsActions() {
  AllActions().push_back({"table",
                          "statistics",
                          "Show a table's on-disk size and live row estimate, in total and per "
                          "tablet and replica.",
                          "<master_addresses> <table>",
                          {"format"},
                          2,
                          2,
                          TableStatistics,
                          kStatisticsDetails});
}

}  // namespace nyala::tools
