#!/usr/bin/env bash
# The Prometheus exposition of a real cluster, linted by `promtool check metrics`
# (Debian's `prometheus` package, installed by scripts/setup-deps.sh): a master and
# one tablet server (single-replica tables), under a bounded load of writes, gets
# and scans, serve /metrics_prometheus; promtool must report nothing. Also checks
# the families a Prometheus user relies on (process_*, latency histograms, _total
# counters) are there with sane values.
# Exits 77 (CTest: skipped) with a message when promtool is not available.
#
#   test/prometheus-metrics-itest.sh <bin dir>
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export NYALA_BIN_DIR=${1:-$ROOT/build/bin}
PROMTOOL=$(command -v promtool || true)
if [ -z "$PROMTOOL" ]; then
  echo "SKIPPED: promtool is not installed (Debian package 'prometheus'; scripts/setup-deps.sh installs it)"
  exit 77
fi
command -v curl >/dev/null || { echo "SKIPPED: curl is not installed"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nyala-prom-XXXXXX")
DATA="$WORK/cluster"
failures=0
cleanup() {
  "$ROOT/scripts/stop-cluster.sh" --data "$DATA" --grace 5 >/dev/null 2>&1 || true
  if [ "$failures" -eq 0 ]; then rm -rf "$WORK"; else echo "kept $WORK"; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

source "$ROOT/test/itest_util.sh"
BASE=$(pick_base_port 1)
M="127.0.0.1:$BASE"
NYALA_MASTER_FLAGS="--default_num_replicas=1" \
  "$ROOT/scripts/start-cluster.sh" --tservers 1 --data "$DATA" --base-port "$BASE" >/dev/null
NYALA="$NYALA_BIN_DIR/nyala"

# Load: bounded inserts, gets and scans, so that every family has samples.
"$NYALA" table create "$M" \
  '{"name": "prom", "columns": [{"name": "k", "type": "INT64", "key": true},
    {"name": "v", "type": "STRING", "nullable": true}],
    "hash_partitions": [{"columns": ["k"], "buckets": 2}]}' >/dev/null
seq 1 2000 | sed 's/$/,x/' | (echo "k,v"; cat) >"$WORK/rows.csv"
"$NYALA" table insert "$M" prom --file="$WORK/rows.csv" >/dev/null
"$NYALA" table get "$M" prom 7 >/dev/null
"$NYALA" table scan "$M" prom >/dev/null 2>&1
"$NYALA" table count "$M" prom >/dev/null 2>&1

# check <name> <url>: promtool on the exposition, and the families we promise.
check() {
  local name=$1 url=$2 out lint
  out=$(curl -sf "$url") || { fail "$name: cannot fetch $url"; return; }
  printf '%s\n' "$out" >"$WORK/$name.prom"
  lint=$("$PROMTOOL" check metrics <"$WORK/$name.prom" 2>&1) && [ -z "$lint" ] &&
    echo "ok: $name: promtool check metrics is clean" ||
    fail "$name: promtool check metrics reports:"$'\n'"$lint"
  for fam in process_cpu_seconds_total process_resident_memory_bytes process_open_fds \
             process_start_time_seconds; do
    grep -qE "^$fam [0-9.e+]+$" <<<"$out" && echo "ok: $name exports $fam" ||
      fail "$name: no $fam sample"
  done
  local rss start now
  rss=$(sed -n 's/^process_resident_memory_bytes //p' <<<"$out")
  start=$(sed -n 's/^process_start_time_seconds //p' <<<"$out")
  now=$(date +%s)
  if awk -v r="${rss:-0}" 'BEGIN { exit !(r > 1000000) }'; then
    echo "ok: $name: resident memory $rss bytes"
  else
    fail "$name: process_resident_memory_bytes '$rss'"
  fi
  if awk -v s="${start:-0}" -v n="$now" 'BEGIN { exit !(s > n - 3600 && s <= n + 1) }'; then
    echo "ok: $name: start time $start is within the last hour"
  else
    fail "$name: process_start_time_seconds '$start' (now $now)"
  fi
  # Latencies as histograms: buckets with le, a +Inf bucket equal to _count.
  grep -q '^# TYPE rpc_handler_duration_seconds histogram$' <<<"$out" &&
    echo "ok: $name: rpc_handler_duration_seconds is a histogram" ||
    fail "$name: rpc_handler_duration_seconds is not a histogram"
  if grep -qE '_(us|ms|micros|millis)[_{ ]' <<<"$(grep -v '^#' <<<"$out")"; then
    fail "$name: a metric name carries a unit other than a base unit"
  else
    echo "ok: $name: no ms/us units in metric names"
  fi
}
check master "http://127.0.0.1:$((BASE + 1000))/metrics_prometheus"
check tserver "http://127.0.0.1:$((BASE + 1010))/metrics_prometheus"

tsout=$(cat "$WORK/tserver.prom" 2>/dev/null || true)
# The writes of the load were counted, and the write-latency histogram is consistent:
# its +Inf bucket holds every observation.
rows=$(sed -n 's/^tserver_rows_written_total{op="insert"} //p' <<<"$tsout")
[ "${rows:-0}" -ge 2000 ] && echo "ok: tserver counted $rows inserted rows" ||
  fail "tserver_rows_written_total{op=\"insert\"} is '${rows:-}', expected >= 2000"
inf=$(sed -n 's/^tserver_write_duration_seconds_bucket{le="+Inf"} //p' <<<"$tsout")
cnt=$(sed -n 's/^tserver_write_duration_seconds_count //p' <<<"$tsout")
if [ -n "$inf" ] && [ "$inf" = "$cnt" ] && [ "$cnt" -gt 0 ]; then
  echo "ok: tserver_write_duration_seconds has $cnt observations, all in the +Inf bucket"
else
  fail "tserver_write_duration_seconds: +Inf bucket '$inf', count '$cnt'"
fi

if [ "$failures" -gt 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "all checks passed"
