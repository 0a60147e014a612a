#include "tserver/tserver_metrics.h"

namespace nyala::tserver {

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
      write_latency_us(r->FindOrCreateHistogram("tserver_write_latency_us",
                                                "Time to apply one Write RPC, in microseconds")),
      get_latency_us(r->FindOrCreateHistogram("tserver_get_latency_us",
                                              "Time to answer one Get RPC, in microseconds")),
      scan_latency_us(r->FindOrCreateHistogram(
          "tserver_scan_latency_us", "Time to produce one Scan batch, in microseconds")) {}

}  // namespace nyala::tserver
