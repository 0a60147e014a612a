#include "tserver/tserver_metrics.h"

namespace nyala::tserver {

namespace {
constexpr char kWriteStageHelp[] =
    "Time a write spends on the leader per stage: queue (for a service thread), prepare "
    "(decode, row locks, reads; lock_wait is its wait for the locks), handoff (to the "
    "consensus worker), append (to the Raft log until sent), commit (until a majority holds "
    "it; leader_sync is the leader's own log sync within it), apply, respond";
}  // namespace

TServerMetrics::TServerMetrics(MetricRegistry* r)
    : registry(r),
      write_requests(r->FindOrCreateCounter("tserver_write_requests_total", "Write RPCs handled")),
      rows_inserted(r->FindOrCreateCounter("tserver_rows_written_total",
                                           "Rows written, by operation", {{"op", "insert"}})),
      rows_upserted(r->FindOrCreateCounter("tserver_rows_written_total", "", {{"op", "upsert"}})),
      rows_updated(r->FindOrCreateCounter("tserver_rows_written_total", "", {{"op", "update"}})),
      rows_deleted(r->FindOrCreateCounter("tserver_rows_written_total", "", {{"op", "delete"}})),
      rows_ignored(r->FindOrCreateCounter(
          "tserver_rows_ignored_total",
          "INSERT_IGNORE/UPDATE_IGNORE/DELETE_IGNORE operations that found nothing to do")),
      write_row_errors(r->FindOrCreateCounter("tserver_write_row_errors_total",
                                              "Write operations that failed with a row error")),
      get_requests(r->FindOrCreateCounter("tserver_get_requests_total", "Get RPCs handled")),
      get_keys(r->FindOrCreateCounter("tserver_get_keys_total", "Keys looked up by Get")),
      get_rows_found(r->FindOrCreateCounter("tserver_get_rows_found_total", "Keys Get found")),
      scan_requests(r->FindOrCreateCounter("tserver_scan_requests_total", "Scan RPCs handled")),
      scanners_opened(r->FindOrCreateCounter("tserver_scanners_opened_total",
                                             "Scans started (new scan requests)")),
      scanners_expired(r->FindOrCreateCounter("tserver_scanners_expired_total",
                                              "Scanners dropped after --scanner_ttl_ms idle")),
      rows_scanned(r->FindOrCreateCounter("tserver_rows_scanned_total",
                                          "Rows read by scans before predicates")),
      rows_returned(
          r->FindOrCreateCounter("tserver_scan_rows_returned_total", "Rows returned by scans")),
      rejected_requests(r->FindOrCreateCounter("tserver_rejected_requests_total",
                                               "Requests answered with a TabletServerErrorPB")),
      duplicate_requests(r->FindOrCreateCounter(
          "tserver_duplicate_writes_total",
          "Retried Write RPCs answered from the remembered response instead of applied again")),
      leaderships_won(r->FindOrCreateCounter(
          "tserver_raft_leaderships_won_total",
          "Times a replica on this server became its tablet's leader (by election or transfer)")),
      leaderships_lost(r->FindOrCreateCounter("tserver_raft_leaderships_lost_total",
                                              "Times a leading replica on this server stopped "
                                              "leading")),
      term_changes(
          r->FindOrCreateCounter("tserver_raft_term_changes_total",
                                 "Times a replica on this server moved to a newer Raft term")),
      leader_changes(r->FindOrCreateCounter(
          "tserver_raft_leader_changes_total",
          "Times a replica on this server learnt of a new leader of its tablet")),
      leader_step_downs(
          r->FindOrCreateCounter("tserver_leader_step_downs_total",
                                 "Leadership transfers started on request (LeaderStepDown)")),
      write_latency_us(r->FindOrCreateHistogram("tserver_write_duration_seconds",
                                                "Time to apply one Write RPC")),
      write_queue(r->FindOrCreateHistogram("tserver_write_stage_duration_seconds", kWriteStageHelp,
                                           {{"stage", "queue"}})),
      write_prepare(r->FindOrCreateHistogram("tserver_write_stage_duration_seconds",
                                             kWriteStageHelp, {{"stage", "prepare"}})),
      write_lock_wait(r->FindOrCreateHistogram("tserver_write_stage_duration_seconds",
                                               kWriteStageHelp, {{"stage", "lock_wait"}})),
      write_handoff(r->FindOrCreateHistogram("tserver_write_stage_duration_seconds",
                                             kWriteStageHelp, {{"stage", "handoff"}})),
      write_append(r->FindOrCreateHistogram("tserver_write_stage_duration_seconds", kWriteStageHelp,
                                            {{"stage", "append"}})),
      write_commit(r->FindOrCreateHistogram("tserver_write_stage_duration_seconds", kWriteStageHelp,
                                            {{"stage", "commit"}})),
      write_leader_sync(r->FindOrCreateHistogram("tserver_write_stage_duration_seconds",
                                                 kWriteStageHelp, {{"stage", "leader_sync"}})),
      write_apply(r->FindOrCreateHistogram("tserver_write_stage_duration_seconds", kWriteStageHelp,
                                           {{"stage", "apply"}})),
      write_respond(r->FindOrCreateHistogram("tserver_write_stage_duration_seconds",
                                             kWriteStageHelp, {{"stage", "respond"}})),
      get_latency_us(
          r->FindOrCreateHistogram("tserver_get_duration_seconds", "Time to answer one Get RPC")),
      scan_latency_us(r->FindOrCreateHistogram("tserver_scan_duration_seconds",
                                               "Time to produce one Scan batch")) {}

}  // namespace nyala::tserver

namespace nyala::tserver {

namespace {
constexpr char kTabletIdLabel[] = "tablet_id";
}  // namespace

TabletMetrics::TabletMetrics(MetricRegistry* r, const std::string& tablet_id,
                             const std::string& table) {
  const MetricLabels l = {{kTabletIdLabel, tablet_id}, {"table", table}};
  auto op = [&](const char* name) {
    MetricLabels with_op = l;
    with_op.emplace_back("op", name);
    return r->FindOrCreateSharedCounter("tablet_rows_written_total",
                                        "Rows written to the tablet, by operation", with_op);
  };
  write_requests = r->FindOrCreateSharedCounter("tablet_write_requests_total",
                                                "Write RPCs applied to the tablet", l);
  rows_inserted = op("insert");
  rows_upserted = op("upsert");
  rows_updated = op("update");
  rows_deleted = op("delete");
  get_requests =
      r->FindOrCreateSharedCounter("tablet_get_requests_total", "Get RPCs of the tablet", l);
  get_keys = r->FindOrCreateSharedCounter("tablet_get_keys_total",
                                          "Keys looked up in the tablet by Get", l);
  scan_requests = r->FindOrCreateSharedCounter(
      "tablet_scan_requests_total", "Scan RPCs of the tablet (new scans and continuations)", l);
  rows_scanned = r->FindOrCreateSharedCounter(
      "tablet_rows_scanned_total", "Rows of the tablet read by scans before predicates", l);
  rows_returned = r->FindOrCreateSharedCounter("tablet_scan_rows_returned_total",
                                               "Rows of the tablet returned by scans", l);
}

void TabletMetrics::RemoveFromRegistry(MetricRegistry* registry, const std::string& tablet_id) {
  registry->RemoveSeriesWithLabel(kTabletIdLabel, tablet_id);
}

}  // namespace nyala::tserver
