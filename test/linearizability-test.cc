#include "test/linearizability.h"

#include <glog/logging.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <random>
#include <sstream>

#include "common/test_util.h"

namespace nyala {
namespace lin {
namespace {

// Builds histories tersely: each call appends one op and returns it for tweaks.
class HistoryBuilder {
 public:
  Operation& Get(int64_t client, int64_t key, int64_t value, int64_t start, int64_t end) {
    return Add(client, OpType::kGet, key, value, OpResult::kOk, start, end);
  }
  Operation& GetAbsent(int64_t client, int64_t key, int64_t start, int64_t end) {
    return Add(client, OpType::kGet, key, 0, OpResult::kAbsent, start, end);
  }
  Operation& Upsert(int64_t client, int64_t key, int64_t value, int64_t start, int64_t end,
                    OpResult result = OpResult::kOk) {
    return Add(client, OpType::kUpsert, key, value, result, start, end);
  }
  Operation& Insert(int64_t client, int64_t key, int64_t value, int64_t start, int64_t end,
                    OpResult result = OpResult::kOk) {
    return Add(client, OpType::kInsert, key, value, result, start, end);
  }
  Operation& Delete(int64_t client, int64_t key, int64_t start, int64_t end,
                    OpResult result = OpResult::kOk) {
    return Add(client, OpType::kDelete, key, 0, result, start, end);
  }
  Operation& Add(int64_t client, OpType type, int64_t key, int64_t value, OpResult result,
                 int64_t start, int64_t end) {
    Operation op;
    op.client = client;
    op.type = type;
    op.key = key;
    op.value = value;
    op.result = result;
    op.start_ns = start;
    op.end_ns = result == OpResult::kUnknown ? kInfiniteTime : end;
    history_.push_back(op);
    return history_.back();
  }
  const History& history() const { return history_; }

 private:
  History history_;
};

CheckResult Check(const History& h, const CheckOptions& options = {}) {
  Result<CheckResult> r = CheckHistory(h, options);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : CheckResult{};
}

#define EXPECT_LINEARIZABLE(h)                                     \
  do {                                                             \
    CheckResult _r = Check(h);                                     \
    EXPECT_EQ(Verdict::kLinearizable, _r.verdict) << _r.Summary(); \
  } while (0)
#define EXPECT_NOT_LINEARIZABLE(h)                                    \
  do {                                                                \
    CheckResult _r = Check(h);                                        \
    EXPECT_EQ(Verdict::kNotLinearizable, _r.verdict) << _r.Summary(); \
  } while (0)

TEST(LinearizabilityTest, EmptyHistoryIsLinearizable) {
  CheckResult r = Check({});
  EXPECT_EQ(Verdict::kLinearizable, r.verdict);
  EXPECT_TRUE(r.keys.empty());
}

TEST(LinearizabilityTest, SequentialHistoryOfEveryOp) {
  HistoryBuilder b;
  b.GetAbsent(1, 7, 0, 1);
  b.Upsert(1, 7, 1, 2, 3);
  b.Get(2, 7, 1, 4, 5);
  b.Upsert(2, 7, 2, 6, 7);
  b.Get(1, 7, 2, 8, 9);
  b.Insert(1, 7, 3, 10, 11, OpResult::kAlreadyPresent);
  b.Delete(2, 7, 12, 13);
  b.GetAbsent(1, 7, 14, 15);
  b.Delete(1, 7, 16, 17, OpResult::kNotFound);
  b.Insert(2, 7, 4, 18, 19);
  b.Get(1, 7, 4, 20, 21);
  CheckResult r = Check(b.history());
  ASSERT_EQ(Verdict::kLinearizable, r.verdict) << r.Summary();
  ASSERT_EQ(1u, r.keys.size());
  EXPECT_EQ(7, r.keys[0].key);
  EXPECT_EQ(11, r.keys[0].ops);
  EXPECT_EQ(1, r.keys[0].max_concurrency);
  EXPECT_EQ(0u, r.Summary().find("linearizable: 11 operations on 1 keys")) << r.Summary();
}

TEST(LinearizabilityTest, SequentialHistoryWithWrongResultsFails) {
  {
    HistoryBuilder b;  // an acknowledged insert over a present key
    b.Upsert(1, 1, 1, 0, 1);
    b.Insert(1, 1, 2, 2, 3);
    EXPECT_NOT_LINEARIZABLE(b.history());
  }
  {
    HistoryBuilder b;  // delete of an absent key acknowledged
    b.Delete(1, 1, 0, 1);
    EXPECT_NOT_LINEARIZABLE(b.history());
  }
}

TEST(LinearizabilityTest, ConcurrentWritesReadsMaySeeEitherOrder) {
  for (bool first_one : {true, false}) {
    HistoryBuilder b;
    b.Upsert(1, 1, 1, 0, 100);
    b.Upsert(2, 1, 2, 10, 90);
    // Each read overlaps both writes; any order of 1 then 2, or 2 then 1, is explained.
    b.Get(3, 1, first_one ? 1 : 2, 20, 30);
    b.Get(4, 1, first_one ? 2 : 1, 40, 50);
    b.Get(3, 1, first_one ? 2 : 1, 120, 130);
    EXPECT_LINEARIZABLE(b.history());
  }
  {
    HistoryBuilder b;  // both writes done: reads must agree on the last one
    b.Upsert(1, 1, 1, 0, 100);
    b.Upsert(2, 1, 2, 10, 90);
    b.Get(3, 1, 1, 110, 120);
    b.Get(4, 1, 2, 130, 140);
    EXPECT_NOT_LINEARIZABLE(b.history());
  }
}

TEST(LinearizabilityTest, TouchingIntervalsCountAsConcurrent) {
  HistoryBuilder b;
  b.Upsert(1, 1, 1, 0, 10);
  b.Upsert(2, 1, 2, 10, 20);  // starts at the instant the first one ends
  b.Get(3, 1, 1, 20, 30);     // so 2 may have come first; and the read touches its end
  EXPECT_LINEARIZABLE(b.history());
}

TEST(LinearizabilityTest, ReadOfOverwrittenValueFails) {
  HistoryBuilder b;
  b.Upsert(1, 5, 1, 0, 10);
  b.Upsert(1, 5, 2, 20, 30);
  b.Get(2, 5, 1, 40, 50).line = 3;
  CheckResult r = Check(b.history());
  ASSERT_EQ(Verdict::kNotLinearizable, r.verdict) << r.Summary();
  ASSERT_EQ(1u, r.violations.size());
  const KeyReport& k = r.keys[r.violations[0]];
  EXPECT_EQ(5, k.key);
  // The read ends the smallest failing prefix; both writes are involved.
  ASSERT_FALSE(k.involved.empty());
  EXPECT_EQ(2u, k.involved[0]);
  EXPECT_NE(k.involved.end(), std::find(k.involved.begin(), k.involved.end(), 0u));
  EXPECT_NE(k.involved.end(), std::find(k.involved.begin(), k.involved.end(), 1u));
  EXPECT_NE(std::string::npos, k.explanation.find("client 2  get(5) -> 1  [40, 50] (line 3)"))
      << k.explanation;
  EXPECT_NE(std::string::npos, k.explanation.find("impossible: it read 1")) << k.explanation;
  LOG(INFO) << "Example explanation:\n" << r.Summary();
}

TEST(LinearizabilityTest, NewOldInversionFails) {
  HistoryBuilder b;
  b.Upsert(1, 1, 1, 0, 10);
  b.Upsert(2, 1, 2, 20, 1000);  // slow write
  b.Get(3, 1, 2, 30, 40);       // sees the new value
  b.Get(4, 1, 1, 50, 60);       // then a later read sees the old one
  EXPECT_NOT_LINEARIZABLE(b.history());
  // Either read alone is fine.
  HistoryBuilder c;
  c.Upsert(1, 1, 1, 0, 10);
  c.Upsert(2, 1, 2, 20, 1000);
  c.Get(4, 1, 1, 50, 60);
  c.Get(3, 1, 2, 70, 80);
  EXPECT_LINEARIZABLE(c.history());
}

TEST(LinearizabilityTest, ReadOfValueNeverWrittenFails) {
  HistoryBuilder b;
  b.Upsert(1, 1, 1, 0, 10);
  b.Upsert(2, 1, 2, 5, 15);
  b.Get(3, 1, 3, 0, 20);
  EXPECT_NOT_LINEARIZABLE(b.history());
  HistoryBuilder c;  // nothing written at all
  c.Get(3, 1, 0, 0, 20);
  EXPECT_NOT_LINEARIZABLE(c.history());
}

TEST(LinearizabilityTest, AbsentAfterAcknowledgedInsertFails) {
  HistoryBuilder b;
  b.Insert(1, 1, 1, 0, 10);
  b.GetAbsent(2, 1, 20, 30);
  EXPECT_NOT_LINEARIZABLE(b.history());
  // A delete that may have run between them explains it, even one of unknown outcome.
  for (OpResult r : {OpResult::kOk, OpResult::kUnknown}) {
    HistoryBuilder c;
    c.Insert(1, 1, 1, 0, 10);
    c.Delete(3, 1, 5, 25, r);
    c.GetAbsent(2, 1, 20, 30);
    EXPECT_LINEARIZABLE(c.history());
  }
  // A failed delete does not.
  HistoryBuilder d;
  d.Insert(1, 1, 1, 0, 10);
  d.Delete(3, 1, 5, 25, OpResult::kFailed);
  d.GetAbsent(2, 1, 20, 30);
  EXPECT_NOT_LINEARIZABLE(d.history());
}

TEST(LinearizabilityTest, UnknownWriteObservedLaterIsLinearizable) {
  HistoryBuilder b;
  b.Upsert(1, 1, 1, 0, 10);
  b.Upsert(2, 1, 2, 20, 0, OpResult::kUnknown);
  b.Get(3, 1, 1, 1000, 1010);  // not applied yet (or never)
  b.Get(3, 1, 2, 5000, 5010);  // applied long after the client gave up
  b.Get(4, 1, 2, 6000, 6010);
  EXPECT_LINEARIZABLE(b.history());
  // Never observed: fine too.
  HistoryBuilder c;
  c.Upsert(1, 1, 1, 0, 10);
  c.Upsert(2, 1, 2, 20, 0, OpResult::kUnknown);
  c.Get(3, 1, 1, 1000, 1010);
  EXPECT_LINEARIZABLE(c.history());
}

TEST(LinearizabilityTest, UnknownWriteObservedThenUnobservedFails) {
  HistoryBuilder b;
  b.Upsert(1, 1, 1, 0, 10);
  b.Upsert(2, 1, 2, 20, 0, OpResult::kUnknown);
  b.Get(3, 1, 2, 100, 110);
  b.Get(3, 1, 1, 200, 210);
  EXPECT_NOT_LINEARIZABLE(b.history());
}

TEST(LinearizabilityTest, UnknownOpsRecordedEndTimeIsIgnored) {
  // A client that gave up at t=30 may record that time; the write can still land later, or
  // never.
  HistoryBuilder b;
  b.Upsert(1, 1, 1, 0, 10);
  b.Upsert(2, 1, 2, 20, 0, OpResult::kUnknown).end_ns = 30;
  b.Get(3, 1, 1, 40, 50);
  b.Get(3, 1, 2, 60, 70);
  EXPECT_LINEARIZABLE(b.history());
  HistoryBuilder c;
  c.Upsert(1, 1, 1, 0, 10);
  c.Insert(2, 1, 2, 20, 0, OpResult::kUnknown).end_ns = 30;  // the key is present: no effect
  c.Get(3, 1, 1, 40, 50);
  EXPECT_LINEARIZABLE(c.history());
}

TEST(LinearizabilityTest, UnknownWriteCannotTakeEffectBeforeItsInvocation) {
  HistoryBuilder b;
  b.Upsert(2, 1, 2, 20, 0, OpResult::kUnknown);
  b.Get(3, 1, 2, 5, 8);
  EXPECT_NOT_LINEARIZABLE(b.history());
}

TEST(LinearizabilityTest, UnknownInsertAppliesOnlyToAnAbsentKey) {
  {
    HistoryBuilder b;  // key present: the insert cannot have changed the value
    b.Upsert(1, 1, 1, 0, 10);
    b.Insert(2, 1, 5, 20, 0, OpResult::kUnknown);
    b.Get(3, 1, 5, 100, 110);
    EXPECT_NOT_LINEARIZABLE(b.history());
  }
  {
    HistoryBuilder b;  // absent: it may apply, late
    b.Insert(2, 1, 5, 20, 0, OpResult::kUnknown);
    b.GetAbsent(3, 1, 30, 40);
    b.Get(3, 1, 5, 100, 110);
    EXPECT_LINEARIZABLE(b.history());
  }
  {
    HistoryBuilder b;  // and once applied it stays until something deletes it
    b.Insert(2, 1, 5, 20, 0, OpResult::kUnknown);
    b.Get(3, 1, 5, 30, 40);
    b.GetAbsent(3, 1, 100, 110);
    EXPECT_NOT_LINEARIZABLE(b.history());
  }
  {
    HistoryBuilder b;  // after a delete, the same unknown insert may still apply
    b.Upsert(1, 1, 1, 0, 10);
    b.Insert(2, 1, 5, 20, 0, OpResult::kUnknown);
    b.Delete(1, 1, 30, 40);
    b.Get(3, 1, 5, 100, 110);
    EXPECT_LINEARIZABLE(b.history());
  }
}

TEST(LinearizabilityTest, UnknownDeleteMayApplyOrNot) {
  HistoryBuilder b;
  b.Upsert(1, 1, 1, 0, 10);
  b.Delete(2, 1, 20, 0, OpResult::kUnknown);
  b.Get(3, 1, 1, 30, 40);
  b.GetAbsent(3, 1, 50, 60);
  EXPECT_LINEARIZABLE(b.history());
  b.Get(3, 1, 1, 70, 80);  // no second write to bring it back
  EXPECT_NOT_LINEARIZABLE(b.history());
}

TEST(LinearizabilityTest, UnknownAndFailedGetsConstrainNothing) {
  HistoryBuilder b;
  b.Upsert(1, 1, 1, 0, 10);
  b.Add(2, OpType::kGet, 1, 99, OpResult::kUnknown, 20, 0);
  b.Add(2, OpType::kGet, 1, 98, OpResult::kFailed, 30, 40);
  b.Get(3, 1, 1, 50, 60);
  CheckResult r = Check(b.history());
  EXPECT_EQ(Verdict::kLinearizable, r.verdict) << r.Summary();
  ASSERT_EQ(1u, r.keys.size());
  EXPECT_EQ(4, r.keys[0].ops);
  EXPECT_EQ(2, r.keys[0].checked_ops);
}

TEST(LinearizabilityTest, FailedWritesAreNotApplied) {
  HistoryBuilder b;
  b.Upsert(1, 1, 9, 0, 10, OpResult::kFailed);
  b.Get(2, 1, 9, 20, 30);
  EXPECT_NOT_LINEARIZABLE(b.history());
}

TEST(LinearizabilityTest, InsertAlreadyPresentAndDeleteNotFoundConstrainState) {
  {
    HistoryBuilder b;
    b.Insert(1, 1, 1, 0, 10);
    b.Insert(2, 1, 2, 20, 30, OpResult::kAlreadyPresent);
    b.Get(3, 1, 1, 40, 50);  // the failed insert changed nothing
    EXPECT_LINEARIZABLE(b.history());
  }
  {
    HistoryBuilder b;  // saw the key present though nothing ever wrote it
    b.Insert(2, 1, 2, 20, 30, OpResult::kAlreadyPresent);
    EXPECT_NOT_LINEARIZABLE(b.history());
  }
  {
    HistoryBuilder b;  // saw it absent after an acknowledged insert
    b.Insert(1, 1, 1, 0, 10);
    b.Delete(2, 1, 20, 30, OpResult::kNotFound);
    EXPECT_NOT_LINEARIZABLE(b.history());
  }
  {
    HistoryBuilder b;  // concurrent with the insert: may have come first
    b.Insert(1, 1, 1, 0, 10);
    b.Delete(2, 1, 5, 30, OpResult::kNotFound);
    b.Insert(3, 1, 3, 6, 8, OpResult::kAlreadyPresent);
    EXPECT_LINEARIZABLE(b.history());
  }
  {
    HistoryBuilder b;  // two inserts acknowledged with no delete between
    b.Insert(1, 1, 1, 0, 10);
    b.Insert(2, 1, 2, 5, 15);
    EXPECT_NOT_LINEARIZABLE(b.history());
    b.Delete(3, 1, 6, 14);
    EXPECT_LINEARIZABLE(b.history());
  }
}

TEST(LinearizabilityTest, ViolationOnOneKeyAmongManyIsNamed) {
  HistoryBuilder b;
  for (int64_t key = 0; key < 50; ++key) {
    const int64_t t = key * 1000;
    b.Upsert(1, key, key, t, t + 10);
    b.Upsert(2, key, key + 100, t + 5, t + 20);
    b.Get(3, key, key + 100, t + 30, t + 40);
    // Key 37's last read sees the value overwritten before it started.
    b.Get(4, key, key == 37 ? key : key + 100, t + 50, t + 60);
  }
  CheckResult r = Check(b.history());
  ASSERT_EQ(Verdict::kNotLinearizable, r.verdict);
  EXPECT_EQ(50u, r.keys.size());
  ASSERT_EQ(1u, r.violations.size());
  const KeyReport& k = r.keys[r.violations[0]];
  EXPECT_EQ(37, k.key);
  EXPECT_EQ(0u, k.explanation.find("key 37 is not linearizable.")) << k.explanation;
  ASSERT_FALSE(k.involved.empty());
  EXPECT_EQ(37u * 4 + 3, k.involved[0]);  // the stale read
  for (const KeyReport& other : r.keys) {
    if (other.key != 37) {
      EXPECT_EQ(Verdict::kLinearizable, other.verdict);
    }
  }
}

TEST(LinearizabilityTest, InvalidOperationIsAnError) {
  HistoryBuilder b;
  b.Upsert(1, 1, 1, 0, 10);
  b.Add(1, OpType::kGet, 1, 0, OpResult::kNotFound, 20, 30);
  Result<CheckResult> r = CheckHistory(b.history());
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument());
  EXPECT_NE(std::string::npos, r.status().message().find("operation 2")) << r.status();
  HistoryBuilder c;
  c.Upsert(1, 1, 1, 10, 5);
  EXPECT_FALSE(CheckHistory(c.history()).ok());
}

TEST(LinearizabilityTest, SearchBudgetExhaustedIsReportedDistinctly) {
  // Many concurrent writes of distinct values and then a read of a value nobody wrote: every
  // order of the writes must be tried before the search gives up.
  HistoryBuilder b;
  for (int i = 0; i < 24; ++i) b.Upsert(i, 1, i, 0, 1000);
  for (int i = 0; i < 24; ++i) b.Get(100 + i, 1, i, 10, 990);
  b.Get(200, 1, 999, 2000, 2010);
  CheckOptions options;
  options.max_steps_per_key = 100000;
  CheckResult r = Check(b.history(), options);
  EXPECT_EQ(Verdict::kUnknown, r.verdict) << r.Summary();
  ASSERT_EQ(1u, r.undecided.size());
  EXPECT_NE(std::string::npos, r.keys[0].explanation.find("search steps")) << r.Summary();
  EXPECT_NE(std::string::npos, r.Summary().find("unknown (search budget exhausted)"));

  options.max_steps_per_key = 0;
  options.time_limit_ms = 50;
  const auto start = std::chrono::steady_clock::now();
  r = Check(b.history(), options);
  EXPECT_EQ(Verdict::kUnknown, r.verdict) << r.Summary();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

// ---------------------------------------------------------------------------------------
// Random histories.

// An exhaustive reference: tries every order that respects real time (op a must precede b
// when a completed strictly before b was invoked); unknown ops may also be left out.
bool BruteForceLinearizable(const History& h) {
  std::vector<const Operation*> ops;
  for (const Operation& op : h) {
    if (op.result == OpResult::kFailed) continue;
    if (op.result == OpResult::kUnknown && op.type == OpType::kGet) continue;
    ops.push_back(&op);
  }
  std::vector<bool> used(ops.size(), false);
  // Key -> present value.
  std::function<bool(std::map<int64_t, int64_t>&)> rec = [&](std::map<int64_t, int64_t>& st) {
    bool all_ok_done = true;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (!used[i] && ops[i]->result != OpResult::kUnknown) all_ok_done = false;
    }
    if (all_ok_done) return true;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (used[i]) continue;
      bool blocked = false;
      for (size_t j = 0; j < ops.size() && !blocked; ++j) {
        blocked = !used[j] && j != i && ops[j]->result != OpResult::kUnknown &&
                  ops[j]->end_ns < ops[i]->start_ns;
      }
      if (blocked) continue;
      const Operation& op = *ops[i];
      auto it = st.find(op.key);
      const bool present = it != st.end();
      std::map<int64_t, int64_t> next = st;
      bool legal = true;
      const bool unknown = op.result == OpResult::kUnknown;
      switch (op.type) {
        case OpType::kGet:
          legal = op.result == OpResult::kAbsent ? !present : present && it->second == op.value;
          break;
        case OpType::kUpsert:
          next[op.key] = op.value;
          break;
        case OpType::kInsert:
          if (op.result == OpResult::kAlreadyPresent) {
            legal = present;
          } else if (!present) {
            next[op.key] = op.value;
          } else {
            legal = unknown;
          }
          break;
        case OpType::kDelete:
          if (op.result == OpResult::kNotFound) {
            legal = !present;
          } else {
            legal = present || unknown;
            next.erase(op.key);
          }
          break;
      }
      if (!legal) continue;
      used[i] = true;
      const bool ok = rec(next);
      used[i] = false;
      if (ok) return true;
    }
    return false;
  };
  std::map<int64_t, int64_t> st;
  return rec(st);
}

// A random history, not necessarily linearizable, of `n` ops on key 1 with values 1..2.
History RandomSmallHistory(std::mt19937_64& rng, int n) {
  History h;
  for (int i = 0; i < n; ++i) {
    Operation op;
    op.client = i;
    op.key = 1;
    op.type = static_cast<OpType>(rng() % 4);
    op.value = 1 + static_cast<int64_t>(rng() % 2);
    op.start_ns = static_cast<int64_t>(rng() % 20);
    op.end_ns = op.start_ns + static_cast<int64_t>(rng() % 10);
    const int r = static_cast<int>(rng() % 10);
    if (r == 0) {
      op.result = OpResult::kUnknown;
      op.end_ns = kInfiniteTime;
    } else if (r == 1) {
      op.result = OpResult::kFailed;
    } else if (r < 5) {
      switch (op.type) {
        case OpType::kGet:
          op.result = OpResult::kAbsent;
          break;
        case OpType::kInsert:
          op.result = OpResult::kAlreadyPresent;
          break;
        case OpType::kDelete:
          op.result = OpResult::kNotFound;
          break;
        case OpType::kUpsert:
          op.result = OpResult::kOk;
          break;
      }
    } else {
      op.result = OpResult::kOk;
    }
    h.push_back(op);
  }
  return h;
}

TEST(LinearizabilityTest, AgreesWithBruteForceOnSmallRandomHistories) {
  const uint32_t seed = TestRandomSeed();
  std::mt19937_64 rng(seed);
  int linearizable = 0;
  const int kHistories = 4000;
  for (int i = 0; i < kHistories; ++i) {
    const History h = RandomSmallHistory(rng, 2 + static_cast<int>(rng() % 6));
    const bool expected = BruteForceLinearizable(h);
    CheckResult r = Check(h);
    ASSERT_EQ(expected ? Verdict::kLinearizable : Verdict::kNotLinearizable, r.verdict)
        << "seed " << seed << " history " << i << "\n"
        <<
        [&] {
          std::ostringstream s;
          WriteHistory(h, s);
          return s.str();
        }()
        << r.Summary();
    linearizable += expected ? 1 : 0;
  }
  // Both verdicts well represented.
  EXPECT_GT(linearizable, kHistories / 10);
  EXPECT_LT(linearizable, kHistories * 9 / 10);
}

struct GeneratorOptions {
  int clients = 8;
  int keys = 10;
  int ops = 1000;
  int64_t value_range = 0;      // 0: every written value unique
  double unknown_fraction = 0;  // of writes; half of them applied, half not
  double failed_fraction = 0;
};

// A linearizable history: each client issues ops one after another; each op takes effect at
// a random instant inside its interval, and the results come from a sequential model run
// in the order of those instants.
History RandomLinearizableHistory(std::mt19937_64& rng, const GeneratorOptions& g) {
  struct Planned {
    int64_t client, start, point, end;
  };
  std::vector<Planned> plan;
  for (int c = 0; c < g.clients; ++c) {
    int64_t t = static_cast<int64_t>(rng() % 100);
    for (int i = 0; i < g.ops / g.clients; ++i) {
      const int64_t start = t + static_cast<int64_t>(rng() % 50);
      const int64_t point = start + static_cast<int64_t>(rng() % 200);
      const int64_t end = point + static_cast<int64_t>(rng() % 200);
      plan.push_back({c, start, point, end});
      t = end;
    }
  }
  std::sort(plan.begin(), plan.end(),
            [](const Planned& a, const Planned& b) { return a.point < b.point; });
  std::map<int64_t, int64_t> state;
  History h;
  int64_t next_value = 1;
  std::uniform_real_distribution<double> unit(0, 1);
  for (const Planned& p : plan) {
    Operation op;
    op.client = p.client;
    op.key = static_cast<int64_t>(rng() % g.keys);
    op.start_ns = p.start;
    op.end_ns = p.end;
    op.value = g.value_range > 0 ? 1 + static_cast<int64_t>(rng() % g.value_range) : next_value++;
    const int kind = static_cast<int>(rng() % 10);
    op.type = kind < 4   ? OpType::kGet
              : kind < 7 ? OpType::kUpsert
              : kind < 9 ? OpType::kInsert
                         : OpType::kDelete;
    auto it = state.find(op.key);
    const bool present = it != state.end();
    bool applied = true;
    const double u = unit(rng);
    if (op.type != OpType::kGet && u < g.unknown_fraction) {
      op.result = OpResult::kUnknown;
      op.end_ns = kInfiniteTime;
      applied = u < g.unknown_fraction / 2;
    } else if (u < g.unknown_fraction + g.failed_fraction) {
      op.result = OpResult::kFailed;
      applied = false;
    } else {
      op.result = OpResult::kOk;
    }
    switch (op.type) {
      case OpType::kGet:
        if (op.result == OpResult::kOk) {
          if (present) {
            op.value = it->second;
          } else {
            op.result = OpResult::kAbsent;
            op.value = 0;
          }
        }
        break;
      case OpType::kUpsert:
        if (applied) state[op.key] = op.value;
        break;
      case OpType::kInsert:
        if (present && op.result == OpResult::kOk) op.result = OpResult::kAlreadyPresent;
        if (applied && !present) state[op.key] = op.value;
        break;
      case OpType::kDelete:
        op.value = 0;
        if (!present && op.result == OpResult::kOk) op.result = OpResult::kNotFound;
        if (applied) state.erase(op.key);
        break;
    }
    h.push_back(op);
  }
  std::shuffle(h.begin(), h.end(), rng);  // the checker must not rely on input order
  return h;
}

// Makes one successful read in `h` certainly wrong. With `unique_values` (each write in `h`
// wrote its own value) it reads the value of a write invoked after the read completed, when
// there is one; else a value never written. Returns the index of the read.
size_t CorruptOneRead(std::mt19937_64& rng, bool unique_values, History* h) {
  std::vector<size_t> reads;
  for (size_t i = 0; i < h->size(); ++i) {
    const Operation& op = (*h)[i];
    if (op.type == OpType::kGet && op.result != OpResult::kUnknown &&
        op.result != OpResult::kFailed) {
      reads.push_back(i);
    }
  }
  const size_t r = reads[rng() % reads.size()];
  Operation& read = (*h)[r];
  int64_t future_value = -1;
  for (const Operation& op : unique_values ? *h : History{}) {
    if (op.key == read.key && op.result != OpResult::kFailed && op.start_ns > read.end_ns &&
        (op.type == OpType::kUpsert || op.type == OpType::kInsert)) {
      future_value = op.value;
      break;
    }
  }
  read.result = OpResult::kOk;
  read.value = future_value != -1 ? future_value : 1'000'000'000;
  return r;
}

TEST(LinearizabilityTest, RandomLinearizableHistoriesPassAndCorruptedOnesFail) {
  const uint32_t seed = TestRandomSeed();
  const auto start = std::chrono::steady_clock::now();
  for (int iter = 0; iter < 200; ++iter) {
    std::mt19937_64 rng(seed + iter);
    GeneratorOptions g;
    g.clients = 2 + iter % 7;
    g.keys = 1 + iter % 4;
    g.ops = 40 + iter % 160;
    g.unknown_fraction = iter % 3 == 0 ? 0.05 : 0;
    g.failed_fraction = iter % 5 == 0 ? 0.05 : 0;
    History h = RandomLinearizableHistory(rng, g);
    CheckResult r = Check(h);
    ASSERT_EQ(Verdict::kLinearizable, r.verdict) << "seed " << seed << " iteration " << iter << "\n"
                                                 << r.Summary();
    const size_t bad = CorruptOneRead(rng, /*unique_values=*/true, &h);
    r = Check(h);
    ASSERT_EQ(Verdict::kNotLinearizable, r.verdict)
        << "seed " << seed << " iteration " << iter << "\n"
        << r.Summary();
    ASSERT_EQ(1u, r.violations.size());
    EXPECT_EQ(h[bad].key, r.keys[r.violations[0]].key);
  }
  // With values drawn from a small range a read has many candidate writes: must still pass.
  for (int iter = 0; iter < 100; ++iter) {
    std::mt19937_64 rng(seed + 1000 + iter);
    GeneratorOptions g;
    g.clients = 2 + iter % 7;
    g.keys = 1 + iter % 3;
    g.ops = 40 + iter % 160;
    g.value_range = 1 + iter % 3;
    g.unknown_fraction = iter % 2 == 0 ? 0.05 : 0;
    const History h = RandomLinearizableHistory(rng, g);
    CheckResult r = Check(h);
    ASSERT_EQ(Verdict::kLinearizable, r.verdict) << "seed " << seed << " iteration " << iter << "\n"
                                                 << r.Summary();
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  LOG(INFO) << "random histories checked in " << seconds << " s";
  EXPECT_LT(seconds, 10);
}

// Checks a generated history of `g.ops` ops, then (with `corrupt`) the same with one read
// corrupted, and returns the seconds each took.
std::pair<double, double> CheckLargeHistory(const GeneratorOptions& g, bool corrupt = true) {
  const uint32_t seed = TestRandomSeed();
  std::mt19937_64 rng(seed);
  History h = RandomLinearizableHistory(rng, g);
  auto start = std::chrono::steady_clock::now();
  CheckResult r = Check(h);
  const double pass_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(Verdict::kLinearizable, r.verdict) << "seed " << seed << "\n" << r.Summary();
  EXPECT_EQ(g.ops, r.total_ops);
  int64_t steps = 0;
  int concurrency = 0;
  for (const KeyReport& k : r.keys) {
    steps += k.steps;
    concurrency = std::max(concurrency, k.max_concurrency);
  }
  LOG(INFO) << g.ops << " ops on " << g.keys << " keys, " << g.clients << " clients (values "
            << (g.value_range ? "1.." + std::to_string(g.value_range) : "unique")
            << ", most in flight on a key " << concurrency << "): " << VerdictName(r.verdict)
            << " in " << pass_seconds << " s, " << steps << " steps";

  if (!corrupt) return {pass_seconds, 0};
  CorruptOneRead(rng, g.value_range == 0, &h);
  start = std::chrono::steady_clock::now();
  r = Check(h);
  const double fail_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(Verdict::kNotLinearizable, r.verdict) << "seed " << seed << "\n" << r.Summary();
  LOG(INFO) << "  with one corrupted read: " << VerdictName(r.verdict) << ", explained, in "
            << fail_seconds << " s";
  return {pass_seconds, fail_seconds};
}

TEST(LinearizabilityTest, LargeHistoryChecksQuickly) {
  GeneratorOptions g;
  g.clients = 8;
  g.keys = 10;
  g.ops = 20000;
  g.unknown_fraction = 0.002;
  g.failed_fraction = 0.002;
  auto [pass, fail] = CheckLargeHistory(g);
  EXPECT_LT(pass, 3);
  EXPECT_LT(fail, 5);
}

TEST(LinearizabilityTest, LargeSingleKeyHistoryChecksQuickly) {
  // All 8 clients on one key, values from a small range so that reads are ambiguous, and
  // unknown writes that stay pending to the end.
  GeneratorOptions g;
  g.clients = 8;
  g.keys = 1;
  g.ops = 20000;
  g.value_range = 3;
  g.unknown_fraction = 0.001;
  g.failed_fraction = 0.002;
  EXPECT_LT(CheckLargeHistory(g, /*corrupt=*/false).first, 3);
  // Refuting means visiting every configuration up to the bad read, which on one busy key
  // costs far more than passing: a shorter history for that.
  g.ops = 5000;
  g.value_range = 0;
  g.unknown_fraction = 0;
  auto [pass, fail] = CheckLargeHistory(g);
  EXPECT_LT(pass, 1);
  EXPECT_LT(fail, 5);
}

// ---------------------------------------------------------------------------------------
// JSON Lines.

TEST(LinearizabilityJsonTest, RoundTrip) {
  HistoryBuilder b;
  b.Upsert(3, 17, 5, 1200, 1950);
  b.Get(4, -2, -9, 0, 0);
  b.GetAbsent(4, 17, 10, 20);
  b.Insert(1, 17, 6, 30, 40, OpResult::kAlreadyPresent);
  b.Delete(1, 17, 50, 0, OpResult::kUnknown).error = "timed out";
  b.Delete(2, 17, 60, 70, OpResult::kNotFound);
  b.Upsert(2, 17, 8, 80, 90, OpResult::kFailed);
  std::stringstream s;
  WriteHistory(b.history(), s);
  EXPECT_EQ(0u, s.str().find("{\"client\":3,\"op\":\"upsert\",\"key\":17,\"value\":5,"
                             "\"result\":\"ok\",\"start_ns\":1200,\"end_ns\":1950}\n"))
      << s.str();
  History parsed;
  ASSERT_OK(ParseHistory(s, &parsed));
  ASSERT_EQ(b.history().size(), parsed.size());
  for (size_t i = 0; i < parsed.size(); ++i) {
    const Operation& want = b.history()[i];
    const Operation& got = parsed[i];
    EXPECT_EQ(want.client, got.client);
    EXPECT_EQ(want.type, got.type);
    EXPECT_EQ(want.key, got.key);
    EXPECT_EQ(want.value, got.value);
    EXPECT_EQ(want.result, got.result);
    EXPECT_EQ(want.start_ns, got.start_ns);
    if (want.result != OpResult::kUnknown) {
      EXPECT_EQ(want.end_ns, got.end_ns);
    }
    EXPECT_EQ(want.error, got.error);
    EXPECT_EQ(static_cast<int64_t>(i + 1), got.line);
  }
}

TEST(LinearizabilityJsonTest, ParsesOptionalFieldsAndBlankLines) {
  std::stringstream s(
      "\n"
      "{\"client\":1,\"op\":\"delete\",\"key\":2,\"result\":\"unknown\",\"start_ns\":5}\n"
      "   \n"
      "{\"op\":\"get\",\"client\":2,\"key\":2,\"result\":\"absent\",\"start_ns\":6,"
      "\"end_ns\":7, \"error\":\"\"}\r\n");
  History h;
  ASSERT_OK(ParseHistory(s, &h));
  ASSERT_EQ(2u, h.size());
  EXPECT_EQ(2, h[0].line);
  EXPECT_EQ(kInfiniteTime, h[0].end_ns);
  EXPECT_EQ(4, h[1].line);
  EXPECT_EQ(OpResult::kAbsent, h[1].result);
}

TEST(LinearizabilityJsonTest, MalformedLinesGiveTheLineAndTheReason) {
  const std::string good =
      "{\"client\":1,\"op\":\"upsert\",\"key\":1,\"value\":1,\"result\":\"ok\",\"start_ns\":0,"
      "\"end_ns\":1}\n";
  const std::pair<std::string, std::string> cases[] = {
      {"{\"client\":1,", "not valid JSON"},
      {"[1,2]", "not a JSON object"},
      {"42", "not a JSON object"},
      {"{\"op\":\"get\",\"key\":1,\"result\":\"absent\",\"start_ns\":0,\"end_ns\":1}",
       "missing field \"client\""},
      {"{\"client\":\"a\",\"op\":\"get\",\"key\":1,\"result\":\"absent\",\"start_ns\":0,"
       "\"end_ns\":1}",
       "field \"client\" must be an integer"},
      {"{\"client\":1,\"op\":\"read\",\"key\":1,\"result\":\"absent\",\"start_ns\":0,"
       "\"end_ns\":1}",
       "unknown op \"read\""},
      {"{\"client\":1,\"op\":\"get\",\"key\":1.5,\"result\":\"absent\",\"start_ns\":0,"
       "\"end_ns\":1}",
       "field \"key\" must be an integer"},
      {"{\"client\":1,\"op\":\"get\",\"key\":18446744073709551615,\"result\":\"absent\","
       "\"start_ns\":0,\"end_ns\":1}",
       "does not fit in int64"},
      {"{\"client\":1,\"op\":\"get\",\"key\":1,\"result\":\"maybe\",\"start_ns\":0,"
       "\"end_ns\":1}",
       "unknown result \"maybe\""},
      {"{\"client\":1,\"op\":\"get\",\"key\":1,\"result\":\"not_found\",\"start_ns\":0,"
       "\"end_ns\":1}",
       "result \"not_found\" is not possible for op \"get\""},
      {"{\"client\":1,\"op\":\"get\",\"key\":1,\"result\":\"ok\",\"start_ns\":0,\"end_ns\":1}",
       "missing field \"value\""},
      {"{\"client\":1,\"op\":\"upsert\",\"key\":1,\"result\":\"ok\",\"start_ns\":0,"
       "\"end_ns\":1}",
       "missing field \"value\""},
      {"{\"client\":1,\"op\":\"delete\",\"key\":1,\"value\":3,\"result\":\"ok\","
       "\"start_ns\":0,\"end_ns\":1}",
       "field \"value\" is not allowed"},
      {"{\"client\":1,\"op\":\"delete\",\"key\":1,\"result\":\"ok\",\"start_ns\":0}",
       "missing field \"end_ns\""},
      {"{\"client\":1,\"op\":\"delete\",\"key\":1,\"result\":\"ok\",\"start_ns\":5,"
       "\"end_ns\":4}",
       "end_ns 4 is before start_ns 5"},
      {"{\"client\":1,\"op\":\"delete\",\"key\":1,\"result\":\"ok\",\"start\":5,"
       "\"end_ns\":4}",
       "unknown field \"start\""},
      {"{\"client\":1,\"op\":\"delete\",\"key\":1,\"result\":\"ok\",\"start_ns\":0,"
       "\"end_ns\":4,\"error\":7}",
       "field \"error\" must be a string"},
  };
  for (const auto& [line, reason] : cases) {
    std::stringstream s(good + good + line + "\n" + good);
    History h;
    Status st = ParseHistory(s, &h);
    ASSERT_FALSE(st.ok()) << line;
    EXPECT_TRUE(st.IsInvalidArgument()) << st;
    EXPECT_EQ(0u, st.message().find("line 3: ")) << st;
    EXPECT_NE(std::string::npos, st.message().find(reason)) << st << " (wanted: " << reason << ")";
  }
}

}  // namespace
}  // namespace lin
}  // namespace nyala
