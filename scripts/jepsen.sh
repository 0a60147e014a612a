#!/usr/bin/env bash
# The long soak of the Jepsen-style test of replicated tablets; see usage() below.
# Not part of CI (CI runs the test once, for about a minute).
set -euo pipefail
usage() {
  cat <<'USAGE'
Usage: scripts/jepsen.sh [--minutes N] [--runs R] [--threads T] [--keys K]
                         [--follower-reads] [--help]

Runs the Jepsen-style test of replicated tablets (test/jepsen-itest.cc) for longer
than CI does: a master and four tablet servers on loopback (tablets of three
replicas), client threads running random gets, upserts, inserts and deletes on a few
keys, and a nemesis that kills and restarts, pauses (SIGSTOP/SIGCONT) and partitions
tablet servers, changes a tablet's membership, and has the master move replicas the
whole time. The recorded history must be linearizable (test/linearizability.h).

  --minutes N   length of each run, cluster start-up and check included (default 10)
  --runs R      runs one after the other, each with a new random seed (default 1)
  --threads T   client threads (default: the test's, 6)
  --keys K      keys the clients work on (default: the test's, 12)
  --follower-reads
                run the planted bug instead: Gets answered by any replica
                (ReplicaSelection::kClosestReplica, not linearizable); the run
                passes when the checker finds violations

Each run prints the test's summary (operations by kind and outcome, nemesis events,
the checker's statistics and verdict). Histories are kept in the output directory
as history-<run>.jsonl, with the test's output as run-<run>.log; check one again
with build/bin/linearizability-check. A failed run also keeps its test directory
(daemon logs, nemesis timeline), named in its log. Exits non-zero if any run failed.

Builds build/bin/jepsen-itest and the daemons first if the test is missing (cmake).

Environment:
  BUILD_DIR        build directory (default: build)
  JEPSEN_OUT       output directory (default: a new one under $TMPDIR)
  NYALA_TEST_SEED  seed of the first run (later runs add 1 each); default: random
USAGE
}

MINUTES=10
RUNS=1
EXTRA=()
FILTER='JepsenITest.ReplicatedTabletsAreLinearizable'
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --minutes) MINUTES=${2:?--minutes needs a number}; shift 2 ;;
    --runs) RUNS=${2:?--runs needs a number}; shift 2 ;;
    --threads) EXTRA+=("--jepsen_threads=${2:?--threads needs a number}"); shift 2 ;;
    --keys) EXTRA+=("--jepsen_keys=${2:?--keys needs a number}"); shift 2 ;;
    --follower-reads)
      FILTER='JepsenITest.DISABLED_FollowerReadsAreCaught'
      EXTRA+=(--gtest_also_run_disabled_tests)
      shift ;;
    *) echo "jepsen: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
for v in "$MINUTES" "$RUNS"; do
  [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "jepsen: not a positive number: $v" >&2; exit 2; }
done

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
BIN="$BUILD_DIR/bin/jepsen-itest"
if [ ! -x "$BIN" ]; then
  echo "jepsen: building $BIN"
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD_DIR" --target jepsen-itest -j2 >/dev/null
fi

OUT=${JEPSEN_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/jepsen-XXXXXX")}
mkdir -p "$OUT"
SEED=${NYALA_TEST_SEED:-$(( (RANDOM << 15) | RANDOM ))}
echo "jepsen: $RUNS run(s) of $MINUTES minute(s); output in $OUT"
failed=0
for ((run = 1; run <= RUNS; run++)); do
  seed=$((SEED + run - 1))
  log="$OUT/run-$run.log"
  echo "jepsen: run $run (NYALA_TEST_SEED=$seed)"
  status=0
  NYALA_TEST_SEED=$seed "$BIN" --gtest_filter="$FILTER" --jepsen_seconds=$((MINUTES * 60)) \
    --jepsen_history_out="$OUT/history-$run.jsonl" ${EXTRA[@]+"${EXTRA[@]}"} >"$log" 2>&1 ||
    status=$?
  # The test's summary block, then its verdict.
  sed -n '/^=== jepsen summary/,/^=== end of jepsen summary/p' "$log"
  grep -E '^history: |^\[  (PASSED|FAILED)  \]' "$log" || true
  if [ "$status" -ne 0 ]; then
    failed=$((failed + 1))
    echo "jepsen: run $run FAILED (exit $status); see $log"
    grep -E 'Failure|^test dir: ' "$log" | head -n 20 || true
  fi
done
if [ "$failed" -gt 0 ]; then
  echo "jepsen: $failed of $RUNS run(s) failed"
  exit 1
fi
echo "jepsen: all $RUNS run(s) passed"
