#!/usr/bin/env bash
# The long soak of the Raft simulator; see usage() below. Not part of CI.
set -euo pipefail
usage() {
  cat <<'USAGE'
Usage: scripts/raft-soak.sh [--seeds N] [--first-seed F] [--jobs J] [--help]

Runs the Raft simulator's random schedules (RaftSim.RandomSchedules in
src/consensus/raft_sim-test.cc) over many more seeds than the test suite's 10,000:
N seeds from F on (default 1,000,000 from 1), split into chunks of 10,000 run J at
a time (default 2). Prints a line per chunk as it finishes and, for a failing seed,
the simulator's report with the command that replays it. Exits non-zero if any
schedule failed. At about 25 s per 10,000 seeds and core on the 2-vCPU development
VM, the default takes about 20 minutes.

Builds build/bin/raft_sim-test first if it is missing (cmake and ninja).

Environment:
  BUILD_DIR   build directory (default: build)
USAGE
}

SEEDS=1000000
FIRST=1
JOBS=2
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --seeds) SEEDS=${2:?--seeds needs a number}; shift 2 ;;
    --first-seed) FIRST=${2:?--first-seed needs a number}; shift 2 ;;
    --jobs) JOBS=${2:?--jobs needs a number}; shift 2 ;;
    *) echo "raft-soak: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
for v in "$SEEDS" "$FIRST" "$JOBS"; do
  [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "raft-soak: not a positive number: $v" >&2; exit 2; }
done

cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
BIN="$BUILD_DIR/bin/raft_sim-test"
if [ ! -x "$BIN" ]; then
  echo "raft-soak: building $BIN"
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD_DIR" --target raft_sim-test -j2 >/dev/null
fi

OUT=$(mktemp -d "${TMPDIR:-/tmp}/raft-soak-XXXXXX")
CHUNK=10000
start=$(date +%s)
failed=0
pids=()
firsts=()
counts=()
# Waits for the oldest chunk and reports it.
reap() {
  local pid=${pids[0]} f=${firsts[0]} n=${counts[0]} status=0
  pids=("${pids[@]:1}")
  firsts=("${firsts[@]:1}")
  counts=("${counts[@]:1}")
  wait "$pid" || status=$?
  if [ "$status" -eq 0 ]; then
    echo "raft-soak: seeds $f-$((f + n - 1)) passed ($(($(date +%s) - start)) s so far)"
    rm -f "$OUT/$f.log"
  else
    failed=$((failed + 1))
    echo "raft-soak: seeds from $f FAILED; report:"
    grep -A 20 -E "seed|Failure" "$OUT/$f.log" | head -n 60
  fi
}
end=$((FIRST + SEEDS))
for ((f = FIRST; f < end; f += CHUNK)); do
  n=$((end - f < CHUNK ? end - f : CHUNK))
  "$BIN" --gtest_filter='RaftSim.RandomSchedules' --raft_sim_first_seed="$f" \
    --raft_sim_seeds="$n" >"$OUT/$f.log" 2>&1 &
  pids+=($!)
  firsts+=("$f")
  counts+=("$n")
  [ ${#pids[@]} -ge "$JOBS" ] && reap
done
while [ ${#pids[@]} -gt 0 ]; do reap; done
echo "raft-soak: $SEEDS seeds from $FIRST in $(($(date +%s) - start)) s; failed chunks: $failed"
if [ "$failed" -gt 0 ]; then
  echo "raft-soak: the failing chunks' whole output is in $OUT"
  exit 1
fi
rm -rf "$OUT"
