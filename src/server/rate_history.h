// RateHistory: the recent per-second rates of a few cumulative counts (requests,
// rows, bytes), for the charts on the daemons' home pages (/rates.json).
//
// Each series reads a count that only goes up (normally a counter family summed over
// its labels, MetricRegistry::SumOfFamily). One thread samples every series once per
// interval and keeps the last `capacity` rates, (count now - count before) / seconds
// elapsed, in a ring per series: with the defaults, 1 s for 5 minutes, 300 doubles a
// series. A count that goes down (a counter's series removed) yields 0 for that
// interval, not a negative rate.
//
// Thread-safety: AddSeries() before Start(); every other method from any thread.
// The read functions run on the sampling thread, without RateHistory's lock; they
// must stay callable until Shutdown() returns.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "nyala/monotime.h"

namespace nyala::server {

class RateHistory {
 public:
  RateHistory(MonoDelta interval = MonoDelta::FromSeconds(1), size_t capacity = 300);
  ~RateHistory();
  RateHistory(const RateHistory&) = delete;
  RateHistory& operator=(const RateHistory&) = delete;

  // `name`: an identifier ([a-z_]+, used in JSON and the page); `title`: what the
  // chart says ("Write RPCs"); `unit`: of the rate ("/s", "B/s", "rows/s").
  void AddSeries(std::string name, std::string title, std::string unit,
                 std::function<double()> read);

  // Takes the first reading and starts the sampling thread.
  void Start();
  // Stops the thread. Idempotent.
  void Shutdown();

  // Takes one sample now, as the thread does each interval (tests call it without
  // Start(), to control time themselves).
  void SampleNow();

  // {"interval_s":1,"capacity":300,"series":[{"name":"writes","title":"Write RPCs",
  //   "unit":"/s","rates":[oldest, ..., newest]}, ...]}
  std::string ToJson() const;

  // The mean rate of `name` over its last `samples` rates (fewer if it has fewer);
  // 0 for an unknown series or no samples yet.
  double RecentRate(const std::string& name, size_t samples) const;

  // The home page's charts: a figure per series, drawn as inline SVG by an inline
  // script from `json_path` (ToJson() served by the daemon), redrawn every
  // `refresh_ms`; no external resources, so it works without a network. The
  // container (#rate-charts) counts its redraws in data-refreshes and each figure
  // carries its newest and largest rate in data-last and data-max.
  std::string ChartsHtml(const std::string& json_path, int refresh_ms = 2000) const;

  const std::vector<std::string>& names() const { return names_; }
  std::string title(const std::string& name) const;
  std::string unit(const std::string& name) const;

 private:
  struct Series {
    std::string name, title, unit;
    std::function<double()> read;
    double last = 0;           // sampling thread only
    std::deque<double> rates;  // guarded by mu_
  };

  const MonoDelta interval_;
  const size_t capacity_;
  std::vector<Series> series_;      // fixed after Start()
  std::vector<std::string> names_;  // the same order
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;     // guarded by mu_
  MonoTime last_sample_;  // sampling thread only (or SampleNow's caller)
  bool sampled_ = false;  // a first reading was taken
  std::thread thread_;
};

}  // namespace nyala::server
