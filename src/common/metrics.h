// Metrics: counters, gauges and latency histograms, each identified by a name and
// a set of labels, collected in a MetricRegistry that renders them as JSON (for
// /metrics) or Prometheus text exposition format 0.0.4 (for /metrics_prometheus).
//
// Naming follows Prometheus' conventions (`promtool check metrics` is clean, see
// test/prometheus-metrics-itest.sh): base units in names (_seconds, _bytes), counters
// end in _total, and latencies are histograms named *_seconds. A histogram records
// integer microseconds (Histogram::Increment(micros)) and is exported in seconds:
// Prometheus buckets (_bucket{le="..."}, _sum, _count) and, in JSON, count plus sum,
// mean, min, max and percentiles in seconds.
//
// Names and label names are compile-time constants in our code, so a malformed
// one, or an existing name asked for as a different type, is a CHECK failure.
// Label values are data (table names, ...) and may hold any bytes; they are
// escaped on output.
//
// Thread-safety: Counter, Gauge and Histogram are updated with atomics from any
// thread. MetricRegistry is thread-safe; the raw pointers it returns stay valid for
// the registry's life unless their series is removed with RemoveSeriesWithLabel()
// (series with a bounded but changing population, such as per-tablet ones, take a
// shared counter from FindOrCreateSharedCounter() instead, which outlives removal).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/histogram.h"
#include "common/mutex.h"
#include "common/striped.h"
#include "common/thread_annotations.h"

namespace nyala {

// Label name -> value. Order does not matter: {a,b} and {b,a} are the same series.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// A monotonically increasing count.
class Counter {
 public:
  Counter() = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  void Increment(int64_t n = 1);  // n >= 0
  int64_t value() const { return value_.Load(); }

 private:
  StripedInt64 value_;  // bumped on every RPC by many threads: one cache line each
};

// A value that goes up and down.
class Gauge {
 public:
  Gauge() = default;
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  void Set(int64_t v) { value_.store(v, std::memory_order_relaxed); }
  void Increment(int64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

class MetricRegistry {
 public:
  MetricRegistry();
  ~MetricRegistry();
  MetricRegistry(const MetricRegistry&) = delete;
  MetricRegistry& operator=(const MetricRegistry&) = delete;

  // Returns the series `name`{`labels`}, creating it (and its family, with `help`)
  // if needed. A family keeps the help text it was created with.
  Counter* FindOrCreateCounter(std::string_view name, std::string_view help,
                               const MetricLabels& labels = {});
  // The same series, shared: the counter stays valid after RemoveSeriesWithLabel()
  // removes the series (updates then go nowhere). For series that come and go.
  std::shared_ptr<Counter> FindOrCreateSharedCounter(std::string_view name, std::string_view help,
                                                     const MetricLabels& labels = {});
  Gauge* FindOrCreateGauge(std::string_view name, std::string_view help,
                           const MetricLabels& labels = {});
  // A latency histogram: `name` must end in _seconds; record microseconds. It is
  // exported as a Prometheus histogram, so it may not have an "le" label, and no
  // other metric may be called <name>_bucket, <name>_sum or <name>_count.
  Histogram* FindOrCreateHistogram(std::string_view name, std::string_view help,
                                   const MetricLabels& labels = {});

  // A gauge whose value is computed on each render (e.g. RocksDB properties,
  // queue length). `fn` must be thread-safe and must outlive the registry or be
  // removed with RemoveFunctionGauges(owner_tag). Registering the same name and
  // labels again replaces the function and its owner tag. It may share a name
  // with plain gauges, but not name and labels.
  //
  // `fn` runs on the rendering thread without the registry's lock, so it may take
  // its own locks and may call FindOrCreate*(), but not RegisterFunctionGauge()
  // or RemoveFunctionGauges(). Replacing or removing a function gauge waits for a
  // render that is running it, so do not do either while holding a lock that the
  // function takes.
  void RegisterFunctionGauge(std::string_view name, std::string_view help,
                             const MetricLabels& labels, std::function<double()> fn,
                             const void* owner_tag = nullptr);
  // The same for a count that only goes up, kept elsewhere (a log's bytes written,
  // a process's CPU time): exported as a counter, so `name` should end in _total.
  // Removed with RemoveFunctionGauges(owner_tag) like the gauges.
  void RegisterFunctionCounter(std::string_view name, std::string_view help,
                               const MetricLabels& labels, std::function<double()> fn,
                               const void* owner_tag = nullptr);
  // Removes every function gauge registered with `owner_tag`. On return none of
  // their functions is running or will run again.
  void RemoveFunctionGauges(const void* owner_tag);

  // Removes every counter, gauge and histogram series that has label `label` with
  // value `value` (e.g. tablet_id=<id> when a tablet is deleted), and the families
  // left empty. Function gauges are removed by their owner (RemoveFunctionGauges).
  // Raw pointers returned for the removed series dangle afterwards; shared ones
  // stay valid. Asking for the series again creates a new one, from zero. Returns
  // the number of series removed.
  size_t RemoveSeriesWithLabel(std::string_view label, std::string_view value);

  // {"metrics":[{"name":..,"type":"counter"|"gauge"|"histogram","help":..,
  //              "labels":{..},"value":N}, ...]}
  // Histograms carry "count" and, in seconds, "sum","mean","min","max","p50","p75",
  // "p95","p99","p999","p9999" in place of "value". Only metrics whose name contains
  // `name_filter` (empty = all). Sorted by name, then labels.
  std::string ToJson(std::string_view name_filter = {}) const;
  // Prometheus text format 0.0.4. Histograms are histograms with cumulative
  // buckets from 10 us to 60 s (le in seconds; HistogramBucketsMicros()) and +Inf,
  // plus <name>_sum (seconds) and <name>_count. A bucket counts the values whose
  // histogram bucket lies wholly at or below its bound, so it may miss values
  // within 1% of the bound; +Inf and _count are exact.
  std::string ToPrometheusText() const;

  // The Prometheus bucket bounds of histograms, in microseconds.
  static const std::vector<int64_t>& HistogramBucketsMicros();

  // The sum of every series of counter or gauge family `name` (function ones
  // included: they run, so the same rules as for rendering apply); 0 if there is no
  // such family. For overview pages and rate sampling.
  double SumOfFamily(std::string_view name) const;

  // Number of series (name + labels) registered.
  size_t NumMetrics() const;

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  void RegisterFunction(Type type, std::string_view name, std::string_view help,
                        const MetricLabels& labels, std::function<double()> fn,
                        const void* owner_tag);
  struct FunctionGauge;
  struct Series;
  struct Family;
  struct Sample;

  // Returns the series `name`{`labels`}, creating the family and series as
  // needed. CHECKs the name, the labels and that the family has type `type`.
  Series* FindOrCreateSeries(std::string_view name, std::string_view help, Type type,
                             const MetricLabels& labels) REQUIRES(mu_);
  // Reads every series whose name contains `name_filter`, sorted by name then
  // labels. Function gauges are called after mu_ is released.
  std::vector<Sample> Collect(std::string_view name_filter) const EXCLUDES(mu_);

  mutable Mutex mu_;
  std::map<std::string, std::unique_ptr<Family>, std::less<>> families_ GUARDED_BY(mu_);
};

// Registers the process metrics Prometheus clients export (from /proc/self):
// process_cpu_seconds_total, process_resident_memory_bytes,
// process_virtual_memory_bytes, process_open_fds, process_max_fds and
// process_start_time_seconds (seconds since the Unix epoch). Linux only; elsewhere
// they read 0. Owner tag: `registry` itself.
void RegisterProcessMetrics(MetricRegistry* registry);

}  // namespace nyala
