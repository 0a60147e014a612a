#!/usr/bin/env bash
# Where a replicated write's time goes: YCSB workload A (50% reads, 50% single-row
# updates, uniform keys) on an RF=3 table of a local cluster, with each write's stages
# read from the tablet servers' metrics.
#
# Starts a master and three tablet servers from <build>/bin (conf/*.gflags, ports
# picked by the daemons, data in a temp dir), loads $RECORDS records (4 hash tablets,
# num_replicas=3), warms up for $WARMUP_SECONDS s, then runs workload A with
# $YCSB_THREADS threads for $SECONDS_RUN s, $ROUNDS times. Around each run it reads
# /metrics_prometheus of every tablet server, and prints, from the differences summed
# over the servers (each leads some tablets and follows others):
#  - ycsb's ops/s and its update and read latency (average);
#  - each stage of tserver_write_stage_duration_seconds (a write on its leader: queue, prepare,
#    lock_wait, handoff, append, commit, leader_sync, apply, respond), then
#    tserver_write_duration_seconds, consensus_stage_duration_seconds (follower_queue,
#    follower_log, follower_append, ack_round_trip), consensus_log_append_duration_seconds and
#    consensus_log_sync_duration_seconds: count, mean, p50 and p99 (from the histogram buckets,
#    interpolated), in ms;
#  - fdatasyncs per second and appends per fdatasync of the consensus logs;
#  - right after each run, with the cluster idle, the disk alone (consensus-bench
#    --disk_probe_only, in the same file system as the logs, 2 s each): one append +
#    fdatasync in one file, in three at once, and a majority of three durable. The
#    log's syncs under load set against these show how much of a write's time the
#    disk takes.
# The stages are described in docs/consensus.md, "Where a write's time goes".
# Stops what it started (by PID) and removes the temp dir, also on failure or Ctrl-C.
#
# Usage: bench/write-stages.sh [build dir, default build]
# Env:   QUICK=1          smoke run, about 1 min: RECORDS=50000, ROUNDS=1, SECONDS_RUN=5
#        RECORDS          records loaded (300000)
#        ROUNDS           measured runs (2)
#        SECONDS_RUN      length of each run (20)
#        WARMUP_SECONDS   unmeasured run first (5; 0: none)
#        YCSB_THREADS     ycsb threads (64)
#        FIELDLENGTH      value length (100)
#        KEEP_WORK=1      keep the temp dir (logs, ycsb output, metrics)
#        TSERVER_FLAGS    extra nyala-tserver flags for every tablet server
set -euo pipefail

die() { echo "write-stages: $*" >&2; exit 1; }

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
  : "${RECORDS:=50000}" "${ROUNDS:=1}" "${SECONDS_RUN:=5}" "${WARMUP_SECONDS:=2}"
fi
RECORDS=${RECORDS:-300000}
ROUNDS=${ROUNDS:-2}
SECONDS_RUN=${SECONDS_RUN:-20}
WARMUP_SECONDS=${WARMUP_SECONDS:-5}
YCSB_THREADS=${YCSB_THREADS:-64}
FIELDLENGTH=${FIELDLENGTH:-100}

check_nyala_bins "$BUILD"
WORK=$(mktemp -d /tmp/write-stages.XXXXXX)
cleanup() {
  stop_children
  remove_work
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
# shellcheck disable=SC2086  # TSERVER_FLAGS is a list of flags
start_cluster rf3 3 ${TSERVER_FLAGS:-}
log "ycsb load, $RECORDS records, 4 threads, num_replicas=3"
ycsb_load rf3 "$WORK/load.out" -P "$HERE/ycsb/workloada" -p recordcount="$RECORDS" \
  -p fieldcount=1 -p fieldlength="$FIELDLENGTH" -p num_replicas=3 -threads 4

# scrape <file>: every tablet server's /metrics_prometheus, concatenated.
scrape() {
  local i port
  : >"$1"
  for i in 0 1 2; do
    port=$(awk -F= '/^http_port=/ {print $2; exit}' "$WORK/rf3-ts$i.info")
    curl -sf "http://127.0.0.1:$port/metrics_prometheus" >>"$1" || die "cannot read the metrics of ts$i"
  done
}

run_a() {  # run_a <seconds> <out>
  "$BIN/ycsb" run -P "$HERE/ycsb/workloada" -p master_addresses="${MASTER_ADDR[rf3]}" \
    -p recordcount="$RECORDS" -p fieldcount=1 -p fieldlength="$FIELDLENGTH" \
    -p requestdistribution=uniform -p maxexecutiontime="$1" -p operationcount=100000000 \
    -threads "$YCSB_THREADS" >"$2" 2>&1 || { tail -20 "$2" >&2; die "ycsb run failed"; }
}

if ((WARMUP_SECONDS > 0)); then
  log "warm-up: ${WARMUP_SECONDS}s"
  run_a "$WARMUP_SECONDS" "$WORK/warmup.out"
fi

for ((r = 1; r <= ROUNDS; r++)); do
  log "---- run $r of $ROUNDS: YCSB A, uniform, $YCSB_THREADS threads, ${SECONDS_RUN}s;" \
    "load average $(cut -d' ' -f1-3 /proc/loadavg)"
  scrape "$WORK/before-$r.prom"
  measure ${TSERVER_PIDS[rf3]} -- run_a "$SECONDS_RUN" "$WORK/run-$r.out"
  scrape "$WORK/after-$r.prom"
  awk -F', ' '/^\[OVERALL\], Throughput/ {printf "ops/s %.0f", $3}
    /^\[UPDATE\], AverageLatency/ {printf "; update avg %.2f ms", $3 / 1000}
    /^\[READ\], AverageLatency/ {printf "; read avg %.2f ms", $3 / 1000}
    END {print ""}' "$WORK/run-$r.out"
  echo "tablet servers' CPU ${RUN_CPU_TOTAL_S} s; machine ${RUN_BUSY}% busy;" \
    "failed operations: $(ycsb_failed "$WORK/run-$r.out")"
  python3 - "$WORK/before-$r.prom" "$WORK/after-$r.prom" "$SECONDS_RUN" <<'PY'
import re, sys
from collections import defaultdict

def read(path):
    # (name, labels) -> {"le": {bound: count}, "sum": s, "count": n}, summed over servers
    h = defaultdict(lambda: {"le": defaultdict(float), "sum": 0.0, "count": 0.0})
    c = defaultdict(float)
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        m = re.match(r'([a-z_]+)(?:\{(.*)\})? ([-0-9.e+]+|\+Inf|NaN)$', line.strip())
        if not m:
            continue
        name, labels, value = m.group(1), m.group(2) or "", float(m.group(3))
        lab = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        le = lab.pop("le", None)
        key = ",".join(f"{k}={v}" for k, v in sorted(lab.items()))
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix):
                base = (name[: -len(suffix)], key)
                if suffix == "_bucket":
                    h[base]["le"][float("inf") if le == "+Inf" else float(le)] += value
                else:
                    h[base][suffix[1:]] += value
                break
        else:
            c[(name, key)] += value
    return h, c

(h0, c0), (h1, c1) = read(sys.argv[1]), read(sys.argv[2])
seconds = float(sys.argv[3])

def quantile(buckets, q):
    bounds = sorted(buckets)
    total = buckets[bounds[-1]]
    if total <= 0:
        return float("nan")
    want, prev_b, prev_n = q * total, 0.0, 0.0
    for b in bounds:
        n = buckets[b]
        if n >= want:
            if b == float("inf"):
                return prev_b
            frac = (want - prev_n) / (n - prev_n) if n > prev_n else 0
            return prev_b + (b - prev_b) * frac
        prev_b, prev_n = b, n
    return prev_b

rows = [("tserver_write_stage_duration_seconds", f"stage={s}") for s in
        ["queue", "prepare", "lock_wait", "handoff", "append", "commit", "leader_sync", "apply",
         "respond"]]
rows += [("tserver_write_duration_seconds", "")]
rows += [("consensus_stage_duration_seconds", f"stage={s}") for s in
         ["follower_queue", "follower_log", "follower_append", "ack_round_trip"]]
rows += [("consensus_log_append_duration_seconds", ""), ("consensus_log_sync_duration_seconds", "")]
print(f"{'stage':<44} {'count':>9} {'mean ms':>8} {'p50 ms':>8} {'p99 ms':>8}")
for key in rows:
    a, b = h0.get(key), h1.get(key)
    if b is None:
        print(f"{key[0] + '{' + key[1] + '}':<44} (not exported)")
        continue
    n = b["count"] - (a["count"] if a else 0)
    s = b["sum"] - (a["sum"] if a else 0)
    buckets = {le: v - (a["le"].get(le, 0) if a else 0) for le, v in b["le"].items()}
    label = key[0].replace("_duration_seconds", "") + ("{" + key[1] + "}" if key[1] else "")
    if n <= 0:
        print(f"{label:<44} {0:>9}")
        continue
    print(f"{label:<44} {n:>9.0f} {1000 * s / n:>8.3f} {1000 * quantile(buckets, 0.5):>8.3f}"
          f" {1000 * quantile(buckets, 0.99):>8.3f}")
syncs = c1[("consensus_log_syncs_total", "")] - c0[("consensus_log_syncs_total", "")]
appends = (h1[("consensus_log_append_duration_seconds", "")]["count"]
           - h0[("consensus_log_append_duration_seconds", "")]["count"])
if syncs > 0:
    print(f"consensus log: {syncs / seconds:.0f} fdatasyncs/s over the 3 servers, "
          f"{appends / syncs:.2f} appends per fdatasync")
PY
  if [[ -x "$BIN/consensus-bench" ]]; then
    "$BIN/consensus-bench" --disk_probe_only --seconds=2 --dir="$WORK/disk-probe" 2>&1 | grep '^disk alone' ||
      echo "disk alone: consensus-bench --disk_probe_only failed"
    rm -rf "$WORK/disk-probe"
  else
    echo "disk alone: no $BIN/consensus-bench (cmake --build $BUILD --target consensus-bench)"
  fi
done
