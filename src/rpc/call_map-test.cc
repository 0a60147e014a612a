// CallMap against std::unordered_map: the same random inserts, takes and sweeps must
// give the same answers, through growth and long probe runs.
#include "rpc/call_map.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace nyala::rpc {
namespace {

struct Value {
  explicit Value(int v) : v(v) {}
  int v;
};

TEST(CallMapTest, AgreesWithAStdMapUnderRandomUse) {
  std::mt19937 rng(11);
  for (int round = 0; round < 20; round++) {
    CallMap<Value> map;
    std::map<int32_t, int> model;
    // Ids from a small range collide and make long runs; from a counter, as a
    // messenger numbers its calls; sometimes far apart.
    int32_t next_id = int32_t(rng() % 1000);
    for (int op = 0; op < 4000; op++) {
      const int kind = int(rng() % 10);
      int32_t id;
      switch (rng() % 3) {
        case 0:
          id = int32_t(rng() % 200);
          break;
        case 1:
          id = next_id++;
          break;
        default:
          id = int32_t(rng() & 0x7fffffff);
          break;
      }
      if (kind < 5) {
        auto v = std::make_unique<Value>(op);
        const bool inserted = map.Insert(id, &v);
        ASSERT_EQ(inserted, model.count(id) == 0) << "id " << id;
        if (inserted) {
          ASSERT_EQ(v, nullptr);
          model[id] = op;
        } else {
          ASSERT_NE(v, nullptr);  // left with the caller
        }
      } else if (kind < 9) {
        std::unique_ptr<Value> v = map.Take(id);
        auto it = model.find(id);
        if (it == model.end()) {
          ASSERT_EQ(v, nullptr) << "id " << id;
        } else {
          ASSERT_NE(v, nullptr) << "id " << id;
          ASSERT_EQ(v->v, it->second);
          model.erase(it);
        }
      } else {
        // A sweep: take every value made before a random op.
        const int before = int(rng() % (op + 1));
        std::vector<std::unique_ptr<Value>> taken;
        map.TakeIf([&](const Value& v) { return v.v < before; }, &taken);
        size_t expected = 0;
        for (auto it = model.begin(); it != model.end();) {
          if (it->second < before) {
            expected++;
            it = model.erase(it);
          } else {
            ++it;
          }
        }
        ASSERT_EQ(taken.size(), expected);
        for (const auto& v : taken) ASSERT_LT(v->v, before);
      }
      ASSERT_EQ(map.size(), model.size());
    }
    // Every remaining entry is found, by lookup and by visit.
    std::map<int32_t, int> seen;
    map.ForEach([&](int32_t id, const Value& v) { seen[id] = v.v; });
    ASSERT_EQ(seen, model);
    std::vector<std::unique_ptr<Value>> all;
    map.TakeAll(&all);
    ASSERT_EQ(all.size(), model.size());
    ASSERT_EQ(map.size(), 0u);
    for (const auto& [id, v] : model) ASSERT_EQ(map.Take(id), nullptr);
  }
}

TEST(CallMapTest, ANegativeIdIsNeverFound) {
  CallMap<Value> map;
  auto v = std::make_unique<Value>(1);
  ASSERT_TRUE(map.Insert(0, &v));
  EXPECT_EQ(map.Take(-1), nullptr);  // a server's fatal error carries call id -1
  EXPECT_EQ(map.size(), 1u);
}

}  // namespace
}  // namespace nyala::rpc
