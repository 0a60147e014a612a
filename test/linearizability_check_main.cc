// linearizability-check: checks a recorded key-value history (JSON Lines, format in
// test/linearizability.h) for linearizability.
//
//   linearizability-check [flags] HISTORY.jsonl     ("-" reads standard input)
//
// Prints one line of statistics per key, then the verdict. Exit status: 0 linearizable,
// 1 not linearizable (the violation is printed), 2 undecided (search budget exhausted),
// 3 bad usage or unreadable/malformed input.
#include <gflags/gflags.h>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "test/linearizability.h"

DEFINE_int64(max_steps_per_key, 50'000'000,
             "Search steps allowed per key before the key is reported undecided (0: no limit)");
DEFINE_int64(max_cache_mb_per_key, 1024,
             "Memory the search cache may use per key, in MiB, before the key is reported "
             "undecided (0: no limit)");
DEFINE_int64(time_limit_ms, 0,
             "Wall-clock limit for the whole check in milliseconds (0: no limit)");
DEFINE_bool(minimize, true,
            "Explain a violation with the smallest failing prefix of the key's history (a few "
            "more searches of that key)");
DEFINE_int32(max_explanation_ops, 40, "Operations listed at most in each part of an explanation");

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "linearizability-check [flags] HISTORY.jsonl (or - for stdin)\n"
      "Exit status: 0 linearizable, 1 not linearizable, 2 undecided (budget exhausted), "
      "3 usage or input error.");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (argc != 2) {
    std::cerr << gflags::ProgramUsage() << "\n";
    return 3;
  }
  const std::string path = argv[1];
  nyala::lin::History history;
  nyala::Status s;
  if (path == "-") {
    s = nyala::lin::ParseHistory(std::cin, &history);
  } else {
    std::ifstream in(path);
    if (!in) {
      std::cerr << path << ": cannot open\n";
      return 3;
    }
    s = nyala::lin::ParseHistory(in, &history);
  }
  if (!s.ok()) {
    std::cerr << path << ": " << s.ToString() << "\n";
    return 3;
  }

  nyala::lin::CheckOptions options;
  options.max_steps_per_key = FLAGS_max_steps_per_key;
  options.max_cache_bytes_per_key = FLAGS_max_cache_mb_per_key << 20;
  options.time_limit_ms = FLAGS_time_limit_ms;
  options.minimize_violation = FLAGS_minimize;
  options.max_explanation_ops = FLAGS_max_explanation_ops;
  nyala::Result<nyala::lin::CheckResult> result = nyala::lin::CheckHistory(history, options);
  if (!result.ok()) {
    std::cerr << path << ": " << result.status().ToString() << "\n";
    return 3;
  }

  std::printf("%20s %8s %8s %8s %6s %12s %10s %9s  %s\n", "key", "ops", "checked", "unknown",
              "conc", "steps", "cache", "ms", "verdict");
  for (const nyala::lin::KeyReport& k : result->keys) {
    std::printf("%20lld %8lld %8lld %8lld %6d %12lld %10lld %9.1f  %s\n",
                static_cast<long long>(k.key), static_cast<long long>(k.ops),
                static_cast<long long>(k.checked_ops), static_cast<long long>(k.unknown_ops),
                k.max_concurrency, static_cast<long long>(k.steps),
                static_cast<long long>(k.cache_entries), k.seconds * 1e3,
                nyala::lin::VerdictName(k.verdict));
  }
  std::fflush(stdout);
  std::cout << "\n" << result->Summary();
  switch (result->verdict) {
    case nyala::lin::Verdict::kLinearizable:
      return 0;
    case nyala::lin::Verdict::kNotLinearizable:
      return 1;
    case nyala::lin::Verdict::kUnknown:
      return 2;
  }
  return 3;
}
