// The tablet server's own metrics, declared once.
//
// TServerMetrics: per-server series, shared by the tablets, the services and the
// scanners of one server (totals over every tablet, and what belongs to no tablet:
// latencies, rejected and duplicate requests, scanner counts).
//
// TabletMetrics: the same figures per tablet (writes, gets, scans), as separate
// families named tablet_* with labels tablet_id and table, so that summing a family
// never counts a row twice. Per-tablet labels are bounded by the tablets one server
// hosts (hundreds to a few thousand), not by the data or the clients, so the number
// of series stays bounded too; a deleted tablet's series are removed from the
// registry (TabletMetrics::RemoveFromRegistry), so /metrics only shows tablets the
// server hosts. The counters are shared with the registry: a scan still running on
// a deleted tablet keeps counting into counters nobody renders.
//
// Thread-safety: the counters are atomics; the structs are immutable after
// construction. The registry must outlive them.
#pragma once

#include <memory>
#include <string>

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
  // Raft, summed over this server's replicas (Tablet::NoteLeadership).
  Counter* leaderships_won;   // a replica became its tablet's leader
  Counter* leaderships_lost;  // a leading replica stopped leading
  Counter* term_changes;      // a replica moved to a newer term
  Counter* leader_changes;    // a replica learnt of a new leader (itself or another)
  Counter* leader_step_downs;  // LeaderStepDown transfers started here
  Histogram* write_latency_us;
  // tserver_write_stage_duration_seconds{stage=...}: a write's stages (write_trace.h).
  Histogram* write_queue;
  Histogram* write_prepare;
  Histogram* write_lock_wait;
  Histogram* write_handoff;
  Histogram* write_append;
  Histogram* write_commit;
  Histogram* write_leader_sync;
  Histogram* write_apply;
  Histogram* write_respond;
  Histogram* get_latency_us;
  Histogram* scan_latency_us;
};

struct TabletMetrics {
  // The series of tablet `tablet_id` of table `table` (created, or found if they
  // exist, e.g. when a store is reopened in the same process).
  TabletMetrics(MetricRegistry* registry, const std::string& tablet_id, const std::string& table);

  // Removes every series labelled tablet_id=`tablet_id` (the tablet was deleted).
  static void RemoveFromRegistry(MetricRegistry* registry, const std::string& tablet_id);

  // Write RPCs that reached the tablet (not those answered from RequestTracker).
  std::shared_ptr<Counter> write_requests;
  std::shared_ptr<Counter> rows_inserted;
  std::shared_ptr<Counter> rows_upserted;
  std::shared_ptr<Counter> rows_updated;
  std::shared_ptr<Counter> rows_deleted;
  std::shared_ptr<Counter> get_requests;
  std::shared_ptr<Counter> get_keys;
  // Scan RPCs: new scans and continuations.
  std::shared_ptr<Counter> scan_requests;
  std::shared_ptr<Counter> rows_scanned;
  std::shared_ptr<Counter> rows_returned;
};

}  // namespace nyala::tserver
