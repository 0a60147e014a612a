#include "test/linearizability.h"
#include "common/status.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace nyala {
namespace lin {

namespace {

using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------
// Names and formatting.

constexpr const char* kOpTypeNames[] = {"get", "upsert", "insert", "delete"};
constexpr const char* kResultNames[] = {"ok",        "absent",  "already_present",
                                        "not_found", "unknown", "failed"};

bool IsOpen(OpResult r) { return r == OpResult::kUnknown || r == OpResult::kFailed; }

bool HasValueArg(OpType t) { return t == OpType::kUpsert || t == OpType::kInsert; }

}  // namespace

const char* OpTypeName(OpType type) { return kOpTypeNames[static_cast<int>(type)]; }
const char* OpResultName(OpResult result) { return kResultNames[static_cast<int>(result)]; }

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kLinearizable:
      return "linearizable";
    case Verdict::kNotLinearizable:
      return "not linearizable";
    case Verdict::kUnknown:
      return "unknown (search budget exhausted)";
  }
  return "?";
}

Status ValidateOperation(const Operation& op) {
  bool result_ok = false;
  switch (op.result) {
    case OpResult::kOk:
    case OpResult::kUnknown:
    case OpResult::kFailed:
      result_ok = true;
      break;
    case OpResult::kAbsent:
      result_ok = op.type == OpType::kGet;
      break;
    case OpResult::kAlreadyPresent:
      result_ok = op.type == OpType::kInsert;
      break;
    case OpResult::kNotFound:
      result_ok = op.type == OpType::kDelete;
      break;
  }
  if (!result_ok) {
    return Status::InvalidArgument(std::string("result \"") + OpResultName(op.result) +
                                   "\" is not possible for op \"" + OpTypeName(op.type) + "\"");
  }
  if (!IsOpen(op.result) && op.end_ns < op.start_ns) {
    return Status::InvalidArgument("end_ns " + std::to_string(op.end_ns) + " is before start_ns " +
                                   std::to_string(op.start_ns));
  }
  return Status::OK();
}

std::string FormatOperation(const Operation& op) {
  std::ostringstream s;
  s << "client " << op.client << "  " << OpTypeName(op.type) << "(" << op.key;
  if (HasValueArg(op.type)) s << ", " << op.value;
  s << ") -> ";
  if (op.type == OpType::kGet && op.result == OpResult::kOk) {
    s << op.value;
  } else {
    s << OpResultName(op.result);
  }
  s << "  [" << op.start_ns << ", ";
  if (IsOpen(op.result)) {
    s << "?";
  } else {
    s << op.end_ns;
  }
  s << "]";
  if (op.line > 0) s << " (line " << op.line << ")";
  if (!op.error.empty()) s << " error: " << op.error;
  return s.str();
}

// ---------------------------------------------------------------------------------------
// JSON Lines.

std::string OperationToJson(const Operation& op) {
  nlohmann::ordered_json j;
  j["client"] = op.client;
  j["op"] = OpTypeName(op.type);
  j["key"] = op.key;
  if (HasValueArg(op.type) || (op.type == OpType::kGet && op.result == OpResult::kOk)) {
    j["value"] = op.value;
  }
  j["result"] = OpResultName(op.result);
  j["start_ns"] = op.start_ns;
  if (!IsOpen(op.result) || (op.end_ns != kInfiniteTime && op.end_ns >= op.start_ns)) {
    j["end_ns"] = op.end_ns;
  }
  if (!op.error.empty()) j["error"] = op.error;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

Status GetInt(const nlohmann::json& j, const char* field, std::optional<int64_t>* out) {
  auto it = j.find(field);
  if (it == j.end()) return Status::OK();
  if (!it->is_number_integer()) {
    return Status::InvalidArgument(std::string("field \"") + field + "\" must be an integer, got " +
                                   it->dump());
  }
  if (it->is_number_unsigned() &&
      it->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Status::InvalidArgument(std::string("field \"") + field + "\" does not fit in int64");
  }
  *out = it->get<int64_t>();
  return Status::OK();
}

Status RequireInt(const nlohmann::json& j, const char* field, int64_t* out) {
  std::optional<int64_t> v;
  RETURN_NOT_OK(GetInt(j, field, &v));
  if (!v) return Status::InvalidArgument(std::string("missing field \"") + field + "\"");
  *out = *v;
  return Status::OK();
}

Status GetString(const nlohmann::json& j, const char* field, std::optional<std::string>* out) {
  auto it = j.find(field);
  if (it == j.end()) return Status::OK();
  if (!it->is_string()) {
    return Status::InvalidArgument(std::string("field \"") + field + "\" must be a string, got " +
                                   it->dump());
  }
  *out = it->get<std::string>();
  return Status::OK();
}

}  // namespace

Result<Operation> ParseOperationJson(std::string_view json_line) {
  nlohmann::json j = nlohmann::json::parse(json_line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidArgument("not valid JSON");
  if (!j.is_object()) return Status::InvalidArgument("not a JSON object");
  static const char* const kFields[] = {"client", "op",       "key",    "value",
                                        "result", "start_ns", "end_ns", "error"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::find_if(std::begin(kFields), std::end(kFields),
                     [&](const char* f) { return it.key() == f; }) == std::end(kFields)) {
      return Status::InvalidArgument("unknown field \"" + it.key() + "\"");
    }
  }
  Operation op;
  RETURN_NOT_OK(RequireInt(j, "client", &op.client));
  std::optional<std::string> type, result, error;
  RETURN_NOT_OK(GetString(j, "op", &type));
  if (!type) return Status::InvalidArgument("missing field \"op\"");
  auto t = std::find(std::begin(kOpTypeNames), std::end(kOpTypeNames), *type);
  if (t == std::end(kOpTypeNames)) {
    return Status::InvalidArgument("unknown op \"" + *type +
                                   "\" (expected get, upsert, insert or delete)");
  }
  op.type = static_cast<OpType>(t - std::begin(kOpTypeNames));
  RETURN_NOT_OK(RequireInt(j, "key", &op.key));
  RETURN_NOT_OK(GetString(j, "result", &result));
  if (!result) return Status::InvalidArgument("missing field \"result\"");
  auto r = std::find(std::begin(kResultNames), std::end(kResultNames), *result);
  if (r == std::end(kResultNames)) {
    return Status::InvalidArgument(
        "unknown result \"" + *result +
        "\" (expected ok, absent, already_present, not_found, unknown or failed)");
  }
  op.result = static_cast<OpResult>(r - std::begin(kResultNames));

  std::optional<int64_t> value;
  RETURN_NOT_OK(GetInt(j, "value", &value));
  const bool wants_value =
      HasValueArg(op.type) || (op.type == OpType::kGet && op.result == OpResult::kOk);
  if (wants_value && !value) return Status::InvalidArgument("missing field \"value\"");
  if (!wants_value && value) {
    return Status::InvalidArgument(std::string("field \"value\" is not allowed for ") +
                                   OpTypeName(op.type) + " with result " + *result);
  }
  op.value = value.value_or(0);

  RETURN_NOT_OK(RequireInt(j, "start_ns", &op.start_ns));
  std::optional<int64_t> end;
  RETURN_NOT_OK(GetInt(j, "end_ns", &end));
  if (!end && !IsOpen(op.result)) return Status::InvalidArgument("missing field \"end_ns\"");
  op.end_ns = end.value_or(kInfiniteTime);
  RETURN_NOT_OK(GetString(j, "error", &error));
  op.error = error.value_or("");
  RETURN_NOT_OK(ValidateOperation(op));
  return op;
}

Status ParseHistory(std::istream& in, History* history) {
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    Result<Operation> op = ParseOperationJson(line);
    if (!op.ok()) {
      return Status::InvalidArgument("line " + std::to_string(line_no) + ": " +
                                     op.status().message());
    }
    op->line = line_no;
    history->push_back(std::move(*op));
  }
  if (in.bad())
    return Status::IOError("reading the history failed after line " + std::to_string(line_no));
  return Status::OK();
}

void WriteHistory(const History& history, std::ostream& out) {
  for (const Operation& op : history) out << OperationToJson(op) << "\n";
}

// ---------------------------------------------------------------------------------------
// The search.

namespace {

// The model's state for one key. An absent key always has value 0, so that equal states
// compare and hash equal.
struct State {
  bool present = false;
  int64_t value = 0;
  bool operator==(const State& o) const { return present == o.present && value == o.value; }
};

std::string StateString(const State& s) {
  return s.present ? "holds " + std::to_string(s.value) : "is absent";
}

// An operation as one search sees it: an unknown one (given, or still running at the cut of a
// prefix) never completes.
struct SearchOp {
  const Operation* op;
  size_t input_index;
  bool unknown;
  int64_t start;
  int64_t end;  // kInfiniteTime when unknown
};

// Applies `o` to `s`; false (and `s` unchanged) if its result is impossible in `s`.
bool Step(const SearchOp& o, State* s) {
  const Operation& op = *o.op;
  if (o.unknown) {
    switch (op.type) {
      case OpType::kGet:
        break;
      case OpType::kUpsert:
        *s = State{true, op.value};
        break;
      case OpType::kInsert:
        if (!s->present) *s = State{true, op.value};
        break;
      case OpType::kDelete:
        *s = State{};
        break;
    }
    return true;
  }
  switch (op.type) {
    case OpType::kGet:
      if (op.result == OpResult::kAbsent) return !s->present;
      return s->present && s->value == op.value;
    case OpType::kUpsert:
      *s = State{true, op.value};
      return true;
    case OpType::kInsert:
      if (op.result == OpResult::kAlreadyPresent) return s->present;
      if (s->present) return false;
      *s = State{true, op.value};
      return true;
    case OpType::kDelete:
      if (op.result == OpResult::kNotFound) return !s->present;
      if (!s->present) return false;
      *s = State{};
      return true;
  }
  return false;
}

// Why `o` cannot come next in `s`, or "" if it can.
std::string WhyNot(const SearchOp& o, const State& s) {
  State t = s;
  if (Step(o, &t)) return "";
  const Operation& op = *o.op;
  switch (op.type) {
    case OpType::kGet:
      return op.result == OpResult::kAbsent ? "it saw the key absent"
                                            : "it read " + std::to_string(op.value);
    case OpType::kInsert:
      return op.result == OpResult::kAlreadyPresent ? "it saw the key present"
                                                    : "it needs the key absent";
    case OpType::kDelete:
      return op.result == OpResult::kNotFound ? "it saw the key absent"
                                              : "it needs the key present";
    case OpType::kUpsert:
      break;
  }
  return "?";
}

uint64_t Mix64(uint64_t x) {  // splitmix64's finalizer
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct Event {
  int64_t time;
  int kind;  // 0 invocation, 1 completion: invocations first at equal times
  int op;
};

// Events of `ops` in the order the search walks them; unknown ops have no completion.
std::vector<Event> SortedEvents(const std::vector<SearchOp>& ops) {
  std::vector<Event> events;
  events.reserve(ops.size() * 2);
  for (size_t i = 0; i < ops.size(); ++i) {
    events.push_back({ops[i].start, 0, static_cast<int>(i)});
    if (!ops[i].unknown) events.push_back({ops[i].end, 1, static_cast<int>(i)});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.op < b.op;
  });
  return events;
}

struct Limits {
  int64_t max_steps = 0;
  int64_t max_cache_bytes = 0;
  std::optional<Clock::time_point> deadline;
};

struct SearchResult {
  enum Outcome { kLinearizable, kViolation, kExhausted } outcome = kLinearizable;
  std::string exhausted_reason;
  int64_t steps = 0;
  int64_t cache_entries = 0;
  // With record_best: the longest partial linearization seen (ops in order, the state after
  // each), the op whose completion stopped it and the ops that were candidates to come next
  // (invoked before that completion, not linearized). Without: only blocking/candidates at
  // the final failure.
  std::vector<int> best_order;
  std::vector<State> best_states;
  int blocking = -1;
  std::vector<int> candidates;
  // The most completions, first ones in time order, that one visited configuration had all
  // linearized. After a violation (every configuration visited), the prefix of the history
  // cut after completion number most_completions_covered (0-based) is the smallest one that
  // is not linearizable: a prefix cut after completion c is linearizable iff some
  // configuration covers completions 0..c (take its linearization up to the moment the
  // last of them went in).
  int most_completions_covered = 0;
};

// Wing & Gong's search with Lowe's cache, over one key's operations.
//
// A configuration is (set of linearized ops, model state). The cache holds every
// configuration visited, which is either on the current path or known to lead nowhere.
// Two refinements:
//  - The set is kept compact: completed ops are numbered in invocation order, and the set
//    is stored as "all below m" plus the bits from m on (m: the first op not linearized).
//    Ops linearized beyond m were invoked before m's completion, so that tail is about as
//    long as the concurrency, whatever the length of the history.
//  - Unknown ops are optional, and linearizing fewer of them never closes a door: from
//    (ok ops S, unknown ops B, state) every continuation of (S, A, state) with A a superset
//    of B is also open (leave the extra ones out). So the cache keeps, per (S, state), the
//    unknown sets seen, and a configuration whose unknown set contains one of them is
//    pruned. The search tries the completed ops before the unknown ones at each point, so
//    the small unknown sets come first. Without this, every unknown op left pending would
//    double the configurations to visit.
//  - The state in a cache key forgets a value that no get left to linearize reads (see
//    CacheInsert): orders of writes that differ only in values nobody reads later meet.
class KeySearch {
 public:
  KeySearch(const std::vector<SearchOp>& ops, const Limits& limits) : ops_(ops), limits_(limits) {
    // Two doubly linked lists of events, in event order: the completed ops' invocations and
    // completions behind sentinel node kOkHead, the unknown ops' invocations behind
    // kUnknownHead. Kept apart so that unknown ops, which stay pending to the end, are not
    // walked past at every step.
    const std::vector<Event> events = SortedEvents(ops);
    nodes_.resize(events.size() + 2);
    std::vector<int> call_node(ops.size(), -1), return_node(ops.size(), -1);
    bit_.assign(ops.size(), -1);
    return_rank_.assign(ops.size(), -1);
    int ok_count = 0, return_count = 0, unknown_count = 0;
    int tail[2] = {kOkHead, kUnknownHead};
    for (size_t i = 0; i < events.size(); ++i) {
      const int id = static_cast<int>(i + 2);
      Node& n = nodes_[id];
      n.op = events[i].op;
      n.is_call = events[i].kind == 0;
      n.pos = static_cast<int>(i);
      int& t = tail[ops[n.op].unknown ? 1 : 0];
      n.prev = t;
      nodes_[t].next = id;
      t = id;
      (n.is_call ? call_node : return_node)[n.op] = id;
      if (!n.is_call) {
        return_rank_[n.op] = return_count++;
      } else {
        bit_[n.op] = ops[n.op].unknown ? unknown_count++ : ok_count++;
      }
    }
    for (size_t i = 0; i < ops.size(); ++i) nodes_[call_node[i]].match = return_node[i];
    read_index_.assign(ops.size(), -1);
    for (size_t i = 0; i < ops.size(); ++i) {
      const Operation& op = *ops[i].op;
      if (ops[i].unknown || op.type != OpType::kGet || op.result != OpResult::kOk) continue;
      auto [it, added] = value_index_.emplace(op.value, static_cast<int>(reads_left_.size()));
      if (added) reads_left_.push_back(0);
      read_index_[i] = it->second;
      ++reads_left_[it->second];
    }
    ok_bits_.assign((ok_count + 63) / 64 + 1, 0);
    return_bits_.assign(ok_bits_.size(), 0);
    unknown_words_ = (unknown_count + 63) / 64;
    unknown_bits_.assign(unknown_words_, 0);
    remaining_ok_ = ok_count;
  }

  SearchResult Run(bool record_best) {
    SearchResult res;
    State state;
    struct Frame {
      int call;  // node of the linearized op's invocation
      int due;   // for an unknown op: the completion that was due when it was tried
      State before;
    };
    std::vector<Frame> stack;
    int best_depth = -1;
    // Phase 1 walks the completed ops' list and tries each invocation up to the first
    // completion (the one now due); phase 2 then tries the unknown ops invoked before that
    // completion. Then the search backtracks.
    int cur = nodes_[kOkHead].next;
    int due = -1;  // in phase 2, the completion node found in phase 1; else -1
    int64_t steps = 0;
    while (remaining_ok_ > 0) {
      // A completion is still in the list, so phase 1 meets one before the end.
      ++steps;
      if ((steps & 4095) == 0 && OverBudget(steps, &res.exhausted_reason)) break;
      if (due == -1 && !nodes_[cur].is_call) {
        due = cur;
        cur = nodes_[kUnknownHead].next;
        continue;
      }
      if (due == -1 || (cur != -1 && nodes_[cur].pos < nodes_[due].pos)) {
        const Node& n = nodes_[cur];
        State next = state;
        if (Step(ops_[n.op], &next)) {
          SetBit(n.op);
          if (CacheInsert(next)) {
            stack.push_back({cur, due, state});
            state = next;
            Lift(cur);
            cur = nodes_[kOkHead].next;
            due = -1;
            continue;
          }
          ClearBit(n.op);
        }
        cur = n.next;
        continue;
      }
      // Nothing can come before the completion `due`, whose op is not linearized: backtrack.
      const Node& d = nodes_[due];
      if (record_best && static_cast<int>(stack.size()) > best_depth) {
        best_depth = static_cast<int>(stack.size());
        res.best_order.clear();
        res.best_states.clear();
        for (size_t i = 0; i < stack.size(); ++i) {
          res.best_order.push_back(nodes_[stack[i].call].op);
          res.best_states.push_back(i + 1 < stack.size() ? stack[i + 1].before : state);
        }
        res.blocking = d.op;
        res.candidates = Candidates(due);
      }
      if (stack.empty()) {
        res.outcome = SearchResult::kViolation;
        if (!record_best) {
          res.blocking = d.op;
          res.candidates = Candidates(due);
        }
        break;
      }
      const Frame f = stack.back();
      stack.pop_back();
      ClearBit(nodes_[f.call].op);
      state = f.before;
      Unlift(f.call);
      cur = nodes_[f.call].next;
      due = f.due;
    }
    if (!res.exhausted_reason.empty()) res.outcome = SearchResult::kExhausted;
    res.steps = steps;
    res.cache_entries = cache_unknown_sets_;
    res.most_completions_covered = most_returns_covered_;
    return res;
  }

 private:
  static constexpr int kOkHead = 0;
  static constexpr int kUnknownHead = 1;
  struct Node {
    int op = -1;
    bool is_call = false;
    int pos = -1;    // place in event order
    int match = -1;  // invocation: its completion's node, -1 if unknown
    int prev = -1;
    int next = -1;
  };
  // One (compact set of completed ops, state) and the unknown sets seen with it.
  struct CacheEntry {
    uint64_t hash;
    size_t offset;  // into key_pool_
    uint32_t length;
    std::vector<uint64_t> unknown_sets;  // unknown_words_ words each
  };
  struct CacheHash {
    const KeySearch* s;
    size_t operator()(uint32_t i) const { return s->entries_[i].hash; }
  };
  struct CacheEq {
    const KeySearch* s;
    bool operator()(uint32_t a, uint32_t b) const {
      const CacheEntry& x = s->entries_[a];
      const CacheEntry& y = s->entries_[b];
      return x.hash == y.hash && x.length == y.length &&
             std::equal(s->key_pool_.begin() + x.offset, s->key_pool_.begin() + x.offset + x.length,
                        s->key_pool_.begin() + y.offset);
    }
  };

  bool OverBudget(int64_t steps, std::string* reason) const {
    if (limits_.max_steps > 0 && steps > limits_.max_steps) {
      *reason = "more than " + std::to_string(limits_.max_steps) + " search steps";
    } else if (limits_.max_cache_bytes > 0 && CacheBytes() > limits_.max_cache_bytes) {
      *reason = "search cache over " + std::to_string(limits_.max_cache_bytes >> 20) + " MiB";
    } else if (limits_.deadline && Clock::now() > *limits_.deadline) {
      *reason = "time limit reached";
    }
    return !reason->empty();
  }

  void SetBit(int op) {
    const int b = bit_[op];
    if (ops_[op].unknown) {
      unknown_bits_[b >> 6] |= uint64_t{1} << (b & 63);
      return;
    }
    ok_bits_[b >> 6] |= uint64_t{1} << (b & 63);
    --remaining_ok_;
    if (read_index_[op] >= 0) --reads_left_[read_index_[op]];
    ++ok_set_;
    while (ok_bits_[low_ >> 6] >> (low_ & 63) & 1) ++low_;  // the sentinel word ends it
    const int r = return_rank_[op];
    return_bits_[r >> 6] |= uint64_t{1} << (r & 63);
    while (return_bits_[returns_covered_ >> 6] >> (returns_covered_ & 63) & 1) {
      ++returns_covered_;
    }
    most_returns_covered_ = std::max(most_returns_covered_, returns_covered_);
  }
  void ClearBit(int op) {
    const int b = bit_[op];
    if (ops_[op].unknown) {
      unknown_bits_[b >> 6] &= ~(uint64_t{1} << (b & 63));
      return;
    }
    ok_bits_[b >> 6] &= ~(uint64_t{1} << (b & 63));
    ++remaining_ok_;
    if (read_index_[op] >= 0) ++reads_left_[read_index_[op]];
    --ok_set_;
    low_ = std::min(low_, b);
    const int r = return_rank_[op];
    return_bits_[r >> 6] &= ~(uint64_t{1} << (r & 63));
    returns_covered_ = std::min(returns_covered_, r);
  }

  // Adds the current configuration, with model state `state`, to the cache; false if it or
  // one that dominates it was there already.
  bool CacheInsert(const State& state) {
    // The key: low_, the state, the set bits from low_ on. A value that no get still to be
    // linearized reads is as good as any other such value: the ops left cannot tell them
    // apart, so they share one key ("present, value unobserved").
    const size_t offset = key_pool_.size();
    key_pool_.push_back(static_cast<uint64_t>(low_));
    if (!state.present) {
      key_pool_.push_back(0);
      key_pool_.push_back(0);
    } else {
      auto it = value_index_.find(state.value);
      const bool observed = it != value_index_.end() && reads_left_[it->second] > 0;
      key_pool_.push_back(observed ? 1 : 2);
      key_pool_.push_back(observed ? static_cast<uint64_t>(state.value) : 0);
    }
    int64_t left = ok_set_ - low_;  // every op below low_ is in the set
    for (size_t w = low_ >> 6; left > 0; ++w) {
      uint64_t word = ok_bits_[w];
      if (w == static_cast<size_t>(low_ >> 6)) word &= ~uint64_t{0} << (low_ & 63);
      key_pool_.push_back(word);
      left -= __builtin_popcountll(word);
    }
    uint64_t hash = 0;
    for (size_t i = offset; i < key_pool_.size(); ++i) hash = Mix64(hash ^ key_pool_[i]);
    entries_.push_back({hash, offset, static_cast<uint32_t>(key_pool_.size() - offset), {}});
    auto [it, inserted] = cache_.insert(static_cast<uint32_t>(entries_.size() - 1));
    if (!inserted) {
      entries_.pop_back();
      key_pool_.resize(offset);
    }
    CacheEntry& e = entries_[*it];
    if (unknown_words_ == 0) {
      cache_unknown_sets_ += inserted ? 1 : 0;
      return inserted;
    }
    std::vector<uint64_t>& sets = e.unknown_sets;
    const size_t uw = unknown_words_;
    for (size_t s = 0; s < sets.size(); s += uw) {
      bool subset = true;  // sets[s..] is a subset of the current unknown set
      for (size_t w = 0; w < uw && subset; ++w) subset = (sets[s + w] & ~unknown_bits_[w]) == 0;
      if (subset) return false;
    }
    // Drop the sets the new one is a subset of: it dominates them.
    size_t kept = 0;
    for (size_t s = 0; s < sets.size(); s += uw) {
      bool superset = true;
      for (size_t w = 0; w < uw && superset; ++w) {
        superset = (unknown_bits_[w] & ~sets[s + w]) == 0;
      }
      if (!superset) {
        std::copy(sets.begin() + s, sets.begin() + s + uw, sets.begin() + kept);
        kept += uw;
      } else {
        --cache_unknown_sets_;
      }
    }
    sets.resize(kept);
    sets.insert(sets.end(), unknown_bits_.begin(), unknown_bits_.end());
    ++cache_unknown_sets_;
    unknown_set_words_ += uw;
    return true;
  }

  int64_t CacheBytes() const {
    return static_cast<int64_t>(key_pool_.capacity() * sizeof(uint64_t) +
                                entries_.capacity() * sizeof(CacheEntry) +
                                unknown_set_words_ * sizeof(uint64_t) + cache_.size() * 24 +
                                cache_.bucket_count() * sizeof(void*));
  }

  void Unlink(int i) {
    nodes_[nodes_[i].prev].next = nodes_[i].next;
    if (nodes_[i].next != -1) nodes_[nodes_[i].next].prev = nodes_[i].prev;
  }
  void Relink(int i) {
    nodes_[nodes_[i].prev].next = i;
    if (nodes_[i].next != -1) nodes_[nodes_[i].next].prev = i;
  }
  // Takes an invocation and its completion out of the list; Unlift puts them back (in the
  // reverse order, so the neighbours' links are as they were).
  void Lift(int call) {
    Unlink(call);
    if (nodes_[call].match != -1) Unlink(nodes_[call].match);
  }
  void Unlift(int call) {
    if (nodes_[call].match != -1) Relink(nodes_[call].match);
    Relink(call);
  }

  // The ops invoked before node `ret` that are still in the list.
  std::vector<int> Candidates(int ret) const {
    std::vector<int> out;
    for (int i = nodes_[kOkHead].next; i != ret && i != -1; i = nodes_[i].next) {
      if (nodes_[i].is_call) out.push_back(nodes_[i].op);
    }
    for (int i = nodes_[kUnknownHead].next; i != -1 && nodes_[i].pos < nodes_[ret].pos;
         i = nodes_[i].next) {
      out.push_back(nodes_[i].op);
    }
    return out;
  }

  const std::vector<SearchOp>& ops_;
  const Limits limits_;
  std::vector<Node> nodes_;
  // Each op's bit: completed ops numbered by invocation, unknown ones apart.
  std::vector<int> bit_;
  std::vector<uint64_t> ok_bits_;  // one spare zero word ends the scan for low_
  std::vector<uint64_t> unknown_bits_;
  size_t unknown_words_ = 0;
  int low_ = 0;  // the first completed op not linearized
  // Values read by successful gets: how many of those gets are not linearized yet.
  std::unordered_map<int64_t, int> value_index_;  // value -> index into reads_left_
  std::vector<int> reads_left_;
  std::vector<int> read_index_;  // per op: its value's index if it is such a get, else -1
  // Completed ops numbered by completion: the same set again, to track the longest run of
  // first completions linearized, now and at most.
  std::vector<int> return_rank_;
  std::vector<uint64_t> return_bits_;
  int returns_covered_ = 0;
  int most_returns_covered_ = 0;
  int64_t ok_set_ = 0;  // completed ops linearized
  int64_t remaining_ok_ = 0;
  std::vector<uint64_t> key_pool_;
  std::vector<CacheEntry> entries_;
  std::unordered_set<uint32_t, CacheHash, CacheEq> cache_{1024, CacheHash{this}, CacheEq{this}};
  int64_t cache_unknown_sets_ = 0;  // configurations held
  int64_t unknown_set_words_ = 0;
};

SearchResult Search(const std::vector<SearchOp>& ops, const Limits& limits, bool record_best) {
  KeySearch search(ops, limits);
  return search.Run(record_best);
}

// The prefix of `ops` cut just after the completion event at `cut` (an index into
// SortedEvents(ops)): ops invoked later are left out, ops still running at the cut become
// unknown (gets among them are dropped).
std::vector<SearchOp> Prefix(const std::vector<SearchOp>& ops, const std::vector<Event>& events,
                             size_t cut) {
  std::vector<int> call_pos(ops.size(), -1), ret_pos(ops.size(), -1);
  for (size_t i = 0; i < events.size(); ++i) {
    (events[i].kind == 0 ? call_pos : ret_pos)[events[i].op] = static_cast<int>(i);
  }
  std::vector<SearchOp> out;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (call_pos[i] > static_cast<int>(cut)) continue;
    SearchOp o = ops[i];
    if (ret_pos[i] == -1 || ret_pos[i] > static_cast<int>(cut)) {
      if (o.op->type == OpType::kGet) continue;
      o.unknown = true;
      o.end = kInfiniteTime;
    }
    out.push_back(o);
  }
  return out;
}

// The op whose completion ends `prefix`: the last completion in its event order.
int LastCompletion(const std::vector<SearchOp>& prefix) {
  const std::vector<Event> events = SortedEvents(prefix);
  for (auto it = events.rbegin(); it != events.rend(); ++it) {
    if (it->kind == 1) return it->op;
  }
  return 0;
}

void AppendOps(const std::vector<SearchOp>& ops, const std::vector<int>& which, int limit,
               std::string* out, std::vector<size_t>* involved) {
  const int skip = std::max<int>(0, static_cast<int>(which.size()) - limit);
  if (skip > 0) *out += "    ... " + std::to_string(skip) + " more before these\n";
  for (size_t i = skip; i < which.size(); ++i) {
    *out += "    " + FormatOperation(*ops[which[i]].op) + "\n";
    if (involved) involved->push_back(ops[which[i]].input_index);
  }
}

// The explanation of a violation found by the search `full` on all of `ops`.
void Explain(const std::vector<SearchOp>& ops, const SearchResult& full, const Limits& limits,
             const CheckOptions& options, KeyReport* report) {
  const int limit = std::max(1, options.max_explanation_ops);
  std::string& out = report->explanation;
  out = "key " + std::to_string(report->key) + " is not linearizable.\n";
  std::vector<SearchOp> prefix;
  SearchResult detail;
  bool minimized = false;
  if (options.minimize_violation) {
    const std::vector<Event> events = SortedEvents(ops);
    std::vector<size_t> cuts;
    for (size_t i = 0; i < events.size(); ++i) {
      if (events[i].kind == 1) cuts.push_back(i);
    }
    if (static_cast<size_t>(full.most_completions_covered) < cuts.size()) {
      prefix = Prefix(ops, events, cuts[full.most_completions_covered]);
      detail = Search(prefix, limits, true);
      minimized = detail.outcome == SearchResult::kViolation;
    }
  }
  if (minimized) {
    const int last = LastCompletion(prefix);
    out += "The smallest failing prefix of its history ends at the completion of\n    " +
           FormatOperation(*prefix[last].op) + "\n";
    report->involved.push_back(prefix[last].input_index);
    out += "(" + std::to_string(prefix.size()) +
           " operations, those still running then taken as unknown: not linearizable; cut "
           "just before that completion they are).\n";
    const std::vector<int>& order = detail.best_order;
    out += "Longest partial linearization found: " + std::to_string(order.size()) + " operation(s)";
    const State end_state = order.empty() ? State{} : detail.best_states.back();
    out += ", after which the key " + StateString(end_state) + ":\n";
    const int skip = std::max<int>(0, static_cast<int>(order.size()) - limit);
    if (skip > 0) out += "    ... " + std::to_string(skip) + " earlier\n";
    for (size_t i = skip; i < order.size(); ++i) {
      out += "    " + FormatOperation(*prefix[order[i]].op) + "   => key " +
             StateString(detail.best_states[i]) + "\n";
      report->involved.push_back(prefix[order[i]].input_index);
    }
    out += "None of these can come next (the completion of the first one is due):\n";
    std::vector<int> next = detail.candidates;
    auto b = std::find(next.begin(), next.end(), detail.blocking);
    if (b != next.end()) std::rotate(next.begin(), b, b + 1);
    for (int c : next) {
      const std::string why = WhyNot(prefix[c], end_state);
      out += "    " + FormatOperation(*prefix[c].op) + "   [" +
             (why.empty() ? "possible here, but no linearization continues after it"
                          : "impossible: " + why) +
             "]\n";
      report->involved.push_back(prefix[c].input_index);
    }
    if (static_cast<int>(prefix.size()) <= limit) {
      out += "The whole failing prefix, by invocation:\n";
      std::vector<int> all(prefix.size());
      for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
      std::stable_sort(all.begin(), all.end(),
                       [&](int a, int c) { return prefix[a].start < prefix[c].start; });
      AppendOps(prefix, all, limit, &out, nullptr);
    }
  } else {
    out += "No linearization gets past the completion of\n    " +
           FormatOperation(*ops[full.blocking].op) + "\n";
    report->involved.push_back(ops[full.blocking].input_index);
    out += "Operations invoked before it and not linearizable ahead of it:\n";
    std::vector<int> rest;
    for (int c : full.candidates) {
      if (c != full.blocking) rest.push_back(c);
    }
    AppendOps(ops, rest, limit, &out, &report->involved);
  }
  // Drop repeats, keeping the first mention.
  std::vector<size_t> seen;
  for (size_t i : report->involved) {
    if (std::find(seen.begin(), seen.end(), i) == seen.end()) seen.push_back(i);
  }
  report->involved = std::move(seen);
}

}  // namespace

std::string CheckResult::Summary() const {
  std::string out = std::string(VerdictName(verdict)) + ": " + std::to_string(total_ops) +
                    " operations on " + std::to_string(keys.size()) + " keys\n";
  for (size_t i : violations) out += keys[i].explanation;
  for (size_t i : undecided) {
    out += "key " + std::to_string(keys[i].key) + " undecided: " + keys[i].explanation + "\n";
  }
  return out;
}

Result<CheckResult> CheckHistory(const History& history, const CheckOptions& options) {
  const Clock::time_point begin = Clock::now();
  Limits limits;
  limits.max_steps = options.max_steps_per_key;
  limits.max_cache_bytes = options.max_cache_bytes_per_key;
  if (options.time_limit_ms > 0) {
    limits.deadline = begin + std::chrono::milliseconds(options.time_limit_ms);
  }

  std::map<int64_t, std::vector<size_t>> by_key;
  for (size_t i = 0; i < history.size(); ++i) {
    Status s = ValidateOperation(history[i]);
    if (!s.ok()) {
      const int64_t where = history[i].line > 0 ? history[i].line : static_cast<int64_t>(i + 1);
      return s.CloneAndPrepend("operation " + std::to_string(where));
    }
    by_key[history[i].key].push_back(i);
  }

  CheckResult result;
  result.total_ops = static_cast<int64_t>(history.size());
  for (const auto& [key, indexes] : by_key) {
    const Clock::time_point key_begin = Clock::now();
    KeyReport report;
    report.key = key;
    report.ops = static_cast<int64_t>(indexes.size());
    std::vector<SearchOp> ops;
    for (size_t i : indexes) {
      const Operation& op = history[i];
      if (op.result == OpResult::kFailed) continue;
      const bool unknown = op.result == OpResult::kUnknown;
      if (unknown && op.type == OpType::kGet) continue;
      ops.push_back({&op, i, unknown, op.start_ns, unknown ? kInfiniteTime : op.end_ns});
      report.unknown_ops += unknown ? 1 : 0;
    }
    report.checked_ops = static_cast<int64_t>(ops.size());
    int in_flight = 0;
    for (const Event& e : SortedEvents(ops)) {
      in_flight += e.kind == 0 ? 1 : -1;
      report.max_concurrency = std::max(report.max_concurrency, in_flight);
    }

    const SearchResult r = Search(ops, limits, false);
    report.steps = r.steps;
    report.cache_entries = r.cache_entries;
    switch (r.outcome) {
      case SearchResult::kLinearizable:
        report.verdict = Verdict::kLinearizable;
        break;
      case SearchResult::kExhausted:
        report.verdict = Verdict::kUnknown;
        report.explanation = r.exhausted_reason;
        break;
      case SearchResult::kViolation:
        report.verdict = Verdict::kNotLinearizable;
        Explain(ops, r, limits, options, &report);
        break;
    }
    report.seconds = std::chrono::duration<double>(Clock::now() - key_begin).count();
    if (report.verdict == Verdict::kNotLinearizable)
      result.violations.push_back(result.keys.size());
    if (report.verdict == Verdict::kUnknown) result.undecided.push_back(result.keys.size());
    result.keys.push_back(std::move(report));
  }
  if (!result.violations.empty()) {
    result.verdict = Verdict::kNotLinearizable;
  } else if (!result.undecided.empty()) {
    result.verdict = Verdict::kUnknown;
  }
  return result;
}

}  // namespace lin
}  // namespace nyala
