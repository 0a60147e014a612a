#include "common/metrics.h"

#include <glog/logging.h>

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

namespace nyala {
namespace {

constexpr double kJsonPercentiles[] = {50, 75, 95, 99, 99.9, 99.99};
constexpr const char* kJsonPercentileKeys[] = {"p50", "p75", "p95", "p99", "p999", "p9999"};
static_assert(std::size(kJsonPercentiles) == std::size(kJsonPercentileKeys));
// Histograms record microseconds and are exported in seconds.
constexpr double kMicrosPerSecond = 1e6;

bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// [a-zA-Z_:][a-zA-Z0-9_:]*
bool IsValidMetricName(std::string_view name) {
  if (name.empty() || IsDigit(name[0])) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return IsAlpha(c) || IsDigit(c) || c == '_' || c == ':'; });
}

// [a-zA-Z_][a-zA-Z0-9_]*, and not the reserved "__" prefix.
bool IsValidLabelName(std::string_view name) {
  if (name.empty() || IsDigit(name[0]) || name.starts_with("__")) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return IsAlpha(c) || IsDigit(c) || c == '_'; });
}

// Sorted by label name; CHECKs the label names.
MetricLabels CanonicalLabels(std::string_view metric, const MetricLabels& labels) {
  MetricLabels sorted = labels;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    CHECK(IsValidLabelName(sorted[i].first))
        << "metric " << metric << ": invalid label name '" << sorted[i].first << "'";
    CHECK(i == 0 || sorted[i].first != sorted[i - 1].first)
        << "metric " << metric << ": duplicate label '" << sorted[i].first << "'";
  }
  return sorted;
}

// Appends `s` as a JSON string literal. Invalid UTF-8 becomes U+FFFD so the
// output is always valid JSON.
void AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          *out += "\\\"";
          break;
        case '\\':
          *out += "\\\\";
          break;
        case '\n':
          *out += "\\n";
          break;
        case '\r':
          *out += "\\r";
          break;
        case '\t':
          *out += "\\t";
          break;
        case '\b':
          *out += "\\b";
          break;
        case '\f':
          *out += "\\f";
          break;
        default:
          if (c < 0x20) {
            char buf[8];
            snprintf(buf, sizeof(buf), "\\u%04x", c);
            *out += buf;
          } else {
            out->push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    // Multi-byte sequence: lead byte gives the length; the second byte's range
    // excludes overlong forms, surrogates and code points above U+10FFFF.
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    }
    bool valid = len != 0 && i + len <= s.size();
    for (size_t k = 1; valid && k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      valid = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    }
    if (valid) {
      out->append(s.substr(i, len));
      i += len;
    } else {
      *out += "\\ufffd";
      ++i;
    }
  }
  out->push_back('"');
}

std::string FormatDouble(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  DCHECK(ec == std::errc());
  return std::string(buf, end);
}

// Microseconds as seconds: 2500 -> "0.0025" (fixed notation, shortest exact form).
std::string MicrosAsSeconds(int64_t micros) {
  char buf[64];
  auto [end, ec] =
      std::to_chars(buf, buf + sizeof(buf), static_cast<double>(micros) / kMicrosPerSecond,
                    std::chars_format::fixed);
  DCHECK(ec == std::errc());
  return std::string(buf, end);
}

// JSON has no NaN or infinity.
std::string JsonNumber(double v) { return std::isfinite(v) ? FormatDouble(v) : "null"; }

// Prometheus escaping: HELP text escapes backslash and newline; label values
// also escape the double quote.
void AppendPrometheusEscaped(std::string_view s, bool quote, std::string* out) {
  for (char c : s) {
    if (c == '\\') {
      *out += "\\\\";
    } else if (c == '\n') {
      *out += "\\n";
    } else if (quote && c == '"') {
      *out += "\\\"";
    } else {
      out->push_back(c);
    }
  }
}

// `{k="v",...,extra_name="extra_value"}`, or nothing if there are no labels.
void AppendPrometheusLabels(const MetricLabels& labels, std::string_view extra_name,
                            std::string_view extra_value, std::string* out) {
  if (labels.empty() && extra_name.empty()) return;
  out->push_back('{');
  bool first = true;
  auto append = [&](std::string_view k, std::string_view v) {
    if (!first) out->push_back(',');
    first = false;
    out->append(k);
    *out += "=\"";
    AppendPrometheusEscaped(v, /*quote=*/true, out);
    out->push_back('"');
  };
  for (const auto& [k, v] : labels) append(k, v);
  if (!extra_name.empty()) append(extra_name, extra_value);
  out->push_back('}');
}

}  // namespace

void Counter::Increment(int64_t n) {
  DCHECK_GE(n, 0) << "counters only go up";
  value_.Add(n);
}

struct MetricRegistry::FunctionGauge {
  explicit FunctionGauge(std::function<double()> f) : fn(std::move(f)) {}
  // Held while `fn` runs, so that clearing it waits for a running call.
  Mutex mu;
  std::function<double()> fn GUARDED_BY(mu);  // empty once removed or replaced
};

struct MetricRegistry::Series {
  // Exactly one of these is set, according to the family's type (a gauge family
  // holds either kind of gauge). Counters and histograms are shared, so that one
  // whose series is removed stays valid for a holder or a render still using it.
  std::shared_ptr<Counter> counter;
  std::unique_ptr<Gauge> gauge;
  std::shared_ptr<Histogram> histogram;
  std::shared_ptr<FunctionGauge> function;
  const void* owner_tag = nullptr;  // for `function`
};

struct MetricRegistry::Family {
  Type type;
  std::string help;
  std::map<MetricLabels, Series> series;  // keyed by canonical (sorted) labels
};

// One series as read for rendering.
struct MetricRegistry::Sample {
  std::string name;
  Type type;
  std::string help;
  MetricLabels labels;
  // Counter or gauge; `real` for a function one (which may be fractional).
  int64_t value = 0;
  double real = 0;
  std::shared_ptr<FunctionGauge> function;
  bool removed = false;  // a function gauge removed before it could be read
  // Histogram.
  std::shared_ptr<const Histogram> histogram;
  int64_t count = 0, sum = 0, min = 0, max = 0;
  double mean = 0;
  std::vector<int64_t> percentiles;  // at kJsonPercentiles
  std::vector<int64_t> buckets;      // cumulative, at HistogramBucketsMicros() and +Inf

  std::string FormatValue() const { return function ? FormatDouble(real) : std::to_string(value); }
};

const std::vector<int64_t>& MetricRegistry::HistogramBucketsMicros() {
  static const std::vector<int64_t> kBuckets = {
      10,    25,     50,     100,    250,     500,     1000,    2500,     5000,     10000,   25000,
      50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000, 30000000, 60000000};
  return kBuckets;
}

MetricRegistry::MetricRegistry() = default;
MetricRegistry::~MetricRegistry() = default;

MetricRegistry::Series* MetricRegistry::FindOrCreateSeries(std::string_view name,
                                                           std::string_view help, Type type,
                                                           const MetricLabels& labels) {
  CHECK(IsValidMetricName(name)) << "invalid metric name '" << name << "'";
  MetricLabels canonical = CanonicalLabels(name, labels);
  auto it = families_.find(name);
  if (it == families_.end()) {
    // A histogram also exports <name>_bucket, _sum and _count; keep those unambiguous.
    if (type == Type::kHistogram) {
      CHECK(name.ends_with("_seconds"))
          << "histogram " << name << ": latency histograms are named *_seconds";
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        CHECK(!families_.contains(std::string(name) + suffix))
            << "histogram " << name << " clashes with metric " << name << suffix;
      }
    }
    for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
      if (!name.ends_with(suffix)) continue;
      auto stem = families_.find(name.substr(0, name.size() - suffix.size()));
      CHECK(stem == families_.end() || stem->second->type != Type::kHistogram)
          << "metric " << name << " clashes with histogram " << stem->first;
    }
    auto family = std::make_unique<Family>();
    family->type = type;
    family->help = std::string(help);
    it = families_.emplace(std::string(name), std::move(family)).first;
  }
  Family& family = *it->second;
  CHECK(family.type == type) << "metric " << name << " already registered with another type";
  if (type == Type::kHistogram) {
    for (const auto& [k, v] : canonical) {
      CHECK_NE(k, "le") << "histogram " << name << " may not have an 'le' label";
    }
  }
  return &family.series[std::move(canonical)];
}

Counter* MetricRegistry::FindOrCreateCounter(std::string_view name, std::string_view help,
                                             const MetricLabels& labels) {
  return FindOrCreateSharedCounter(name, help, labels).get();
}

std::shared_ptr<Counter> MetricRegistry::FindOrCreateSharedCounter(std::string_view name,
                                                                   std::string_view help,
                                                                   const MetricLabels& labels) {
  MutexLock l(mu_);
  Series* s = FindOrCreateSeries(name, help, Type::kCounter, labels);
  CHECK(!s->function) << "counter " << name << " with these labels is a function counter";
  if (!s->counter) s->counter = std::make_shared<Counter>();
  return s->counter;
}

Gauge* MetricRegistry::FindOrCreateGauge(std::string_view name, std::string_view help,
                                         const MetricLabels& labels) {
  MutexLock l(mu_);
  Series* s = FindOrCreateSeries(name, help, Type::kGauge, labels);
  CHECK(!s->function) << "gauge " << name << " with these labels is a function gauge";
  if (!s->gauge) s->gauge = std::make_unique<Gauge>();
  return s->gauge.get();
}

Histogram* MetricRegistry::FindOrCreateHistogram(std::string_view name, std::string_view help,
                                                 const MetricLabels& labels) {
  MutexLock l(mu_);
  Series* s = FindOrCreateSeries(name, help, Type::kHistogram, labels);
  if (!s->histogram) s->histogram = std::make_shared<Histogram>();
  return s->histogram.get();
}

void MetricRegistry::RegisterFunctionGauge(std::string_view name, std::string_view help,
                                           const MetricLabels& labels, std::function<double()> fn,
                                           const void* owner_tag) {
  RegisterFunction(Type::kGauge, name, help, labels, std::move(fn), owner_tag);
}

void MetricRegistry::RegisterFunctionCounter(std::string_view name, std::string_view help,
                                             const MetricLabels& labels, std::function<double()> fn,
                                             const void* owner_tag) {
  RegisterFunction(Type::kCounter, name, help, labels, std::move(fn), owner_tag);
}

void MetricRegistry::RegisterFunction(Type type, std::string_view name, std::string_view help,
                                      const MetricLabels& labels, std::function<double()> fn,
                                      const void* owner_tag) {
  CHECK(fn) << "function metric " << name << " without a function";
  std::shared_ptr<FunctionGauge> replaced;
  {
    MutexLock l(mu_);
    Series* s = FindOrCreateSeries(name, help, type, labels);
    CHECK(!s->gauge && !s->counter)
        << "metric " << name << " with these labels is not a function metric";
    replaced = std::move(s->function);
    s->function = std::make_shared<FunctionGauge>(std::move(fn));
    s->owner_tag = owner_tag;
  }
  if (replaced) {
    // The previous owner may go away once its own removal finds nothing.
    MutexLock l(replaced->mu);
    replaced->fn = nullptr;
  }
}

void MetricRegistry::RemoveFunctionGauges(const void* owner_tag) {
  std::vector<std::shared_ptr<FunctionGauge>> removed;
  {
    MutexLock l(mu_);
    for (auto fit = families_.begin(); fit != families_.end();) {
      auto& series = fit->second->series;
      for (auto sit = series.begin(); sit != series.end();) {
        if (sit->second.function && sit->second.owner_tag == owner_tag) {
          removed.push_back(std::move(sit->second.function));
          sit = series.erase(sit);
        } else {
          ++sit;
        }
      }
      fit = series.empty() ? families_.erase(fit) : std::next(fit);
    }
  }
  // Outside mu_: this waits for a render that is running one of the functions.
  for (const auto& f : removed) {
    MutexLock l(f->mu);
    f->fn = nullptr;
  }
}

size_t MetricRegistry::RemoveSeriesWithLabel(std::string_view label, std::string_view value) {
  MutexLock l(mu_);
  size_t removed = 0;
  for (auto fit = families_.begin(); fit != families_.end();) {
    auto& series = fit->second->series;
    for (auto sit = series.begin(); sit != series.end();) {
      const MetricLabels& labels = sit->first;
      const bool match =
          !sit->second.function && std::any_of(labels.begin(), labels.end(), [&](const auto& kv) {
            return kv.first == label && kv.second == value;
          });
      if (match) {
        sit = series.erase(sit);
        removed++;
      } else {
        ++sit;
      }
    }
    fit = series.empty() ? families_.erase(fit) : std::next(fit);
  }
  return removed;
}

double MetricRegistry::SumOfFamily(std::string_view name) const {
  double sum = 0;
  for (const Sample& s : Collect(name)) {
    if (s.name != name || s.type == Type::kHistogram) continue;
    sum += s.function ? s.real : static_cast<double>(s.value);
  }
  return sum;
}

size_t MetricRegistry::NumMetrics() const {
  MutexLock l(mu_);
  size_t n = 0;
  for (const auto& [name, family] : families_) n += family->series.size();
  return n;
}

std::vector<MetricRegistry::Sample> MetricRegistry::Collect(std::string_view name_filter) const {
  std::vector<Sample> samples;
  {
    MutexLock l(mu_);
    for (const auto& [name, family] : families_) {
      if (name.find(name_filter) == std::string::npos) continue;
      for (const auto& [labels, series] : family->series) {
        Sample& s = samples.emplace_back();
        s.name = name;
        s.type = family->type;
        s.help = family->help;
        s.labels = labels;
        if (series.counter) s.value = series.counter->value();
        if (series.gauge) s.value = series.gauge->value();
        s.function = series.function;
        s.histogram = series.histogram;  // read below, without mu_
      }
    }
  }
  // Histograms take O(buckets) to read and functions run arbitrary code: do both
  // without mu_.
  for (Sample& s : samples) {
    if (s.function) {
      MutexLock l(s.function->mu);
      if (s.function->fn) {
        s.real = s.function->fn();
      } else {
        s.removed = true;
      }
    }
    if (s.histogram) {
      s.percentiles = s.histogram->ValuesAtPercentiles(kJsonPercentiles);
      s.count = s.histogram->TotalCount();
      s.sum = s.histogram->TotalSum();
      s.min = s.histogram->MinValue();
      s.max = s.histogram->MaxValue();
      s.mean = s.histogram->MeanValue();
      s.buckets = s.histogram->CumulativeCounts(HistogramBucketsMicros());
    }
  }
  std::erase_if(samples, [](const Sample& s) { return s.removed; });
  return samples;
}

std::string MetricRegistry::ToJson(std::string_view name_filter) const {
  std::string out = "{\"metrics\":[";
  bool first = true;
  for (const Sample& s : Collect(name_filter)) {
    out += first ? "\n{" : ",\n{";
    first = false;
    out += "\"name\":";
    AppendJsonString(s.name, &out);
    out += ",\"type\":";
    out += s.type == Type::kCounter ? "\"counter\""
           : s.type == Type::kGauge ? "\"gauge\""
                                    : "\"histogram\"";
    out += ",\"help\":";
    AppendJsonString(s.help, &out);
    out += ",\"labels\":{";
    for (size_t i = 0; i < s.labels.size(); ++i) {
      if (i > 0) out.push_back(',');
      AppendJsonString(s.labels[i].first, &out);
      out.push_back(':');
      AppendJsonString(s.labels[i].second, &out);
    }
    out.push_back('}');
    if (s.type == Type::kHistogram) {
      out += ",\"count\":" + std::to_string(s.count);
      out += ",\"sum\":" + MicrosAsSeconds(s.sum);
      out += ",\"mean\":" + JsonNumber(s.mean / kMicrosPerSecond);
      out += ",\"min\":" + MicrosAsSeconds(s.min);
      out += ",\"max\":" + MicrosAsSeconds(s.max);
      for (size_t i = 0; i < s.percentiles.size(); ++i) {
        out +=
            std::string(",\"") + kJsonPercentileKeys[i] + "\":" + MicrosAsSeconds(s.percentiles[i]);
      }
    } else if (s.function) {
      out += ",\"value\":" + JsonNumber(s.real);
    } else {
      out += ",\"value\":" + std::to_string(s.value);
    }
    out.push_back('}');
  }
  out += "\n]}\n";
  return out;
}

std::string MetricRegistry::ToPrometheusText() const {
  std::string out;
  const std::string* current = nullptr;  // family whose HELP/TYPE was written last
  const std::vector<Sample> samples = Collect({});
  for (const Sample& s : samples) {
    if (current == nullptr || *current != s.name) {
      current = &s.name;
      out += "# HELP " + s.name + " ";
      AppendPrometheusEscaped(s.help, /*quote=*/false, &out);
      out += "\n# TYPE " + s.name + " ";
      out += s.type == Type::kCounter ? "counter" : s.type == Type::kGauge ? "gauge" : "histogram";
      out.push_back('\n');
    }
    if (s.type != Type::kHistogram) {
      out += s.name;
      AppendPrometheusLabels(s.labels, {}, {}, &out);
      out += " " + s.FormatValue() + "\n";
      continue;
    }
    const std::vector<int64_t>& bounds = HistogramBucketsMicros();
    for (size_t i = 0; i < s.buckets.size(); ++i) {
      out += s.name + "_bucket";
      AppendPrometheusLabels(s.labels, "le",
                             i < bounds.size() ? MicrosAsSeconds(bounds[i]) : "+Inf", &out);
      out += " " + std::to_string(s.buckets[i]) + "\n";
    }
    out += s.name + "_sum";
    AppendPrometheusLabels(s.labels, {}, {}, &out);
    out += " " + MicrosAsSeconds(s.sum) + "\n";
    // The +Inf bucket, read in the same pass as the other buckets, so that they agree.
    out += s.name + "_count";
    AppendPrometheusLabels(s.labels, {}, {}, &out);
    out += " " + std::to_string(s.buckets.empty() ? s.count : s.buckets.back()) + "\n";
  }
  return out;
}

namespace {

// The whitespace-separated fields of /proc/self/stat after the command name (which
// is in parentheses and may hold spaces): field 3 (state) first.
std::vector<std::string> ProcSelfStatFields() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  std::getline(in, line);
  std::vector<std::string> fields;
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return fields;
  std::istringstream rest(line.substr(close + 1));
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;
}

// Field `n` (1-based, as in proc(5)) of /proc/self/stat, or 0.
double ProcStatField(const std::vector<std::string>& fields, size_t n) {
  if (n < 3 || n - 3 >= fields.size()) return 0;
  return std::strtod(fields[n - 3].c_str(), nullptr);
}

double BootTimeSeconds() {
  std::ifstream in("/proc/stat");
  for (std::string key; in >> key;) {
    if (key == "btime") {
      double v = 0;
      in >> v;
      return v;
    }
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

}  // namespace

void RegisterProcessMetrics(MetricRegistry* registry) {
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
  // The start time does not change: read it once.
  const double start =
      ticks > 0 ? BootTimeSeconds() + ProcStatField(ProcSelfStatFields(), 22) / ticks : 0;
  registry->RegisterFunctionCounter(
      "process_cpu_seconds_total", "User and system CPU time spent by the process, in seconds", {},
      [ticks] {
        const auto f = ProcSelfStatFields();
        return ticks > 0 ? (ProcStatField(f, 14) + ProcStatField(f, 15)) / ticks : 0;
      },
      registry);
  registry->RegisterFunctionGauge(
      "process_resident_memory_bytes", "Resident memory of the process, in bytes", {},
      [page] { return ProcStatField(ProcSelfStatFields(), 24) * page; }, registry);
  registry->RegisterFunctionGauge(
      "process_virtual_memory_bytes", "Virtual memory of the process, in bytes", {},
      [] { return ProcStatField(ProcSelfStatFields(), 23); }, registry);
  registry->RegisterFunctionGauge(
      "process_open_fds", "Open file descriptors of the process", {},
      [] {
        double n = 0;
        if (DIR* d = opendir("/proc/self/fd")) {
          while (dirent* e = readdir(d)) {
            if (e->d_name[0] != '.') n++;
          }
          closedir(d);
          n--;  // the descriptor of the directory being read
        }
        return std::max(0.0, n);
      },
      registry);
  registry->RegisterFunctionGauge(
      "process_max_fds", "Limit on the open file descriptors of the process", {},
      [] {
        rlimit rl{};
        if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return 0.0;
        return static_cast<double>(rl.rlim_cur);
      },
      registry);
  registry->RegisterFunctionGauge(
      "process_start_time_seconds", "Start time of the process since the Unix epoch, in seconds",
      {}, [start] { return start; }, registry);
}

}  // namespace nyala
