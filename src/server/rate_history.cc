#include "server/rate_history.h"

#include <pthread.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace nyala::server {

namespace {
std::string JsonDouble(double v) {
  if (!std::isfinite(v)) return "0";
  char buf[64];
  // Three decimals are plenty for a chart and keep the JSON small.
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), std::round(v * 1000) / 1000);
  return ec == std::errc() ? std::string(buf, end) : "0";
}

// Names and titles are ours (compile-time constants), but escape the basics anyway.
std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out + "\"";
}
}  // namespace

RateHistory::RateHistory(MonoDelta interval, size_t capacity)
    : interval_(interval), capacity_(std::max<size_t>(capacity, 2)) {}

RateHistory::~RateHistory() { Shutdown(); }

void RateHistory::AddSeries(std::string name, std::string title, std::string unit,
                            std::function<double()> read) {
  names_.push_back(name);
  series_.push_back(
      Series{std::move(name), std::move(title), std::move(unit), std::move(read), 0, {}});
}

void RateHistory::Start() {
  SampleNow();  // the first reading: a baseline, no rate yet
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "rate-history");
    std::unique_lock<std::mutex> l(mu_);
    while (!stop_) {
      cv_.wait_for(l, std::chrono::microseconds(interval_.ToMicroseconds()));
      if (stop_) break;
      l.unlock();
      SampleNow();
      l.lock();
    }
  });
}

void RateHistory::Shutdown() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RateHistory::SampleNow() {
  const MonoTime now = MonoTime::Now();
  std::vector<double> values;
  values.reserve(series_.size());
  for (Series& s : series_) values.push_back(s.read());
  if (!sampled_) {
    for (size_t i = 0; i < series_.size(); ++i) series_[i].last = values[i];
    sampled_ = true;
    last_sample_ = now;
    return;
  }
  const double seconds = std::max(1e-3, (now - last_sample_).ToMicroseconds() / 1e6);
  last_sample_ = now;
  std::lock_guard<std::mutex> l(mu_);
  for (size_t i = 0; i < series_.size(); ++i) {
    Series& s = series_[i];
    s.rates.push_back(std::max(0.0, values[i] - s.last) / seconds);
    s.last = values[i];
    while (s.rates.size() > capacity_) s.rates.pop_front();
  }
}

std::string RateHistory::ToJson() const {
  std::string out = "{\"interval_s\":" + JsonDouble(interval_.ToMicroseconds() / 1e6) +
                    ",\"capacity\":" + std::to_string(capacity_) + ",\"series\":[";
  std::lock_guard<std::mutex> l(mu_);
  for (size_t i = 0; i < series_.size(); ++i) {
    const Series& s = series_[i];
    if (i > 0) out += ",";
    out += "\n{\"name\":" + JsonString(s.name) + ",\"title\":" + JsonString(s.title) +
           ",\"unit\":" + JsonString(s.unit) + ",\"rates\":[";
    for (size_t j = 0; j < s.rates.size(); ++j) {
      if (j > 0) out += ",";
      out += JsonDouble(s.rates[j]);
    }
    out += "]}";
  }
  return out + "\n]}\n";
}

double RateHistory::RecentRate(const std::string& name, size_t samples) const {
  std::lock_guard<std::mutex> l(mu_);
  for (const Series& s : series_) {
    if (s.name != name) continue;
    const size_t n = std::min(samples, s.rates.size());
    if (n == 0) return 0;
    double sum = 0;
    for (size_t j = s.rates.size() - n; j < s.rates.size(); ++j) sum += s.rates[j];
    return sum / static_cast<double>(n);
  }
  return 0;
}

std::string RateHistory::ChartsHtml(const std::string& json_path, int refresh_ms) const {
  const double window_s = interval_.ToMicroseconds() / 1e6 * static_cast<double>(capacity_);
  std::string out = "<h3>Rates over the last " + JsonDouble(window_s / 60) +
                    " minutes</h3><noscript><p>The charts need JavaScript; the figures are at "
                    "<a href=\"" +
                    json_path + "\">" + json_path +
                    "</a>.</p></noscript>"
                    "<div id=\"rate-charts\" data-refreshes=\"0\" style=\"display:flex;"
                    "flex-wrap:wrap;gap:0.6em 1.2em\">";
  for (const Series& s : series_) {
    // Names and titles are ours: nothing to escape.
    out += "<figure class=\"chart\" data-series=\"" + s.name +
           "\" style=\"margin:0\"><figcaption><b>" + s.title +
           "</b> <span class=\"now\"></span></figcaption><svg width=\"320\" height=\"70\" "
           "viewBox=\"0 0 320 70\" style=\"background:#f5f7f9;border:1px solid #ccd\"></svg>"
           "</figure>";
  }
  out += "</div>\n";
  // Inline, no libraries: fetch the rates, draw each series as a polyline scaled to
  // its own maximum, newest on the right.
  out += R"(<script>
(function() {
  var box = document.getElementById('rate-charts');
  var NS = 'http://www.w3.org/2000/svg', W = 320, H = 70;
  function fmt(v) {
    var a = Math.abs(v);
    if (a >= 1e9) return (v / 1e9).toFixed(1) + 'G';
    if (a >= 1e6) return (v / 1e6).toFixed(1) + 'M';
    if (a >= 1e3) return (v / 1e3).toFixed(1) + 'k';
    return a >= 10 || v == 0 ? v.toFixed(0) : v.toFixed(1);
  }
  function el(name, attrs) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }
  function draw(d) {
    d.series.forEach(function(s) {
      var fig = box.querySelector('figure[data-series="' + s.name + '"]');
      if (!fig) return;
      var r = s.rates, max = 0, last = r.length ? r[r.length - 1] : 0;
      r.forEach(function(v) { if (v > max) max = v; });
      var svg = fig.querySelector('svg');
      while (svg.firstChild) svg.removeChild(svg.firstChild);
      var pts = [];
      for (var i = 0; i < r.length; i++) {
        var x = W * (d.capacity - r.length + i) / (d.capacity - 1);
        var y = H - 4 - (max > 0 ? r[i] / max * (H - 18) : 0);
        pts.push(x.toFixed(1) + ',' + y.toFixed(1));
      }
      svg.appendChild(el('line', {x1: 0, y1: H - 4, x2: W, y2: H - 4, stroke: '#99a'}));
      if (pts.length > 1) {
        svg.appendChild(el('polyline', {points: pts.join(' '), fill: 'none', stroke: '#2b7bb9',
                                        'stroke-width': 1.5}));
      }
      var t = el('text', {x: 4, y: 12, 'font-size': 11, fill: '#555'});
      t.textContent = 'max ' + fmt(max) + ' ' + s.unit;
      svg.appendChild(t);
      fig.setAttribute('data-last', last);
      fig.setAttribute('data-max', max);
      fig.querySelector('.now').textContent = fmt(last) + ' ' + s.unit;
    });
    box.setAttribute('data-refreshes', Number(box.getAttribute('data-refreshes')) + 1);
  }
  function tick() {
    fetch(')" +
         json_path + R"(', {cache: 'no-store'})
      .then(function(r) { return r.json(); })
      .then(draw)
      .catch(function(e) { box.setAttribute('data-error', String(e)); })
      .then(function() { setTimeout(tick, )" +
         std::to_string(refresh_ms) + R"(); });
  }
  tick();
})();
</script>
)";
  return out;
}

std::string RateHistory::title(const std::string& name) const {
  for (const Series& s : series_) {
    if (s.name == name) return s.title;
  }
  return "";
}

std::string RateHistory::unit(const std::string& name) const {
  for (const Series& s : series_) {
    if (s.name == name) return s.unit;
  }
  return "";
}

}  // namespace nyala::server
