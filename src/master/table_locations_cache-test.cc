#include "master/table_locations_cache.h"

#include <gtest/gtest.h>

#include "common/test_util.h"

namespace nyala::master {

namespace {
std::shared_ptr<const std::string> Val(size_t n, char c = 'x') {
  return std::make_shared<std::string>(n, c);
}
std::string K(const std::string& table, const std::string& start = "",
              std::optional<uint32_t> max = std::nullopt, bool intern = false,
              const std::string& end = "") {
  TableLocationsCacheKey k;
  k.table_id = table;
  k.first_tablet_start = start;
  k.partition_key_end = end;
  k.max_returned_locations = max;
  k.intern_ts_infos = intern;
  return k.Encode();
}
}  // namespace

TEST(TableLocationsCacheTest, KeyByValueNotPresence) {
  // Unset, 0 and 1000 are three different requests; so are intern on/off.
  std::set<std::string> keys = {K("t"),
                                K("t", "", 0u),
                                K("t", "", 1000u),
                                K("t", "", std::nullopt, true),
                                K("t", "", 1000u, true),
                                K("t", "", std::nullopt, false, "e"),
                                K("t", "s"),
                                K("u")};
  EXPECT_EQ(8u, keys.size());
  // No ambiguity from concatenation.
  EXPECT_NE(K("ab", "c"), K("a", "bc"));
  EXPECT_EQ(K("t", "s", 5u, true, "e"), K("t", "s", 5u, true, "e"));

  MetricRegistry metrics;
  TableLocationsCache cache(1 << 20, &metrics);
  cache.Insert("t", K("t"), Val(10, 'a'));
  cache.Insert("t", K("t", "", 0u), Val(10, 'b'));
  cache.Insert("t", K("t", "", 1000u), Val(10, 'c'));
  cache.Insert("t", K("t", "", 1000u, true), Val(10, 'd'));
  EXPECT_EQ(4u, cache.num_entries());
  EXPECT_EQ('a', (*cache.Lookup(K("t")))[0]);
  EXPECT_EQ('b', (*cache.Lookup(K("t", "", 0u)))[0]);
  EXPECT_EQ('c', (*cache.Lookup(K("t", "", 1000u)))[0]);
  EXPECT_EQ('d', (*cache.Lookup(K("t", "", 1000u, true)))[0]);
  EXPECT_EQ(nullptr, cache.Lookup(K("t", "", 1u)));
  EXPECT_EQ(4, cache.hits());
  EXPECT_EQ(1, cache.misses());
  EXPECT_EQ(4, cache.inserts());
}

TEST(TableLocationsCacheTest, LruEvictionByBytes) {
  MetricRegistry metrics;
  const std::string k1 = K("t", "1"), k2 = K("t", "2"), k3 = K("t", "3");
  // Room for exactly two entries of key + 100 bytes.
  TableLocationsCache cache(k1.size() * 2 + 200, &metrics);
  cache.Insert("t", k1, Val(100));
  cache.Insert("t", k2, Val(100));
  EXPECT_EQ(k1.size() + k2.size() + 200, cache.memory_usage());
  ASSERT_NE(nullptr, cache.Lookup(k1));  // k1 is now the most recently used
  cache.Insert("t", k3, Val(100));       // evicts k2, the coldest
  EXPECT_EQ(1, cache.evictions());
  EXPECT_NE(nullptr, cache.Lookup(k1));
  EXPECT_EQ(nullptr, cache.Lookup(k2));
  EXPECT_NE(nullptr, cache.Lookup(k3));
  EXPECT_EQ(k1.size() + k3.size() + 200, cache.memory_usage());
  // One big entry pushes both out; one larger than the capacity is not kept.
  cache.Insert("t", K("t", "4"), Val(150));
  EXPECT_EQ(3, cache.evictions());
  EXPECT_EQ(1u, cache.num_entries());
  cache.Insert("t", K("t", "5"), Val(10000));
  EXPECT_EQ(nullptr, cache.Lookup(K("t", "5")));
  EXPECT_EQ(1u, cache.num_entries());
  // Replacing an entry charges only the new value.
  cache.Insert("t", k1, Val(10));
  cache.Insert("t", k1, Val(20));
  EXPECT_EQ(20u, cache.Lookup(k1)->size());
}

TEST(TableLocationsCacheTest, InvalidateDropsOnlyThatTable) {
  MetricRegistry metrics;
  TableLocationsCache cache(1 << 20, &metrics);
  for (int i = 0; i < 5; i++) {
    cache.Insert("t", K("t", std::to_string(i)), Val(10));
    cache.Insert("u", K("u", std::to_string(i)), Val(10));
  }
  const size_t before = cache.memory_usage();
  cache.InvalidateTable("t");
  EXPECT_EQ(5u, cache.num_entries());
  EXPECT_EQ(before / 2, cache.memory_usage());
  for (int i = 0; i < 5; i++) {
    EXPECT_EQ(nullptr, cache.Lookup(K("t", std::to_string(i))));
    EXPECT_NE(nullptr, cache.Lookup(K("u", std::to_string(i))));
  }
  cache.InvalidateTable("nope");
  EXPECT_EQ(5u, cache.num_entries());
  EXPECT_EQ(0, cache.evictions());  // invalidation is not eviction
}

TEST(TableLocationsCacheTest, MetricsInRegistry) {
  MetricRegistry metrics;
  TableLocationsCache cache(1 << 20, &metrics);
  cache.Insert("t", K("t"), Val(10));
  (void)cache.Lookup(K("t"));
  (void)cache.Lookup(K("u"));
  const std::string json = metrics.ToJson("table_locations_cache");
  for (const char* name :
       {"table_locations_cache_hits_total", "table_locations_cache_misses_total",
        "table_locations_cache_inserts_total", "table_locations_cache_evictions_total",
        "table_locations_cache_memory_bytes"}) {
    EXPECT_NE(std::string::npos, json.find(name)) << name << " in " << json;
  }
  EXPECT_EQ(int64_t(K("t").size() + 10),
            metrics.FindOrCreateGauge("table_locations_cache_memory_bytes", "")->value());
}

}  // namespace nyala::master
