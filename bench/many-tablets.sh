#!/usr/bin/env bash
# Many tablets on a small cluster: the costs of idle replicas, and writes spread thin.
#
# Part "many" (the many-tablets targets beside each figure):
#  1. Starts a master and 3 tablet servers from <build>/bin with conf/*.gflags, on
#     127.0.0.1 with ports picked by the daemons (read back from their
#     --server_dump_info_path files), data in a temp dir.
#  2. Reads each tablet server's RSS (VmRSS in /proc/PID/status) while it is empty.
#  3. Creates a table of $N tablets (hash buckets) at RF=$RF, timing `nyala table create`
#     (which returns once every tablet has a leader), then waits for `nyala cluster
#     ksck` to call every tablet HEALTHY (every replica running and caught up).
#  4. Waits $SETTLE_SECS for the groups to go quiet, then reads each server's CPU
#     (utime + stime in /proc/PID/stat) over $IDLE_SECS: idle CPU, % of one core
#     (target < 2%), and RSS per replica above the empty server's (target <= 256 KiB).
#  5. kill -9 of tablet server 0, restarted at once on the same ports and data; times
#     from the restart until ksck is HEALTHY again (every replica of every tablet
#     running and within --max_replica_lag of its leader): target < 5 s. ksck takes
#     a moment itself on $N tablets; its own duration on a healthy cluster is printed
#     too.
# Part "csv" (on a fresh cluster of 3 tablet servers):
#  6. `nyala table insert --file=<csv>` of $CSV_ROWS rows (id INT64 key, v STRING of 24
#     bytes) into a table of $CSV_BIG tablets and into one of $CSV_SMALL tablets, both at
#     RF=$CSV_RF, each into a fresh table, $CSV_RUNS times alternating (big, small, big,
#     small, ...); prints rows/s and the ratio of the medians (target >= 0.5).
#     RF=3 by default: the table default, the way `nyala table insert` is used now;
#     CSV_RF=1 gives the single-replica figures (36k vs 185k rows/s on 2026-12-02,
#     2-vCPU VM, before replication).
# Stops every daemon it started (by PID) and removes its temp dir on exit or Ctrl-C.
#
# Usage: bench/many-tablets.sh [build dir, default build]
# Env:   N (1000)            tablets of the big table;  RF (3) its replicas
#        PARTS ("many csv")  which parts to run
#        IDLE_SECS (30), SETTLE_SECS (10)
#        CSV_ROWS (500000), CSV_BIG (500), CSV_SMALL (4), CSV_RF (3), CSV_RUNS (3)
#        TSERVER_FLAGS, MASTER_FLAGS   extra daemon flags, space-separated
#        KEEP=1              keep the temp dir (daemon logs) and say where it is
set -euo pipefail

BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
N=${N:-1000}
RF=${RF:-3}
PARTS=${PARTS:-"many csv"}
IDLE_SECS=${IDLE_SECS:-30}
SETTLE_SECS=${SETTLE_SECS:-10}
CSV_ROWS=${CSV_ROWS:-500000}
CSV_BIG=${CSV_BIG:-500}
CSV_SMALL=${CSV_SMALL:-4}
CSV_RF=${CSV_RF:-3}
CSV_RUNS=${CSV_RUNS:-3}
NUM_TS=3

log() { echo "[$(date +%T)] $*"; }
die() { echo "many-tablets: $*" >&2; exit 1; }

[[ -d "$BUILD/bin" ]] || die "no $BUILD/bin: build first (cmake --build $BUILD -j2)"
BIN=$(cd "$BUILD/bin" && pwd)
for b in nyala-master nyala-tserver nyala; do
  [[ -x "$BIN/$b" ]] || die "$BIN/$b is missing: cmake --build $BUILD -j2 --target $b"
done
NYALA=("$BIN/nyala")
CLK_TCK=$(getconf CLK_TCK)

WORK=$(mktemp -d /tmp/many-tablets.XXXXXX)
declare -A PIDS=()  # daemon name -> pid (our own children)

stop_pid() {  # stop_pid <pid> [signal]: TERM, then KILL after 30 s
  local pid=$1 sig=${2:-TERM}
  kill -0 "$pid" 2>/dev/null || return 0
  kill -"$sig" "$pid" 2>/dev/null || true
  for _ in $(seq 1 300); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "many-tablets: pid $pid did not stop; killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}
stop_all() {
  local name
  for name in "${!PIDS[@]}"; do stop_pid "${PIDS[$name]}"; done
  PIDS=()
}
cleanup() {
  stop_all
  if [[ -n "${KEEP:-}" && "$KEEP" != 0 ]]; then
    echo "many-tablets: kept $WORK"
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_daemon <name> <binary> <flagfile> [flags...]: starts it in the background and
# waits for its info file. The daemon's data is $WORK/<cluster>/<name>.
start_daemon() {
  local name=$1 binary=$2 flagfile=$3
  shift 3
  mkdir -p "$CL/$name" "$CL/logs/$name"
  rm -f "$CL/$name.info"
  setsid "$BIN/$binary" --flagfile="$ROOT/conf/$flagfile" --fs_data_dirs="$CL/$name" \
    --log_dir="$CL/logs/$name" --webserver_interface=127.0.0.1 \
    --server_dump_info_path="$CL/$name.info" "$@" >>"$CL/logs/$name.out" 2>&1 &
  local pid=$!
  PIDS[$name]=$pid
  for _ in $(seq 1 600); do
    [[ -s "$CL/$name.info" ]] && return 0
    kill -0 "$pid" 2>/dev/null || { tail -20 "$CL/logs/$name.out" >&2; die "$name exited during start-up"; }
    sleep 0.05
  done
  die "$name did not start within 30 s"
}
info() { awk -F= -v k="$2" '$1 == k {print $2; exit}' "$CL/$1.info"; }  # info <name> <key>
ts_flags() {  # the flags of tablet server $1 (its ports once known)
  local rpc=127.0.0.1:0 web=0
  if [[ -s "$CL/ts$1.info" ]]; then rpc=$(info "ts$1" rpc); web=$(info "ts$1" http_port); fi
  # shellcheck disable=SC2086  # TSERVER_FLAGS is a list of flags
  echo --rpc_bind_addresses="$rpc" --webserver_port="$web" --tserver_master_addrs="$MASTER" \
    ${TSERVER_FLAGS:-}
}
start_cluster() {  # start_cluster <dir name>
  CL=$WORK/$1
  mkdir -p "$CL"
  # shellcheck disable=SC2086  # MASTER_FLAGS is a list of flags
  start_daemon master nyala-master master.gflags --rpc_bind_addresses=127.0.0.1:0 \
    --webserver_port=0 ${MASTER_FLAGS:-}
  MASTER=$(info master rpc)
  local i
  for i in $(seq 0 $((NUM_TS - 1))); do
    # shellcheck disable=SC2046  # ts_flags prints a list of flags
    start_daemon "ts$i" nyala-tserver tserver.gflags $(ts_flags "$i")
  done
  for _ in $(seq 1 200); do
    [[ $("${NYALA[@]}" tserver list "$MASTER" --format=csv 2>/dev/null | grep -c LIVE) -ge $NUM_TS ]] &&
      break
    sleep 0.1
  done
  log "cluster $1: master $MASTER (pid ${PIDS[master]}), tablet servers pids" \
    "${PIDS[ts0]} ${PIDS[ts1]} ${PIDS[ts2]}"
}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # utime + stime
threads() { awk '/^Threads:/ {print $2}' "/proc/$1/status"; }
median() { sort -g | awk '{a[NR] = $1} END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.1f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
spec() {  # spec <name> <buckets> <replicas>
  printf '{"name": "%s", "columns": [{"name": "id", "type": "INT64", "key": true}, {"name": "v", "type": "STRING"}], "hash_partitions": [{"columns": ["id"], "buckets": %d}], "num_replicas": %d}' \
    "$1" "$2" "$3"
}
# ksck_healthy <deadline s>: polls ksck until HEALTHY; prints the seconds it took.
ksck_healthy() {
  local start rc
  start=$(now)
  while true; do
    rc=0
    "${NYALA[@]}" cluster ksck "$MASTER" --timeout_ms=20000 >"$WORK/ksck.out" 2>&1 || rc=$?
    [[ $rc -eq 0 ]] && { elapsed "$start"; return 0; }
    if awk -v a="$start" -v b="$(now)" -v d="$1" 'BEGIN { exit !(b - a > d) }'; then
      tail -5 "$WORK/ksck.out" >&2
      echo "-1"
      return 0
    fi
    sleep 0.2
  done
}

log "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
RESULTS=()
result() { RESULTS+=("$(printf "%-58s %14s   %s" "$1" "$2" "$3")"); }

if [[ " $PARTS " == *" many "* ]]; then
  start_cluster many
  sleep 2  # let the servers finish starting (RocksDB's and the runtime's threads)
  declare -A RSS0
  for i in 0 1 2; do
    RSS0[$i]=$(rss_kib "${PIDS[ts$i]}")
    log "ts$i empty: RSS $((RSS0[$i] / 1024)) MiB, $(threads "${PIDS[ts$i]}") threads"
  done
  log "creating a table of $N tablets at RF=$RF"
  start=$(now)
  "${NYALA[@]}" table create "$MASTER" "$(spec many "$N" "$RF")" --timeout_ms=900000 \
    >"$WORK/create.out" 2>&1 || { cat "$WORK/create.out" >&2; die "table create failed"; }
  create_s=$(elapsed "$start")
  log "created (every tablet has a leader) in $create_s s"
  healthy_s=$(ksck_healthy 600)
  total_create=$(awk -v a="$create_s" -v b="$healthy_s" 'BEGIN { printf "%.2f", a + b }')
  log "ksck HEALTHY $healthy_s s later"
  reps=$((N * RF / NUM_TS))
  result "create $N tablets RF=$RF: until every tablet has a leader" "${create_s} s" \
    "($(awk -v n="$N" -v rf="$RF" -v s="$create_s" 'BEGIN { printf "%.0f", n * rf / 3 / s }') replicas/s per server)"
  result "create: until ksck HEALTHY" "${total_create} s" ""
  replaced=$(cat "$CL"/logs/master/*.INFO 2>/dev/null | grep -c 'replaced by' || true)
  result "tablets replaced for no leader in time (creation churn)" "${replaced:-0}" "(want 0)"
  sleep "$SETTLE_SECS"
  declare -A T0
  for i in 0 1 2; do T0[$i]=$(cpu_ticks "${PIDS[ts$i]}"); done
  mt0=$(cpu_ticks "${PIDS[master]}")
  start=$(now)
  sleep "$IDLE_SECS"
  secs=$(elapsed "$start")
  for i in 0 1 2; do
    t1=$(cpu_ticks "${PIDS[ts$i]}")
    pct=$(awk -v d=$((t1 - T0[$i])) -v hz="$CLK_TCK" -v s="$secs" 'BEGIN { printf "%.2f", 100 * d / hz / s }')
    result "ts$i idle CPU, % of a core over ${IDLE_SECS}s" "$pct" "target < 2"
  done
  mt1=$(cpu_ticks "${PIDS[master]}")
  result "master idle CPU, % of a core" \
    "$(awk -v d=$((mt1 - mt0)) -v hz="$CLK_TCK" -v s="$secs" 'BEGIN { printf "%.2f", 100 * d / hz / s }')" ""
  for i in 0 1 2; do
    rss=$(rss_kib "${PIDS[ts$i]}")
    per=$(( (rss - RSS0[$i]) / reps ))
    result "ts$i RSS per replica above empty (KiB; $reps replicas)" "$per" \
      "target <= 256 (RSS $((RSS0[$i] / 1024)) -> $((rss / 1024)) MiB, $(threads "${PIDS[ts$i]}") threads)"
  done
  start=$(now)
  "${NYALA[@]}" cluster ksck "$MASTER" >/dev/null 2>&1 || true
  result "one ksck on the healthy cluster (the poll's resolution)" "$(elapsed "$start") s" ""

  log "kill -9 of ts0 and restart"
  kill -KILL "${PIDS[ts0]}"
  wait "${PIDS[ts0]}" 2>/dev/null || true
  start=$(now)
  # shellcheck disable=SC2046  # ts_flags prints a list of flags
  start_daemon ts0 nyala-tserver tserver.gflags $(ts_flags 0)
  serving_s=$(elapsed "$start")
  back_s=$(ksck_healthy 300)
  total_back=$(awk -v a="$serving_s" -v b="$back_s" 'BEGIN { printf "%.2f", a + b }')
  result "restart of ts0: until its RPC port serves" "${serving_s} s" ""
  result "restart of ts0: until ksck HEALTHY (all its replicas back)" "${total_back} s" "target < 5"
  result "ts0 RSS after the restart (MiB)" "$(( $(rss_kib "${PIDS[ts0]}") / 1024 ))" ""
  stop_all
  [[ -n "${KEEP:-}" && "$KEEP" != 0 ]] || rm -rf "$CL"
fi

if [[ " $PARTS " == *" csv "* ]]; then
  start_cluster csv
  log "writing $CSV_ROWS rows of CSV"
  awk -v n="$CSV_ROWS" 'BEGIN { print "id,v"; for (i = 1; i <= n; i++) printf "%d,value-%018d\n", i, i }' \
    >"$WORK/rows.csv"
  declare -A RATES=([big]="" [small]="")
  for run in $(seq 1 "$CSV_RUNS"); do
    for kind in big small; do
      buckets=$CSV_BIG
      [[ $kind == small ]] && buckets=$CSV_SMALL
      table="csv_${kind}_$run"
      start=$(now)
      "${NYALA[@]}" table create "$MASTER" "$(spec "$table" "$buckets" "$CSV_RF")" \
        --timeout_ms=900000 >"$WORK/create.out" 2>&1 || { cat "$WORK/create.out" >&2; die "create $table failed"; }
      log "$table: $buckets tablets RF=$CSV_RF created in $(elapsed "$start") s"
      ksck_healthy 300 >/dev/null
      start=$(now)
      "${NYALA[@]}" table insert "$MASTER" "$table" --file="$WORK/rows.csv" \
        >"$WORK/insert.out" 2>&1 || { cat "$WORK/insert.out" >&2; die "insert into $table failed"; }
      s=$(elapsed "$start")
      rate=$(awk -v n="$CSV_ROWS" -v s="$s" 'BEGIN { printf "%.0f", n / s }')
      log "$table: $CSV_ROWS rows in $s s: $rate rows/s ($(tail -1 "$WORK/insert.out"))"
      RATES[$kind]+="$rate "
      "${NYALA[@]}" table delete "$MASTER" "$table" >/dev/null 2>&1 || true
    done
  done
  big=$(echo "${RATES[big]}" | tr ' ' '\n' | grep . | median)
  small=$(echo "${RATES[small]}" | tr ' ' '\n' | grep . | median)
  result "CSV insert, $CSV_BIG tablets RF=$CSV_RF, rows/s (median; runs)" "$big" "(${RATES[big]% })"
  result "CSV insert, $CSV_SMALL tablets RF=$CSV_RF, rows/s (median; runs)" "$small" "(${RATES[small]% })"
  result "CSV insert: $CSV_BIG tablets / $CSV_SMALL tablets" \
    "$(awk -v a="$big" -v b="$small" 'BEGIN { printf "%.2f", a / b }')" "target >= 0.5"
  stop_all
fi

echo
echo "== many-tablets summary ($(date -u +'%F %T') UTC; load average $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%s\n' "${RESULTS[@]}"
