#!/usr/bin/env bash
# YCSB workload C (read only, zipfian, reads by the Get API at the tablet leaders) on
# an RF=3 table on three tablet servers against the same on an RF=1 table on one, in
# one run, interleaved.
#
# Starts two clusters from <build>/bin (conf/*.gflags, ports picked by the daemons and
# read back from their info files, data in a temp dir): "rf1", a master and one tablet
# server, and "rf3", a master and three tablet servers, all on this machine. Loads
# $RECORDS records into each (`ycsb load`, 4 hash tablets, -p num_replicas=1 and 3),
# warms each up with $WARMUP_SECONDS s of the workload, then runs $PAIRS pairs, RF1
# then RF3, each YCSB workload C with $YCSB_THREADS threads for $SECONDS_RUN s
# (-p maxexecutiontime). The idle cluster stays up (its Raft groups go quiet).
# Prints each run's ops/s, read latency, the tablet servers' CPU per read (and each
# server's CPU seconds) and ycsb's, the machine's CPU use during the run (other work on the
# machine shows there), the ratio RF3/RF1 of each pair and the median of the ratios.
# Stops what it started (by PID) and removes the temp dir, also on failure or Ctrl-C.
#
# Usage: bench/ycsb-replicas.sh [build dir, default build]
# Env:   QUICK=1          smoke run, about 1.5 min: RECORDS=200000, PAIRS=1,
#                         SECONDS_RUN=5, WARMUP_SECONDS=2
#        RECORDS          records loaded into each table (1000000)
#        PAIRS            RF1/RF3 pairs (5)
#        SECONDS_RUN      length of every measured run (20)
#        WARMUP_SECONDS   unmeasured run on each cluster before the pairs (5; 0: none)
#        YCSB_THREADS     ycsb threads (100)
#        DISTRIBUTION     requestdistribution (zipfian, workload C's)
#        FIELDCOUNT (1), FIELDLENGTH (100): non-key columns and their length
#        KEEP_WORK=1      keep the temp dir (logs and ycsb output)
#        TSERVER_FLAGS    extra nyala-tserver flags for every tablet server
set -euo pipefail

die() { echo "ycsb-replicas: $*" >&2; exit 1; }

BUILD=build
case ${1:-} in
  -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  -*) die "unknown option $1 (--help)" ;;
  "") ;;
  *) BUILD=$1 ;;
esac
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source=bench/ycsb-common.sh
source "$HERE/ycsb-common.sh"

if [[ -n "${QUICK:-}" && "${QUICK}" != 0 ]]; then
  : "${RECORDS:=200000}" "${PAIRS:=1}" "${SECONDS_RUN:=5}" "${WARMUP_SECONDS:=2}"
fi
RECORDS=${RECORDS:-1000000}
PAIRS=${PAIRS:-5}
SECONDS_RUN=${SECONDS_RUN:-20}
WARMUP_SECONDS=${WARMUP_SECONDS:-5}
YCSB_THREADS=${YCSB_THREADS:-100}
DISTRIBUTION=${DISTRIBUTION:-zipfian}
FIELDCOUNT=${FIELDCOUNT:-1}
FIELDLENGTH=${FIELDLENGTH:-100}

check_nyala_bins "$BUILD"
WORK=$(mktemp -d /tmp/ycsb-replicas.XXXXXX)
cleanup() {
  stop_children
  remove_work
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
# shellcheck disable=SC2086  # TSERVER_FLAGS is a list of flags
start_cluster rf1 1 ${TSERVER_FLAGS:-}
# shellcheck disable=SC2086
start_cluster rf3 3 ${TSERVER_FLAGS:-}
COMMON=(-P "$HERE/ycsb/workloadc" -p recordcount="$RECORDS" -p fieldcount="$FIELDCOUNT"
        -p fieldlength="$FIELDLENGTH")
for t in rf1 rf3; do
  log "Nyala $t: ycsb load, $RECORDS records, 4 threads, num_replicas=${t#rf}"
  ycsb_load "$t" "$WORK/load-$t.out" "${COMMON[@]}" -p num_replicas="${t#rf}" -threads 4
done
if [[ -x "$BIN/nyala" ]]; then
  log "Nyala rf3: the tablets' replicas (leaders serve every read)"
  "$BIN/nyala" tablet list "${MASTER_ADDR[rf3]}" 2>&1 | sed 's/^/  /' || true
fi

# run_c <tag> <seconds> <out file>: one timed YCSB C run against cluster <tag>.
run_c() {
  local tag=$1 seconds=$2 out=$3
  # shellcheck disable=SC2086  # TSERVER_PIDS is a list
  measure ${TSERVER_PIDS[$tag]} -- "$BIN/ycsb" run "${COMMON[@]}" \
    -p master_addresses="${MASTER_ADDR[$tag]}" -p requestdistribution="$DISTRIBUTION" \
    -p use_get_api=true -p operationcount=1000000000 -p maxexecutiontime="$seconds" \
    -threads "$YCSB_THREADS" >"$out" 2>&1 || { cat "$out" >&2; die "ycsb run ($tag) failed"; }
  local failed
  failed=$(ycsb_failed "$out")
  [[ $failed == 0 ]] || log "WARNING: $failed reads failed in the $tag run (counted in its rate)"
}

if [[ $WARMUP_SECONDS -gt 0 ]]; then
  for t in rf1 rf3; do
    log "Nyala $t: warm-up, ${WARMUP_SECONDS}s (not measured)"
    run_c "$t" "$WARMUP_SECONDS" "$WORK/warmup-$t.out"
  done
fi

declare -A RATE CPU_US CLIENT_US CPU_EACH BUSY LAT
for ((p = 1; p <= PAIRS; p++)); do
  log "---- pair $p of $PAIRS; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  for t in rf1 rf3; do
    out="$WORK/c-$t-$p.out"
    run_c "$t" "$SECONDS_RUN" "$out"
    RATE[$t,$p]=$(ycsb_rate "$out")
    ops=$(awk -F', ' '/\], Operations, / {n += $3} END {print n + 0}' "$out")
    CPU_US[$t,$p]=$(awk -v c="$RUN_CPU_TOTAL_S" -v n="$ops" 'BEGIN {printf "%.1f", (n > 0 ? c * 1e6 / n : 0)}')
    CLIENT_US[$t,$p]=$(awk -v c="$RUN_CLIENT_S" -v n="$ops" 'BEGIN {printf "%.1f", (n > 0 ? c * 1e6 / n : 0)}')
    CPU_EACH[$t,$p]=$RUN_CPU_S
    BUSY[$t,$p]=$RUN_BUSY
    LAT[$t,$p]=$(awk -F', ' '/^\[READ\], AverageLatency/ {a = $3} /^\[READ\], 99thPercentile/ {q = $3}
      END {printf "avg %.2f ms, p99 %.1f ms", a / 1000, q / 1000}' "$out")
    log "Nyala $t: $(printf '%.0f' "${RATE[$t,$p]}") ops/s (${LAT[$t,$p]}); tablet server CPU" \
      "${CPU_US[$t,$p]} µs per read (s per server: $RUN_CPU_S), ycsb ${CLIENT_US[$t,$p]} µs;" \
      "machine ${RUN_BUSY}% busy"
  done
done

echo
echo "== summary: YCSB C ($DISTRIBUTION, Get API, reads at the leaders), $RECORDS records," \
  "$YCSB_THREADS threads, ${SECONDS_RUN}s runs; load average now $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-5s %12s %12s %8s  %s\n" pair "RF1 ops/s" "RF3 ops/s" RF3/RF1 \
  "tserver µs CPU per read RF1, RF3 (RF3 per server, s); machine busy % RF1, RF3"
ratios=() rf1s=() rf3s=()
for ((p = 1; p <= PAIRS; p++)); do
  r=$(ratio "${RATE[rf3,$p]}" "${RATE[rf1,$p]}")
  ratios+=("$r") rf1s+=("${RATE[rf1,$p]}") rf3s+=("${RATE[rf3,$p]}")
  printf "%-5s %12.0f %12.0f %8s  %s, %s (%s); %s, %s\n" "$p" "${RATE[rf1,$p]}" "${RATE[rf3,$p]}" "$r" \
    "${CPU_US[rf1,$p]}" "${CPU_US[rf3,$p]}" "${CPU_EACH[rf3,$p]}" "${BUSY[rf1,$p]}" "${BUSY[rf3,$p]}"
done
printf "%-5s %12s %12s %8s\n" median "$(rounded "$(median "${rf1s[@]}")")" \
  "$(rounded "$(median "${rf3s[@]}")")" "$(median "${ratios[@]}")"
echo "RF3 / RF1, median of the pairs' ratios: $(median "${ratios[@]}")  (target >= 0.8)"
exit 0
