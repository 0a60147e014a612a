#include "common/metrics.h"

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/test_util.h"

namespace nyala {
namespace {

// ---------------------------------------------------------------------------
// A small strict JSON parser, so that the tests check ToJson() really is JSON.

struct JsonMember;

struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool boolean = false;
  double number = 0;
  std::string str;
  std::vector<Json> array;
  // A named member type rather than std::pair<std::string, Json>: the pair's traits
  // need Json complete, which clang with libstdc++ rejects inside Json.
  std::vector<JsonMember> object;

  const Json* Get(const std::string& key) const;
};

struct JsonMember {
  std::string key;
  Json value;
};

const Json* Json::Get(const std::string& key) const {
  for (const auto& [k, v] : object) {
    if (k == key) return &v;
  }
  return nullptr;
}

class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : s_(text) {}

  // Parses the whole text as one value; nullopt on any syntax error.
  std::optional<Json> ParseDocument() {
    Json v;
    if (!ParseValue(&v)) return std::nullopt;
    SkipSpace();
    if (pos_ != s_.size()) return std::nullopt;
    return v;
  }

 private:
  void SkipSpace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Consume(char c) {
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool ConsumeWord(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  bool ParseValue(Json* v) {
    SkipSpace();
    if (pos_ >= s_.size()) return false;
    const char c = s_[pos_];
    if (c == '{') return ParseObject(v);
    if (c == '[') return ParseArray(v);
    if (c == '"') {
      v->kind = Json::kString;
      return ParseString(&v->str);
    }
    for (bool b : {true, false}) {
      if (ConsumeWord(b ? "true" : "false")) {
        v->kind = Json::kBool;
        v->boolean = b;
        return true;
      }
    }
    if (ConsumeWord("null")) return true;
    return ParseNumber(v);
  }
  bool ParseNumber(Json* v) {
    static const std::regex kNumber(R"(^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?)");
    std::match_results<std::string_view::const_iterator> m;
    if (!std::regex_search(s_.begin() + pos_, s_.end(), m, kNumber)) return false;
    v->kind = Json::kNumber;
    v->number = std::strtod(std::string(m[0].first, m[0].second).c_str(), nullptr);
    pos_ += m[0].length();
    return true;
  }
  bool ParseHex4(uint32_t* cp) {
    if (pos_ + 4 > s_.size()) return false;
    *cp = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = s_[pos_++];
      *cp <<= 4;
      if (h >= '0' && h <= '9') {
        *cp |= h - '0';
      } else if (h >= 'a' && h <= 'f') {
        *cp |= h - 'a' + 10;
      } else if (h >= 'A' && h <= 'F') {
        *cp |= h - 'A' + 10;
      } else {
        return false;
      }
    }
    return true;
  }
  bool ParseString(std::string* out) {
    if (!Consume('"')) return false;
    while (pos_ < s_.size()) {
      const auto c = static_cast<unsigned char>(s_[pos_++]);
      if (c == '"') return true;
      if (c < 0x20) return false;  // raw control characters are not allowed
      if (c != '\\') {
        out->push_back(static_cast<char>(c));
        continue;
      }
      if (pos_ >= s_.size()) return false;
      const char e = s_[pos_++];
      switch (e) {
        case '"':
          out->push_back('"');
          break;
        case '\\':
          out->push_back('\\');
          break;
        case '/':
          out->push_back('/');
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          uint32_t cp;
          if (!ParseHex4(&cp) || (cp >= 0xD800 && cp <= 0xDFFF)) return false;  // BMP only
          if (cp < 0x80) {
            out->push_back(static_cast<char>(cp));
          } else if (cp < 0x800) {
            out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
            out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
          } else {
            out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
            out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
            out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
          }
          break;
        }
        default:
          return false;
      }
    }
    return false;
  }
  bool ParseArray(Json* v) {
    v->kind = Json::kArray;
    if (!Consume('[')) return false;
    if (Consume(']')) return true;
    do {
      v->array.emplace_back();
      if (!ParseValue(&v->array.back())) return false;
    } while (Consume(','));
    return Consume(']');
  }
  bool ParseObject(Json* v) {
    v->kind = Json::kObject;
    if (!Consume('{')) return false;
    if (Consume('}')) return true;
    do {
      std::string key;
      SkipSpace();
      if (!ParseString(&key) || !Consume(':')) return false;
      v->object.push_back(JsonMember{std::move(key), Json()});
      if (!ParseValue(&v->object.back().value)) return false;
    } while (Consume(','));
    return Consume('}');
  }

  std::string_view s_;
  size_t pos_ = 0;
};

// Parses `text` and returns its "metrics" array, failing the test if either is missing.
std::vector<Json> ParseMetricsJson(const std::string& text) {
  std::optional<Json> doc = JsonParser(text).ParseDocument();
  EXPECT_TRUE(doc.has_value()) << "not JSON:\n" << text;
  if (!doc) return {};
  const Json* metrics = doc->Get("metrics");
  EXPECT_TRUE(metrics != nullptr && metrics->kind == Json::kArray) << text;
  if (metrics == nullptr) return {};
  return metrics->array;
}

TEST(JsonParserTest, RejectsMalformedInput) {
  std::optional<Json> ok =
      JsonParser(R"({"a":[1,2.5,-3e2,"x\n\u00e9",true],"b":{}})").ParseDocument();
  ASSERT_TRUE(ok.has_value());
  ASSERT_EQ(5u, ok->Get("a")->array.size());
  EXPECT_EQ(-300, ok->Get("a")->array[2].number);
  EXPECT_EQ("x\n\xc3\xa9", ok->Get("a")->array[3].str);
  EXPECT_TRUE(ok->Get("a")->array[4].boolean);
  EXPECT_FALSE(JsonParser(R"({"a":1,})").ParseDocument().has_value());
  EXPECT_FALSE(JsonParser("{\"a\":\"raw\nnewline\"}").ParseDocument().has_value());
  EXPECT_FALSE(JsonParser(R"({"a":"bad \q escape"})").ParseDocument().has_value());
  EXPECT_FALSE(JsonParser(R"({"a":1} trailing)").ParseDocument().has_value());
}

// ---------------------------------------------------------------------------
// A Prometheus text-format checker.

struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;  // unescaped values
  std::string value;
};

std::string UnescapeLabelValue(std::string_view v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '\\' && i + 1 < v.size()) {
      ++i;
      out.push_back(v[i] == 'n' ? '\n' : v[i]);
    } else {
      out.push_back(v[i]);
    }
  }
  return out;
}

// Parses `text`, recording a test failure for every rule it breaks: every sample
// line matches `name{labels} value`; every family has exactly one HELP and one
// TYPE line, before its samples; a family's samples are contiguous.
std::vector<PromSample> ParsePrometheusText(const std::string& text) {
  static const std::string kName = "[a-zA-Z_:][a-zA-Z0-9_:]*";
  static const std::string kLabel = R"([a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*")";
  static const std::regex kSampleRe(
      "^(" + kName + ")(?:\\{(" + kLabel + "(?:," + kLabel +
      ")*)?\\})? (-?[0-9]+(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|NaN|[+-]Inf)$");
  static const std::regex kLabelRe(R"(([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)\"?)");
  static const std::regex kHelpRe("^# HELP (" + kName + ") (.*)$");
  static const std::regex kTypeRe("^# TYPE (" + kName +
                                  ") (counter|gauge|summary|histogram|untyped)$");

  std::vector<PromSample> samples;
  std::map<std::string, int> helps;
  std::map<std::string, std::string> types;
  std::set<std::string> finished_families;
  std::string current_family;
  EXPECT_TRUE(text.empty() || text.back() == '\n') << "text must end with a newline";
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (line.starts_with("#")) {
      if (std::regex_match(line, m, kHelpRe)) {
        EXPECT_EQ(0, helps[m[1]]++) << "second HELP for " << m[1];
        EXPECT_FALSE(types.contains(m[1])) << "HELP after TYPE for " << m[1];
      } else if (std::regex_match(line, m, kTypeRe)) {
        EXPECT_FALSE(types.contains(m[1])) << "second TYPE for " << m[1];
        types[m[1]] = m[2];
      } else {
        ADD_FAILURE() << "bad comment line: " << line;
      }
      continue;
    }
    if (!std::regex_match(line, m, kSampleRe)) {
      ADD_FAILURE() << "bad sample line: " << line;
      continue;
    }
    PromSample s;
    s.name = m[1];
    s.value = m[3];
    const std::string labels = m[2];
    for (auto it = std::sregex_iterator(labels.begin(), labels.end(), kLabelRe);
         it != std::sregex_iterator(); ++it) {
      EXPECT_TRUE(s.labels.emplace((*it)[1], UnescapeLabelValue((*it)[2].str())).second)
          << "duplicate label in " << line;
    }
    // The family: a histogram's _bucket, _sum and _count belong to the histogram.
    std::string family = s.name;
    for (std::string suffix : {"_bucket", "_sum", "_count"}) {
      if (family.ends_with(suffix)) {
        std::string stem = family.substr(0, family.size() - suffix.size());
        if (types.contains(stem) && types[stem] == "histogram") family = stem;
      }
    }
    if (family != s.name || (types.contains(family) && types[family] == "histogram")) {
      EXPECT_NE(family, s.name) << "a histogram sample without _bucket/_sum/_count: " << line;
      EXPECT_EQ(s.name.ends_with("_bucket"), s.labels.contains("le"))
          << "le belongs on (and only on) a histogram's buckets: " << line;
    }
    EXPECT_EQ(1, helps[family]) << "sample before HELP: " << line;
    EXPECT_TRUE(types.contains(family)) << "sample before TYPE: " << line;
    if (family != current_family) {
      EXPECT_FALSE(finished_families.contains(family)) << "family split up: " << line;
      finished_families.insert(current_family);
      current_family = family;
    }
    samples.push_back(std::move(s));
  }
  for (const auto& [name, n] : helps) EXPECT_TRUE(types.contains(name)) << "no TYPE for " << name;
  return samples;
}

const PromSample* FindSample(const std::vector<PromSample>& samples, const std::string& name,
                             const std::map<std::string, std::string>& labels) {
  for (const auto& s : samples) {
    if (s.name == name && s.labels == labels) return &s;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------

TEST(MetricsTest, CounterAndGaugeBasics) {
  Counter c;
  c.Increment();
  c.Increment(41);
  EXPECT_EQ(42, c.value());
  Gauge g;
  g.Set(10);
  g.Increment(-3);
  g.Increment();
  EXPECT_EQ(8, g.value());
}

TEST(MetricsTest, FindOrCreateReturnsTheSameObject) {
  MetricRegistry reg;
  Counter* a = reg.FindOrCreateCounter("rpc_calls_total", "RPCs handled", {{"method", "Get"}});
  Counter* b = reg.FindOrCreateCounter("rpc_calls_total", "ignored", {{"method", "Get"}});
  Counter* c = reg.FindOrCreateCounter("rpc_calls_total", "RPCs handled", {{"method", "Put"}});
  Counter* d = reg.FindOrCreateCounter("rpc_calls_total", "RPCs handled");
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
  EXPECT_NE(c, d);

  // Label order does not matter.
  Gauge* g1 = reg.FindOrCreateGauge("queue_length", "q", {{"a", "1"}, {"b", "2"}});
  Gauge* g2 = reg.FindOrCreateGauge("queue_length", "q", {{"b", "2"}, {"a", "1"}});
  EXPECT_EQ(g1, g2);
  Histogram* h1 = reg.FindOrCreateHistogram("latency_seconds", "latency");
  EXPECT_EQ(h1, reg.FindOrCreateHistogram("latency_seconds", "latency"));
  EXPECT_EQ(5u, reg.NumMetrics());

  a->Increment(3);
  EXPECT_EQ(3, b->value());
  EXPECT_EQ(0, c->value());
}

TEST(MetricsDeathTest, ProgrammingErrorsCheck) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  MetricRegistry reg;
  reg.FindOrCreateCounter("requests", "r");
  reg.FindOrCreateHistogram("latency_seconds", "l");
  EXPECT_DEATH(reg.FindOrCreateGauge("requests", "r"), "another type");
  EXPECT_DEATH(reg.FindOrCreateCounter("latency_seconds", "l", {{"x", "y"}}), "another type");
  EXPECT_DEATH(reg.FindOrCreateHistogram("latency_us", "l"), "named \\*_seconds");
  EXPECT_DEATH(reg.FindOrCreateCounter("1requests", "r"), "invalid metric name");
  EXPECT_DEATH(reg.FindOrCreateCounter("req-uests", "r"), "invalid metric name");
  EXPECT_DEATH(reg.FindOrCreateCounter("", "r"), "invalid metric name");
  EXPECT_DEATH(reg.FindOrCreateCounter("ok", "r", {{"bad-label", "v"}}), "invalid label name");
  EXPECT_DEATH(reg.FindOrCreateCounter("ok", "r", {{"__reserved", "v"}}), "invalid label name");
  EXPECT_DEATH(reg.FindOrCreateCounter("ok", "r", {{"a", "1"}, {"a", "2"}}), "duplicate label");
  EXPECT_DEATH(reg.FindOrCreateHistogram("lat2_seconds", "l", {{"le", "x"}}), "'le' label");
  EXPECT_DEATH(reg.FindOrCreateCounter("latency_seconds_count", "c"), "clashes");
  EXPECT_DEATH(reg.FindOrCreateCounter("latency_seconds_bucket", "c"), "clashes");
  reg.FindOrCreateCounter("wait_seconds_sum", "b");
  EXPECT_DEATH(reg.FindOrCreateHistogram("wait_seconds", "c"), "clashes");
  reg.RegisterFunctionGauge("fg", "f", {}, [] { return 1; });
  EXPECT_DEATH(reg.FindOrCreateGauge("fg", "f"), "function gauge");
  reg.RegisterFunctionCounter("fc_total", "f", {}, [] { return 1; });
  EXPECT_DEATH(reg.FindOrCreateCounter("fc_total", "f"), "function counter");
  reg.FindOrCreateCounter("plain_total", "p");
  EXPECT_DEATH(reg.RegisterFunctionCounter("plain_total", "p", {}, [] { return 1; }),
               "not a function metric");
  // Names with colons and underscores are fine.
  EXPECT_NE(nullptr, reg.FindOrCreateCounter("nyala:rpc_calls_total", "ok", {{"_l1", "v"}}));
}

TEST(MetricsTest, JsonIsValidSortedAndComplete) {
  MetricRegistry reg;
  reg.FindOrCreateGauge("b_gauge", "a gauge", {{"table", "t2"}})->Set(-7);
  reg.FindOrCreateGauge("b_gauge", "a gauge", {{"table", "t1"}})->Set(7);
  reg.FindOrCreateCounter("a_counter", "says \"hi\"\\ and\nbye\x01")->Increment(5);
  const std::string tricky = "quote\" backslash\\ nl\n tab\t ctl\x1f utf8 \xc3\xa9 \xe2\x82\xac";
  reg.FindOrCreateCounter("c_counter", "c", {{"v", tricky}})->Increment(1);
  Histogram* h = reg.FindOrCreateHistogram("d_latency_seconds", "latency", {{"method", "Get"}});
  for (int v = 1; v <= 100; ++v) h->Increment(v);  // microseconds

  const std::vector<Json> metrics = ParseMetricsJson(reg.ToJson());
  ASSERT_EQ(5u, metrics.size());
  std::vector<std::string> order;
  for (const Json& m : metrics) {
    ASSERT_EQ(Json::kObject, m.kind);
    for (const char* key : {"name", "type", "help", "labels"}) {
      ASSERT_NE(nullptr, m.Get(key)) << key;
    }
    std::string o = m.Get("name")->str;
    for (const auto& [k, v] : m.Get("labels")->object) o += "/" + k + "=" + v.str;
    order.push_back(o);
  }
  EXPECT_EQ((std::vector<std::string>{"a_counter", "b_gauge/table=t1", "b_gauge/table=t2",
                                      "c_counter/v=" + tricky, "d_latency_seconds/method=Get"}),
            order);

  EXPECT_EQ("counter", metrics[0].Get("type")->str);
  EXPECT_EQ("says \"hi\"\\ and\nbye\x01", metrics[0].Get("help")->str);
  EXPECT_EQ(5, metrics[0].Get("value")->number);
  EXPECT_EQ("gauge", metrics[1].Get("type")->str);
  EXPECT_EQ(7, metrics[1].Get("value")->number);
  EXPECT_EQ(-7, metrics[2].Get("value")->number);

  const Json& hist = metrics[4];
  EXPECT_EQ("histogram", hist.Get("type")->str);
  EXPECT_EQ(nullptr, hist.Get("value"));
  // Everything but the count in seconds.
  const std::map<std::string, double> expected = {
      {"count", 100},  {"sum", 5050e-6}, {"mean", 50.5e-6}, {"min", 1e-6},
      {"max", 100e-6}, {"p50", 50e-6},   {"p75", 75e-6},    {"p95", 95e-6},
      {"p99", 99e-6},  {"p999", 100e-6}, {"p9999", 100e-6}};
  for (const auto& [key, value] : expected) {
    const Json* field = hist.Get(key);
    ASSERT_NE(nullptr, field) << key;
    EXPECT_EQ(Json::kNumber, field->kind) << key;
    EXPECT_DOUBLE_EQ(value, field->number) << key;
  }
}

TEST(MetricsTest, JsonFilterAndInvalidUtf8) {
  MetricRegistry reg;
  reg.FindOrCreateCounter("rpc_calls", "c");
  reg.FindOrCreateCounter("rpc_errors", "c");
  reg.FindOrCreateGauge("disk_bytes", "g", {{"path", "bad \xff\xc3 utf8 \xed\xa0\x80"}});

  std::vector<Json> rpc = ParseMetricsJson(reg.ToJson("rpc_"));
  ASSERT_EQ(2u, rpc.size());
  EXPECT_EQ("rpc_calls", rpc[0].Get("name")->str);
  EXPECT_EQ("rpc_errors", rpc[1].Get("name")->str);
  EXPECT_EQ(0u, ParseMetricsJson(reg.ToJson("no_such_metric")).size());
  EXPECT_EQ(3u, ParseMetricsJson(reg.ToJson()).size());

  std::vector<Json> disk = ParseMetricsJson(reg.ToJson("disk"));
  ASSERT_EQ(1u, disk.size());
  EXPECT_EQ("bad \xef\xbf\xbd\xef\xbf\xbd utf8 \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
            disk[0].Get("labels")->Get("path")->str);

  EXPECT_EQ(0u, ParseMetricsJson(MetricRegistry().ToJson()).size());
}

TEST(MetricsTest, PrometheusTextIsWellFormed) {
  MetricRegistry reg;
  const std::string tricky = "a\"b\\c\nd";
  reg.FindOrCreateCounter("rpc_calls_total", "RPCs\nhandled \\ \"ok\"", {{"method", "Get"}})
      ->Increment(3);
  reg.FindOrCreateCounter("rpc_calls_total", "RPCs", {{"method", "Put"}})->Increment(4);
  reg.FindOrCreateCounter("rpc_calls_total", "RPCs", {{"method", tricky}})->Increment(5);
  reg.FindOrCreateGauge("connections", "open connections")->Set(12);
  Histogram* h =
      reg.FindOrCreateHistogram("handler_duration_seconds", "latency", {{"method", "Get"}});
  for (int v = 1; v <= 1000; ++v) h->Increment(v);  // 1 us .. 1 ms
  h->Increment(90LL * 1000 * 1000);                 // 90 s: above every bound but +Inf
  reg.FindOrCreateHistogram("handler_duration_seconds", "latency", {{"method", "Put"}});  // empty
  reg.FindOrCreateHistogram("plain_duration_seconds", "no labels")->Increment(42);
  reg.RegisterFunctionCounter("cpu_seconds_total", "fractional", {}, [] { return 1.25; });

  const std::string text = reg.ToPrometheusText();
  SCOPED_TRACE(text);
  EXPECT_NE(text.find("# HELP rpc_calls_total RPCs\\nhandled \\\\ \"ok\"\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE rpc_calls_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE connections gauge\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE handler_duration_seconds histogram\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE cpu_seconds_total counter\n"), std::string::npos);
  EXPECT_EQ(text.find("_us"), std::string::npos) << "no units but base units in names";
  EXPECT_NE(text.find("rpc_calls_total{method=\"a\\\"b\\\\c\\nd\"} 5\n"), std::string::npos);
  EXPECT_NE(text.find("\nconnections 12\n"), std::string::npos);

  const std::vector<PromSample> samples = ParsePrometheusText(text);
  ASSERT_FALSE(::testing::Test::HasFailure());
  auto value = [&](const std::string& name, const std::map<std::string, std::string>& labels) {
    const PromSample* s = FindSample(samples, name, labels);
    return s == nullptr ? std::string("<missing>") : s->value;
  };
  EXPECT_EQ("3", value("rpc_calls_total", {{"method", "Get"}}));
  EXPECT_EQ("4", value("rpc_calls_total", {{"method", "Put"}}));
  EXPECT_EQ("5", value("rpc_calls_total", {{"method", tricky}}));  // escaping round-trips
  EXPECT_EQ("12", value("connections", {}));

  EXPECT_EQ("1.25", value("cpu_seconds_total", {}));

  // Cumulative buckets in seconds: 1..1000 us, each value below 128 us in a bucket of
  // its own, so the bounds up to 100 us are exact; above that within 1%.
  auto bucket = [&](const std::string& method, const std::string& le) {
    const std::string v =
        value("handler_duration_seconds_bucket", {{"method", method}, {"le", le}});
    return v == "<missing>" ? -1.0 : std::stod(v);
  };
  EXPECT_EQ(10, bucket("Get", "0.00001"));
  EXPECT_EQ(25, bucket("Get", "0.000025"));
  EXPECT_EQ(50, bucket("Get", "0.00005"));
  EXPECT_EQ(100, bucket("Get", "0.0001"));
  EXPECT_NEAR(250, bucket("Get", "0.00025"), 2.5);
  EXPECT_NEAR(500, bucket("Get", "0.0005"), 5);
  EXPECT_NEAR(1000, bucket("Get", "0.001"), 10);
  EXPECT_EQ(1000, bucket("Get", "60"));  // the 90 s value is only in +Inf
  EXPECT_EQ(1001, bucket("Get", "+Inf"));
  // Every bound, in order, cumulative.
  std::vector<double> get_buckets;
  for (const PromSample& p : samples) {
    if (p.name == "handler_duration_seconds_bucket" && p.labels.at("method") == "Get") {
      get_buckets.push_back(std::stod(p.value));
    }
  }
  EXPECT_EQ(MetricRegistry::HistogramBucketsMicros().size() + 1, get_buckets.size());
  EXPECT_TRUE(std::is_sorted(get_buckets.begin(), get_buckets.end()));
  EXPECT_EQ("90.5005", value("handler_duration_seconds_sum", {{"method", "Get"}}));
  EXPECT_EQ("1001", value("handler_duration_seconds_count", {{"method", "Get"}}));
  EXPECT_EQ(0, bucket("Put", "+Inf"));
  EXPECT_EQ("0", value("handler_duration_seconds_count", {{"method", "Put"}}));
  EXPECT_EQ("0", value("handler_duration_seconds_sum", {{"method", "Put"}}));
  EXPECT_EQ("1", value("plain_duration_seconds_bucket", {{"le", "0.00005"}}));
  EXPECT_EQ("0", value("plain_duration_seconds_bucket", {{"le", "0.000025"}}));
  EXPECT_EQ("0.000042", value("plain_duration_seconds_sum", {}));
  EXPECT_EQ("1", value("plain_duration_seconds_count", {}));

  // 3 counters + 1 gauge + 1 function counter + 3 histograms of (buckets + +Inf + 2) lines.
  const size_t per_histogram = MetricRegistry::HistogramBucketsMicros().size() + 1 + 2;
  EXPECT_EQ(3u + 1 + 1 + 3 * per_histogram, samples.size());
}

TEST(MetricsTest, PrometheusCheckerCatchesBrokenText) {
  // The checker above must be able to fail, or the test proves nothing.
  auto failures = [](const std::string& text) {
    ::testing::TestPartResultArray results;
    {
      ::testing::ScopedFakeTestPartResultReporter reporter(
          ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
      ParsePrometheusText(text);
    }
    return results.size();
  };
  EXPECT_EQ(0u, failures("# HELP a x\n# TYPE a counter\na{k=\"v\"} 1\n"));
  EXPECT_GT(failures("a 1\n"), 0u);                                           // no HELP/TYPE
  EXPECT_GT(failures("# HELP a x\n# TYPE a counter\na{k=\"v\"\"} 1\n"), 0u);  // bad escaping
  EXPECT_GT(failures("# HELP a x\n# TYPE a counter\na{k=\"v\n\"} 1\n"), 0u);  // raw newline
  EXPECT_GT(failures("# HELP a x\n# HELP a x\n# TYPE a counter\na 1\n"), 0u);
  EXPECT_GT(failures("# HELP a x\n# TYPE a counter\na 1\n# HELP b x\n# TYPE b gauge\nb 1\na 2\n"),
            0);
}

TEST(MetricsTest, FunctionGaugesAreComputedAtRenderTimeAndRemovedByOwner) {
  MetricRegistry reg;
  std::atomic<int64_t> queue_len{3};
  std::atomic<int> calls_a{0}, calls_b{0};
  int owner_a, owner_b;  // only their addresses matter
  reg.RegisterFunctionGauge(
      "queue_length", "queued", {{"tablet", "a"}},
      [&] {
        ++calls_a;
        return queue_len.load();
      },
      &owner_a);
  reg.RegisterFunctionGauge(
      "queue_length", "queued", {{"tablet", "b"}},
      [&] {
        ++calls_b;
        return int64_t{100};
      },
      &owner_b);
  reg.FindOrCreateGauge("queue_length", "queued", {{"tablet", "plain"}})->Set(1);
  EXPECT_EQ(3u, reg.NumMetrics());
  EXPECT_EQ(0, calls_a.load()) << "not called before a render";

  auto rendered = [&](const std::string& tablet) {
    const PromSample* s = nullptr;
    const std::vector<PromSample> samples = ParsePrometheusText(reg.ToPrometheusText());
    s = FindSample(samples, "queue_length", {{"tablet", tablet}});
    return s == nullptr ? std::string("<missing>") : s->value;
  };
  EXPECT_EQ("3", rendered("a"));
  queue_len = 17;
  EXPECT_EQ("17", rendered("a"));
  EXPECT_EQ("100", rendered("b"));
  EXPECT_EQ("1", rendered("plain"));
  std::vector<Json> json = ParseMetricsJson(reg.ToJson("queue"));
  ASSERT_EQ(3u, json.size());
  EXPECT_EQ("gauge", json[0].Get("type")->str);
  EXPECT_EQ(17, json[0].Get("value")->number);

  reg.RemoveFunctionGauges(&owner_a);
  EXPECT_EQ(2u, reg.NumMetrics());
  const int calls_after_remove = calls_a.load();
  EXPECT_EQ("<missing>", rendered("a"));
  EXPECT_EQ("100", rendered("b"));
  EXPECT_EQ(calls_after_remove, calls_a.load()) << "removed function still called";

  // Registering again replaces the function and its owner.
  reg.RegisterFunctionGauge(
      "queue_length", "queued", {{"tablet", "b"}}, [] { return int64_t{5}; }, &owner_a);
  const int calls_b_before = calls_b.load();
  EXPECT_EQ("5", rendered("b"));
  EXPECT_EQ(calls_b_before, calls_b.load());
  reg.RemoveFunctionGauges(&owner_b);  // no longer owns anything
  EXPECT_EQ("5", rendered("b"));
  reg.RemoveFunctionGauges(&owner_a);
  EXPECT_EQ(1u, reg.NumMetrics());

  // Removing the last series of a family removes the family.
  reg.RegisterFunctionGauge(
      "only_fn", "f", {}, [] { return int64_t{1}; }, &owner_a);
  EXPECT_NE(reg.ToPrometheusText().find("# TYPE only_fn gauge"), std::string::npos);
  reg.RemoveFunctionGauges(&owner_a);
  EXPECT_EQ(reg.ToPrometheusText().find("only_fn"), std::string::npos);
}

TEST(MetricsTest, RemoveSeriesWithLabelDropsOnlyThoseSeries) {
  MetricRegistry reg;
  std::shared_ptr<Counter> t1 =
      reg.FindOrCreateSharedCounter("rows_total", "rows", {{"tablet_id", "t1"}, {"op", "insert"}});
  std::shared_ptr<Counter> t2 =
      reg.FindOrCreateSharedCounter("rows_total", "rows", {{"tablet_id", "t2"}, {"op", "insert"}});
  EXPECT_EQ(t1.get(),
            reg.FindOrCreateCounter("rows_total", "rows", {{"op", "insert"}, {"tablet_id", "t1"}}));
  reg.FindOrCreateHistogram("scan_seconds", "scans", {{"tablet_id", "t1"}})->Increment(5);
  reg.FindOrCreateGauge("only_t1", "g", {{"tablet_id", "t1"}})->Set(3);
  reg.FindOrCreateCounter("other_total", "o", {{"table", "t1"}})->Increment();  // value, not label
  int owner;
  reg.RegisterFunctionGauge(
      "fn_gauge", "f", {{"tablet_id", "t1"}}, [] { return int64_t{1}; }, &owner);
  t1->Increment(4);
  t2->Increment(2);
  ASSERT_EQ(6u, reg.NumMetrics());

  EXPECT_EQ(3u, reg.RemoveSeriesWithLabel("tablet_id", "t1"));
  EXPECT_EQ(3u, reg.NumMetrics());  // t2's counter, other_total, the function gauge
  const std::vector<PromSample> samples = ParsePrometheusText(reg.ToPrometheusText());
  EXPECT_EQ(nullptr, FindSample(samples, "rows_total", {{"tablet_id", "t1"}, {"op", "insert"}}));
  const PromSample* kept =
      FindSample(samples, "rows_total", {{"tablet_id", "t2"}, {"op", "insert"}});
  ASSERT_NE(nullptr, kept);
  EXPECT_EQ("2", kept->value);
  EXPECT_NE(nullptr, FindSample(samples, "other_total", {{"table", "t1"}}));
  EXPECT_NE(nullptr, FindSample(samples, "fn_gauge", {{"tablet_id", "t1"}}));
  // Emptied families are gone from both renderings.
  EXPECT_EQ(reg.ToPrometheusText().find("scan_seconds"), std::string::npos);
  EXPECT_EQ(0u, ParseMetricsJson(reg.ToJson("only_t1")).size());

  // The shared counter outlives its series; asking again starts a new one from zero.
  t1->Increment();
  EXPECT_EQ(5, t1->value());
  Counter* again =
      reg.FindOrCreateCounter("rows_total", "rows", {{"tablet_id", "t1"}, {"op", "insert"}});
  EXPECT_NE(t1.get(), again);
  EXPECT_EQ(0, again->value());
  EXPECT_EQ(0u, reg.RemoveSeriesWithLabel("tablet_id", "no-such-tablet"));
  reg.RemoveFunctionGauges(&owner);
}

TEST(MetricsTest, FunctionGaugeMayUseTheRegistry) {
  MetricRegistry reg;
  reg.RegisterFunctionGauge("num_metrics", "metrics registered", {}, [&reg] {
    reg.FindOrCreateCounter("renders_total", "renders")->Increment();
    return static_cast<int64_t>(reg.NumMetrics());
  });
  reg.ToJson();
  EXPECT_EQ(1, reg.FindOrCreateCounter("renders_total", "renders")->value());
  std::vector<Json> json = ParseMetricsJson(reg.ToJson("num_metrics"));
  ASSERT_EQ(1u, json.size());
  EXPECT_EQ(2, json[0].Get("value")->number);
}

TEST(MetricsTest, ConcurrentRegistrationUpdatesAndRendering) {
  MetricRegistry reg;
  constexpr int kThreads = 4;
  constexpr int kIters = 2000;
  std::atomic<bool> done{false};
  std::thread renderer([&] {
    do {  // both renderings stay well-formed while everything changes underneath
      ParseMetricsJson(reg.ToJson());
      ParsePrometheusText(reg.ToPrometheusText());
    } while (!done.load());
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&reg, t] {
      int tag;
      for (int i = 0; i < kIters; ++i) {
        reg.FindOrCreateCounter("ops_total", "ops", {{"kind", std::to_string(i % 10)}})
            ->Increment();
        reg.FindOrCreateHistogram("op_latency_seconds", "latency")->Increment(i);
        reg.RegisterFunctionGauge(
            "thread_gauge", "g", {{"t", std::to_string(t)}}, [i] { return int64_t{i}; }, &tag);
        if (i % 2 == 0) reg.RemoveFunctionGauges(&tag);
        // A histogram removed while renders may be reading it.
        reg.FindOrCreateHistogram("removable_seconds", "r", {{"t", std::to_string(t)}})
            ->Increment(i);
        if (i % 3 == 0) reg.RemoveSeriesWithLabel("t", std::to_string(t));
      }
      reg.RemoveFunctionGauges(&tag);
      reg.RemoveSeriesWithLabel("t", std::to_string(t));
    });
  }
  for (auto& th : threads) th.join();
  done = true;
  renderer.join();

  int64_t total = 0;
  for (int k = 0; k < 10; ++k) {
    total += reg.FindOrCreateCounter("ops_total", "ops", {{"kind", std::to_string(k)}})->value();
  }
  EXPECT_EQ(int64_t{kThreads} * kIters, total);
  EXPECT_EQ(int64_t{kThreads} * kIters,
            reg.FindOrCreateHistogram("op_latency_seconds", "latency")->TotalCount());
  EXPECT_EQ(11u, reg.NumMetrics());  // the function gauges and histograms are all gone
}

TEST(MetricsTest, SumOfFamilyAddsEverySeriesFunctionsIncluded) {
  MetricRegistry reg;
  EXPECT_EQ(0, reg.SumOfFamily("calls_total"));
  reg.FindOrCreateCounter("calls_total", "c", {{"m", "a"}})->Increment(3);
  reg.FindOrCreateCounter("calls_total", "c", {{"m", "b"}})->Increment(4);
  reg.FindOrCreateCounter("calls_total_other", "c")->Increment(100);  // a different family
  EXPECT_EQ(7, reg.SumOfFamily("calls_total"));
  reg.FindOrCreateGauge("mem_bytes", "g", {{"d", "1"}})->Set(10);
  reg.RegisterFunctionGauge("mem_bytes", "g", {{"d", "2"}}, [] { return 2.5; });
  EXPECT_EQ(12.5, reg.SumOfFamily("mem_bytes"));
}

TEST(MetricsTest, ProcessMetricsDescribeThisProcess) {
  MetricRegistry reg;
  RegisterProcessMetrics(&reg);
  const std::vector<PromSample> samples = ParsePrometheusText(reg.ToPrometheusText());
  ASSERT_FALSE(::testing::Test::HasFailure());
  auto value = [&](const std::string& name) {
    const PromSample* s = FindSample(samples, name, {});
    return s == nullptr ? -1.0 : std::stod(s->value);
  };
  EXPECT_GT(value("process_resident_memory_bytes"), 1 << 20);
  EXPECT_GE(value("process_virtual_memory_bytes"), value("process_resident_memory_bytes"));
  EXPECT_GE(value("process_cpu_seconds_total"), 0);
  // stdin, stdout and stderr at least; opening one more is seen.
  const double fds = value("process_open_fds");
  EXPECT_GE(fds, 3);
  FILE* f = fopen("/proc/self/stat", "r");
  ASSERT_NE(nullptr, f);
  EXPECT_EQ(fds + 1, reg.SumOfFamily("process_open_fds"));
  fclose(f);
  EXPECT_GT(value("process_max_fds"), fds);
  const double now = static_cast<double>(time(nullptr));
  EXPECT_LE(value("process_start_time_seconds"), now + 1);
  EXPECT_GT(value("process_start_time_seconds"), now - 24 * 3600);
  EXPECT_NE(reg.ToPrometheusText().find("# TYPE process_cpu_seconds_total counter\n"),
            std::string::npos);
}

}  // namespace
}  // namespace nyala
