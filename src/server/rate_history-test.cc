#include "server/rate_history.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>

#include "nyala/monotime.h"

namespace nyala::server {
namespace {

TEST(RateHistoryTest, RatesAreDeltasOverElapsedTimeKeptInARing) {
  RateHistory h(MonoDelta::FromSeconds(1), /*capacity=*/3);
  double count = 0;
  h.AddSeries("writes", "Write RPCs", "/s", [&count] { return count; });
  h.SampleNow();  // baseline: no rate yet
  EXPECT_EQ(0, h.RecentRate("writes", 10));
  EXPECT_NE(h.ToJson().find("\"rates\":[]"), std::string::npos) << h.ToJson();
  for (int i = 1; i <= 5; ++i) {
    count += 1000;
    SleepFor(MonoDelta::FromMilliseconds(20));
    h.SampleNow();
  }
  // 1000 per ~20 ms (at least 20 ms, so at most 50,000/s): positive and bounded.
  const double r = h.RecentRate("writes", 1);
  EXPECT_GT(r, 0);
  EXPECT_LE(r, 1000 / 0.020 + 1);
  // Only the last 3 rates are kept.
  const std::string json = h.ToJson();
  const size_t open = json.find("\"rates\":[");
  ASSERT_NE(open, std::string::npos) << json;
  const std::string rates = json.substr(open, json.find(']', open) - open);
  EXPECT_EQ(2, std::count(rates.begin(), rates.end(), ',')) << json;
  EXPECT_NE(json.find("\"capacity\":3"), std::string::npos) << json;
  // A count that goes down (a series removed) gives 0, not a negative rate.
  count = 0;
  h.SampleNow();
  EXPECT_EQ(0, h.RecentRate("writes", 1));
  EXPECT_EQ(0, h.RecentRate("no_such_series", 5));
}

TEST(RateHistoryTest, TheThreadSamplesUntilShutdown) {
  RateHistory h(MonoDelta::FromMilliseconds(10), 100);
  std::atomic<int> reads{0};
  h.AddSeries("calls", "Calls", "/s", [&reads] { return double(++reads * 10); });
  h.Start();
  const MonoTime deadline = MonoTime::Now() + MonoDelta::FromSeconds(10);
  while (h.RecentRate("calls", 1) == 0 && MonoTime::Now() < deadline) {
    SleepFor(MonoDelta::FromMilliseconds(5));
  }
  EXPECT_GT(h.RecentRate("calls", 1), 0);
  h.Shutdown();
  const int after = reads.load();
  SleepFor(MonoDelta::FromMilliseconds(50));
  EXPECT_EQ(after, reads.load()) << "sampled after Shutdown()";
}

TEST(RateHistoryTest, ChartsHtmlHasAFigurePerSeriesAndNoExternalResources) {
  RateHistory h;
  h.AddSeries("writes", "Write RPCs", "/s", [] { return 0.0; });
  h.AddSeries("bytes_in", "RPC bytes in", "B/s", [] { return 0.0; });
  const std::string html = h.ChartsHtml("/rates.json", 2000);
  EXPECT_NE(html.find("data-series=\"writes\""), std::string::npos);
  EXPECT_NE(html.find("data-series=\"bytes_in\""), std::string::npos);
  EXPECT_NE(html.find("fetch('/rates.json'"), std::string::npos);
  EXPECT_NE(html.find("setTimeout(tick, 2000)"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos) << "must work without a network";
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));
}

}  // namespace
}  // namespace nyala::server
