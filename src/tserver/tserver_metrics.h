// The tablet server's own metrics, declared once and shared by the tablets, the
// services and the scanners of one server (per-server series; the tablet id is not
// a label, so the number of series does not grow with the number of tablets).
//
// Thread-safety: the counters are atomics; the struct is immutable after
// construction. The registry must outlive it.
#pragma once

#include "common/metrics.h"

namespace nyala::tserver {

struct TServerMetrics {
  explicit TServerMetrics(MetricRegistry* registry);

  MetricRegistry* const registry;
  Counter* write_requests;
  Counter* rows_inserted;
  Counter* rows_upserted;
  Counter* rows_updated;
  Counter* rows_deleted;
  Counter* rows_ignored;
  Counter* write_row_errors;
  Counter* get_requests;
  Counter* get_keys;
  Counter* get_rows_found;
  Counter* scan_requests;
  Counter* scanners_opened;
  Counter* scanners_expired;
  Counter* rows_scanned;
  Counter* rows_returned;
  Counter* rejected_requests;
  Counter* duplicate_requests;
  Histogram* write_latency_us;
  Histogram* get_latency_us;
  Histogram* scan_latency_us;
};

}  // namespace nyala::tserver
