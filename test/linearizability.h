// A linearizability checker for histories of a key-value view of a table (int64 primary
// key -> int64 column), for Jepsen-style tests of replicated tablets: clients record every
// operation they issue with its invocation and completion times, and CheckHistory() decides
// whether some sequential order of the operations, each placed at one instant between its
// invocation and its completion, explains every result.
//
// Model (per key; every key starts absent):
//   get(k)       ok: the key held `value`           absent: the key was absent
//   upsert(k,v)  ok: the key now holds v
//   insert(k,v)  ok: the key was absent, now holds v     already_present: the key was present
//   delete(k)    ok: the key was present, now absent     not_found: the key was absent
// Outcomes other than the results above:
//   failed   definitely not applied (refused before it was sent): dropped from the history.
//   unknown  timed out or lost: may have taken effect at any time after its invocation, or
//            never. Checked as an operation that completes at +infinity and whose result
//            constrains nothing: an unknown upsert sets the value, an unknown insert sets it
//            only if the key is absent, an unknown delete removes the key if present. "Never
//            applied" is the same as "applied after everything else", which is always legal
//            for these, so the search never has to place them. An unknown get constrains
//            nothing at all and is dropped.
//
// Algorithm. Keys are independent (a history is linearizable iff each key's sub-history is:
// locality, Herlihy & Wing 1990), so each key is checked on its own. Per key: the depth-first
// search of Wing & Gong (1993) over the list of invocation and completion events, with
// Lowe's (2017) cache of visited configurations (set of linearized operations as a bitset,
// model state) to prune; the same search Knossos and porcupine use. Three refinements of our
// own, all exact (details in linearizability.cc): the set is stored compactly (ops below the
// first unlinearized one are implied), a configuration is pruned when one with the same
// completed ops and state but a subset of its unknown ops was seen (leaving an unknown op
// out never closes a door), and the cached state forgets a value no remaining get reads.
// Events at equal times
// order invocations before completions, i.e. operations whose intervals touch are taken as
// concurrent (a monotonic clock in nanoseconds cannot order them), so ties never cause a
// false violation.
//
// For a violation, the explanation names the smallest prefix of the key's history (cut just
// after some completion, operations still running at the cut treated as unknown) that cannot
// be linearized, the operation whose completion ends it, and the longest partial
// linearization the search found in it with the operations none of which could come next.
// The search of the whole history already yields that prefix: it is cut after the first
// completion that no visited configuration had covered along with all earlier ones.
//
// Cost: passing a history is near linear (20,000 ops, 10 keys, 8 clients: ~10 ms). Refuting
// one visits every reachable configuration up to the bad operation, about 2^(ops in flight)
// per operation at worst: ~0.3 s for 5,000 ops on one key with 8 clients, more with many
// unknown ops left pending on one key. Past the budget in CheckOptions the verdict for the
// key is "unknown", never a guess.
//
// History file format (JSON Lines, read by ParseHistory and linearizability-check): one
// operation per line, one JSON object each; blank lines are skipped.
//   {"client": 3, "op": "upsert", "key": 17, "value": 5, "result": "ok",
//    "start_ns": 1200, "end_ns": 1950}
//   client    integer, required: the process that issued the operation (display only).
//   op        "get" | "upsert" | "insert" | "delete", required.
//   key       integer, required.
//   value     integer: required for upsert and insert (the value written) and for a get whose
//             result is "ok" (the value read); not allowed for delete or a get with another
//             result.
//   result    required; "ok" | "unknown" | "failed" for every op, plus "absent" (get),
//             "already_present" (insert), "not_found" (delete).
//   start_ns  integer, required: invocation time from a monotonic clock.
//   end_ns    integer >= start_ns: required unless the result is "unknown" or "failed" (then
//             optional and ignored by the check, shown in explanations).
//   error     string, optional: the client's error text (shown in explanations).
// Any other field is an error, so that a misspelt field is not silently ignored. All
// integers must fit in int64.
//
// Thread-safety: the functions are pure; distinct histories may be checked concurrently.
#pragma once

#include <cstdint>
#include <istream>
#include <limits>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/status.h"

namespace nyala {
namespace lin {

enum class OpType { kGet, kUpsert, kInsert, kDelete };

enum class OpResult {
  kOk,              // every op; a get's value is in Operation::value
  kAbsent,          // get only
  kAlreadyPresent,  // insert only
  kNotFound,        // delete only
  kUnknown,         // every op: may or may not have taken effect
  kFailed,          // every op: definitely not applied
};

// Completion time of an operation whose outcome is unknown, as the check treats it.
constexpr int64_t kInfiniteTime = std::numeric_limits<int64_t>::max();

struct Operation {
  int64_t client = 0;
  OpType type = OpType::kGet;
  int64_t key = 0;
  // upsert/insert: the value written. get with result kOk: the value read. Else unused.
  int64_t value = 0;
  OpResult result = OpResult::kOk;
  int64_t start_ns = 0;
  // Ignored when the result is kUnknown or kFailed (may be anything, kInfiniteTime included).
  int64_t end_ns = 0;
  // Where the operation came from, for explanations: the 1-based line of a history file, or
  // its 1-based position in the vector given to CheckHistory when 0.
  int64_t line = 0;
  std::string error;  // optional client error text, display only
};

using History = std::vector<Operation>;

const char* OpTypeName(OpType type);        // "get", "upsert"...
const char* OpResultName(OpResult result);  // "ok", "absent", "already_present"...

// OK if `op` is well formed: its result is one its type can have, and a completed op does not
// end before it starts.
Status ValidateOperation(const Operation& op);

// One line for people: "client 3  upsert(17, 5) -> ok  [1200, 1950] (line 12)"; an unknown
// op's end shows as "?".
std::string FormatOperation(const Operation& op);

// The op as one JSON Lines line (no newline), in the format above; `line` is not written.
std::string OperationToJson(const Operation& op);
// One operation from one JSON line. Errors are InvalidArgument and say what is wrong.
Result<Operation> ParseOperationJson(std::string_view json_line);
// A whole JSON Lines history. Stops at the first bad line with InvalidArgument
// "line N: <what is wrong>". Each op's `line` is set to its line number.
Status ParseHistory(std::istream& in, History* history);
// Writes `history` as JSON Lines, one op a line.
void WriteHistory(const History& history, std::ostream& out);

struct CheckOptions {
  // Search steps (one per event visited) allowed for one key's search, 0 for no limit. Past
  // it the key's verdict is kUnknown. A linearizable history takes a few steps per op; a
  // violation can take far more. 50M steps is roughly 5-10 s.
  int64_t max_steps_per_key = 50'000'000;
  // Memory the search cache may hold for one key, in bytes (an entry is ~70 bytes plus the
  // ops in flight / 8); past it the key's verdict is kUnknown. 0 for no limit.
  int64_t max_cache_bytes_per_key = int64_t{1} << 30;
  // Wall-clock limit for the whole check in milliseconds, 0 for none. Keys not finished
  // when it passes are kUnknown.
  int64_t time_limit_ms = 0;
  // Build the detailed explanation of a violation: the smallest failing prefix (known from
  // the search itself) searched once more to find its longest partial linearization. Off:
  // only the ops involved where the search of the whole key's history gave up.
  bool minimize_violation = true;
  // At most this many operations are listed in each part of an explanation.
  int max_explanation_ops = 40;
};

enum class Verdict {
  kLinearizable,
  kNotLinearizable,
  kUnknown,  // search budget (steps, cache memory or time) exhausted before an answer
};
const char* VerdictName(Verdict v);  // "linearizable", "not linearizable", "unknown"

struct KeyReport {
  int64_t key = 0;
  Verdict verdict = Verdict::kLinearizable;
  int64_t ops = 0;          // operations on the key in the input, failed ones included
  int64_t checked_ops = 0;  // operations the search saw (failed ops and unknown gets dropped)
  int64_t unknown_ops = 0;  // of checked_ops, those with an unknown outcome
  int max_concurrency = 0;  // most operations in flight at once (unknown ones never end)
  int64_t steps = 0;        // search steps, the explanation's searches not included
  int64_t cache_entries = 0;
  double seconds = 0;  // wall time of the key's check, explanation included
  // For kNotLinearizable: readable explanation, several lines. For kUnknown: which budget
  // ran out.
  std::string explanation;
  // For kNotLinearizable: indexes into the history given to CheckHistory of the operations
  // the explanation lists as involved (the op ending the smallest failing prefix first).
  std::vector<size_t> involved;
};

struct CheckResult {
  // kNotLinearizable if any key is; else kUnknown if any key is; else kLinearizable.
  Verdict verdict = Verdict::kLinearizable;
  int64_t total_ops = 0;
  std::vector<KeyReport> keys;  // by key, ascending
  // The keys that are not linearizable, then those left unknown (indexes into `keys`).
  std::vector<size_t> violations;
  std::vector<size_t> undecided;

  // The verdict and, for each violation or undecided key, its explanation.
  std::string Summary() const;
};

// Checks `history` (ops in any order). InvalidArgument if an op fails ValidateOperation.
Result<CheckResult> CheckHistory(const History& history, const CheckOptions& options = {});

}  // namespace lin
}  // namespace nyala
