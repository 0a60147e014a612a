#!/usr/bin/env bash
# The sync RPC target, side by side: rpc-bench's blocking-socket ping-pong and its
# one-thread sync RPC mode, run as interleaved pairs (A B A B ...) so both see the
# same machine state. Prints each pair's req/s and ratio, then the median ratio
# (target: sync >= 0.70 of ping-pong).
#
# Usage: bench/rpc-sync-vs-pingpong.sh [build dir, default build] [extra rpc-bench flags]
#   e.g. bench/rpc-sync-vs-pingpong.sh build --server_cpu=0 --client_cpu=1
# Env:   PAIRS (7), SECONDS_PER_RUN (3)
set -euo pipefail

BUILD=${1:-build}
shift || true
BENCH="$BUILD/bin/rpc-bench"
PAIRS=${PAIRS:-7}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-3}
if [[ ! -x "$BENCH" ]]; then
  echo "no $BENCH: build first (cmake --build $BUILD -j2)" >&2
  exit 1
fi

reqs() {  # the Reqs/sec figure of one rpc-bench run
  "$BENCH" --run_seconds="$SECONDS_PER_RUN" "$@" 2>/dev/null | awk '/^Reqs\/sec:/ {print $2}'
}

ratios=()
echo "pairs: $PAIRS, ${SECONDS_PER_RUN}s per run, extra flags: ${*:-none}"
for ((i = 1; i <= PAIRS; i++)); do
  pp=$(reqs --mode=pingpong "$@")
  sync=$(reqs --mode=sync --client_threads=1 "$@")
  if [[ -z "$pp" || -z "$sync" ]]; then
    echo "pair $i: rpc-bench printed no Reqs/sec; run it by hand to see why" >&2
    exit 1
  fi
  r=$(awk -v s="$sync" -v p="$pp" 'BEGIN {printf "%.3f", s / p}')
  ratios+=("$r")
  printf 'pair %d: ping-pong %s req/s, sync %s req/s, ratio %s\n' "$i" "$pp" "$sync" "$r"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR] = $1} END {
  if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
echo "sync / ping-pong, median of $PAIRS pairs: $median (target >= 0.70)"
