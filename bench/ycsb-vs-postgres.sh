#!/usr/bin/env bash
# Point reads by primary key, PostgreSQL 15 vs Nyala, back to back on this machine.
#
#  1. PostgreSQL 15: a private cluster in a temp dir (owned by the `postgres` user when
#     run as root: initdb refuses root), on 127.0.0.1 and a port picked at run time, a
#     table kv(k bigint primary key, v text) of $RECORDS rows, prewarmed, then
#     `pgbench -M prepared` with $PG_CLIENTS clients selecting one row by a uniformly
#     random key for $SECONDS_PG seconds. The cluster is stopped before Nyala starts.
#  2. Nyala: a master and one tablet server from <build>/bin (conf/*.gflags, ports
#     picked by the daemons and read back from their info files) in the same temp dir,
#     `ycsb load` of $RECORDS records, then YCSB workload C (read only, zipfian) with
#     $YCSB_THREADS threads through the Get API ($OPS reads), through a one-row Scan
#     ($SCAN_OPS reads) and, for the record, through the Get API with the client's
#     sharing of concurrent Gets turned off (-p share_gets=false, $SCAN_OPS reads).
# Prints the rates and the ratios Get/Scan and Get/PostgreSQL, then stops what it
# started (by PID) and removes the temp dir, also on failure or Ctrl-C.
#
# Usage: bench/ycsb-vs-postgres.sh [build dir, default build]
# Env:   QUICK=1         smoke run, about 1.5 min: SECONDS_PG=10, OPS=200000, SCAN_OPS=50000
#        RECORDS         rows / records loaded (1000000)
#        SECONDS_PG      pgbench run length (30)
#        OPS, SCAN_OPS   reads in the Nyala Get run (1000000) and Scan run (OPS / 4)
#        PG_CLIENTS      pgbench clients (64); YCSB_THREADS ycsb threads (100)
#        FIELDCOUNT (1), FIELDLENGTH (100): non-key columns and their length, both sides
#        PG_BIN          PostgreSQL binaries (the newest /usr/lib/postgresql/*/bin)
#        SKIP_PG=1, SKIP_NYALA=1   run one side only
#        TSERVER_FLAGS   extra nyala-tserver flags, e.g. "--row_cache_capacity_mb=0"
# Needs the Debian package postgresql-15 (initdb, postgres, pgbench, psql): when it is
# missing, this runs `scripts/setup-deps.sh --bench` (root or sudo) to install it.
set -euo pipefail

BUILD=${1:-build}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
if [[ -n "${QUICK:-}" && "${QUICK}" != 0 ]]; then
  : "${SECONDS_PG:=10}" "${OPS:=200000}" "${SCAN_OPS:=50000}"
fi
RECORDS=${RECORDS:-1000000}
OPS=${OPS:-1000000}
SCAN_OPS=${SCAN_OPS:-$((OPS / 4))}
SECONDS_PG=${SECONDS_PG:-30}
PG_CLIENTS=${PG_CLIENTS:-64}
YCSB_THREADS=${YCSB_THREADS:-100}
FIELDCOUNT=${FIELDCOUNT:-1}
FIELDLENGTH=${FIELDLENGTH:-100}
SKIP_PG=${SKIP_PG:-0}
SKIP_NYALA=${SKIP_NYALA:-0}

log() { echo "[$(date +%T)] $*"; }
die() { echo "ycsb-vs-postgres: $*" >&2; exit 1; }

if [[ "$SKIP_NYALA" == 0 ]]; then
  [[ -d "$BUILD/bin" ]] || die "no $BUILD/bin: build first (cmake --build $BUILD -j2)"
  BIN=$(cd "$BUILD/bin" && pwd)
  for b in nyala-master nyala-tserver ycsb; do
    [[ -x "$BIN/$b" ]] || die "$BIN/$b is missing: build it (ninja -C $BUILD $b)"
  done
fi

find_pg_bin() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [[ -x "$d/initdb" && -x "$d/pgbench" ]] && { echo "$d"; return 0; }
  done
  return 1
}
if [[ "$SKIP_PG" == 0 ]]; then
  if [[ -z "${PG_BIN:-}" ]]; then
    if ! PG_BIN=$(find_pg_bin); then
      log "PostgreSQL is not installed: scripts/setup-deps.sh --bench"
      "$ROOT/scripts/setup-deps.sh" --bench || die "could not install PostgreSQL"
      PG_BIN=$(find_pg_bin) || die "PostgreSQL still not found under /usr/lib/postgresql"
    fi
  fi
  for b in initdb pg_ctl postgres pgbench psql; do
    [[ -x "$PG_BIN/$b" ]] || die "$PG_BIN/$b is missing (set PG_BIN)"
  done
fi

WORK=$(mktemp -d /tmp/ycsb-vs-pg.XXXXXX)
chmod 755 "$WORK"  # the postgres user must reach its directories inside
CHILD_PIDS=()      # our own children (Nyala daemons)
PG_PID=""          # the postmaster (a child of pg_ctl, not of this shell)

# Stops `pid` with SIGTERM (SIGINT for the postmaster: fast shutdown), SIGKILL after 20 s.
stop_pid() {
  local pid=$1 sig=${2:-TERM}
  kill -0 "$pid" 2>/dev/null || return 0
  kill -"$sig" "$pid" 2>/dev/null || true
  for _ in $(seq 1 200); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "ycsb-vs-postgres: pid $pid did not stop; killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local pid
  for pid in "${CHILD_PIDS[@]}"; do stop_pid "$pid"; done
  [[ -n "$PG_PID" ]] && stop_pid "$PG_PID" INT
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# Prints the value of "[OVERALL], Throughput(ops/sec), X" in ycsb output file $1.
ycsb_rate() { awk -F', ' '/^\[OVERALL\], Throughput/ {print $3}' "$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

log "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
PG_TPS=""
GET_OPS=""
SCAN_RATE=""

# ---- PostgreSQL ------------------------------------------------------------------
if [[ "$SKIP_PG" == 0 ]]; then
  AS_PG=()
  if [[ $(id -u) -eq 0 ]]; then
    id postgres >/dev/null 2>&1 || die "running as root needs the postgres user (package postgresql-15)"
    AS_PG=(runuser -u postgres --)
  fi
  mkdir -p "$WORK/pg" "$WORK/pgsock"
  [[ ${#AS_PG[@]} -gt 0 ]] && chown postgres: "$WORK/pg" "$WORK/pgsock"
  chmod 700 "$WORK/pg"
  PGPORT=$(free_port)
  "${AS_PG[@]}" "$PG_BIN/initdb" -D "$WORK/pg" -U postgres --auth=trust -E UTF8 --no-sync \
    --no-instructions >"$WORK/initdb.log" 2>&1 || { cat "$WORK/initdb.log" >&2; die "initdb failed"; }
  "${AS_PG[@]}" tee -a "$WORK/pg/postgresql.conf" >/dev/null <<CONF
port = $PGPORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$WORK/pgsock'
max_connections = $((PG_CLIENTS + 20))
shared_buffers = 512MB
fsync = off
synchronous_commit = off
full_page_writes = off
CONF
  "${AS_PG[@]}" "$PG_BIN/pg_ctl" -D "$WORK/pg" -l "$WORK/pg/server.log" -w -t 60 start >/dev/null ||
    { tail -20 "$WORK/pg/server.log" >&2; die "PostgreSQL did not start"; }
  PG_PID=$(head -1 "$WORK/pg/postmaster.pid")
  PSQL=("$PG_BIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -d postgres -q -X -v ON_ERROR_STOP=1)
  log "PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') (pid $PG_PID, port $PGPORT): loading $RECORDS rows"
  "${PSQL[@]}" <<SQL
CREATE TABLE kv (k bigint PRIMARY KEY, v text);
INSERT INTO kv SELECT g, repeat('x', $FIELDLENGTH) FROM generate_series(1, $RECORDS) g;
VACUUM ANALYZE kv;
SQL
  # Both sides read from memory: Nyala's 1M rows sit in its block cache after the load.
  "${PSQL[@]}" -c "CREATE EXTENSION IF NOT EXISTS pg_prewarm" \
    -c "SELECT pg_prewarm('kv'), pg_prewarm('kv_pkey')" >/dev/null 2>&1 ||
    log "pg_prewarm unavailable: the first seconds read through the OS page cache"
  cat >"$WORK/select.sql" <<SQL
\set k random(1, $RECORDS)
SELECT v FROM kv WHERE k = :k;
SQL
  log "PostgreSQL: pgbench -M prepared, point select by bigint PK, $PG_CLIENTS clients, ${SECONDS_PG}s"
  "$PG_BIN/pgbench" -h 127.0.0.1 -p "$PGPORT" -U postgres -n -M prepared -c "$PG_CLIENTS" -j 2 \
    -T "$SECONDS_PG" -f "$WORK/select.sql" postgres >"$WORK/pgbench.out" 2>&1 ||
    { cat "$WORK/pgbench.out" >&2; die "pgbench failed"; }
  grep -E "number of transactions actually processed|latency average|^tps" "$WORK/pgbench.out"
  PG_TPS=$(awk '/^tps = / {print $3; exit}' "$WORK/pgbench.out")
  stop_pid "$PG_PID" INT
  PG_PID=""
fi

# ---- Nyala -------------------------------------------------------------------------
# start_daemon <name> <binary> <flagfile> [flags...]: prints its RPC address.
start_daemon() {
  local name=$1 binary=$2 flagfile=$3
  shift 3
  mkdir -p "$WORK/$name" "$WORK/logs"
  # In a session of its own, like the postmaster (pg_ctl calls setsid): with the
  # scheduler's autogroups each server then competes for CPU the same way. Not a group
  # leader here, so setsid execs in place and $! is the daemon's PID.
  setsid "$BIN/$binary" --flagfile="$ROOT/conf/$flagfile" --fs_data_dirs="$WORK/$name" \
    --log_dir="$WORK/logs" --rpc_bind_addresses=127.0.0.1:0 --webserver_port=0 \
    --webserver_interface=127.0.0.1 --server_dump_info_path="$WORK/$name.info" "$@" \
    >"$WORK/logs/$name.out" 2>&1 &
  local pid=$!
  CHILD_PIDS+=("$pid")
  for _ in $(seq 1 300); do
    if [[ -s "$WORK/$name.info" ]]; then
      awk -F= '/^rpc=/ {print $2; exit}' "$WORK/$name.info"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || { tail -20 "$WORK/logs/$name.out" >&2; die "$name exited during start-up"; }
    sleep 0.1
  done
  die "$name did not start within 30 s"
}

if [[ "$SKIP_NYALA" == 0 ]]; then
  # Not in a subshell: start_daemon records the PIDs for cleanup.
  start_daemon master nyala-master master.gflags >"$WORK/master.addr"
  MASTER=$(cat "$WORK/master.addr")
  # shellcheck disable=SC2086  # TSERVER_FLAGS is a list of flags
  start_daemon tserver nyala-tserver tserver.gflags --tserver_master_addrs="$MASTER" \
    ${TSERVER_FLAGS:-} >"$WORK/ts.addr"
  log "Nyala: master $MASTER (pid ${CHILD_PIDS[0]}), tablet server $(cat "$WORK/ts.addr") (pid ${CHILD_PIDS[1]})"
  COMMON=(-P "$HERE/ycsb/workloadc" -p master_addresses="$MASTER" -p recordcount="$RECORDS"
          -p fieldcount="$FIELDCOUNT" -p fieldlength="$FIELDLENGTH")
  # The load creates the table: retry until the tablet server has registered.
  log "Nyala: ycsb load, $RECORDS records, 4 threads"
  for attempt in $(seq 1 50); do
    if "$BIN/ycsb" load "${COMMON[@]}" -threads 4 >"$WORK/load.out" 2>&1; then break; fi
    [[ $attempt -eq 50 ]] && { cat "$WORK/load.out" >&2; die "ycsb load failed"; }
    sleep 0.2
  done
  grep -E "OVERALL|INSERT\], Return" "$WORK/load.out"
  log "Nyala: YCSB workload C, $YCSB_THREADS threads, Get API, $OPS reads"
  "$BIN/ycsb" run "${COMMON[@]}" -p operationcount="$OPS" -p use_get_api=true \
    -threads "$YCSB_THREADS" >"$WORK/get.out" 2>&1 || { cat "$WORK/get.out" >&2; die "ycsb run (Get) failed"; }
  grep -E "OVERALL|\[READ\], (AverageLatency|99th|Return)" "$WORK/get.out"
  GET_OPS=$(ycsb_rate "$WORK/get.out")
  log "Nyala: YCSB workload C, $YCSB_THREADS threads, one-row Scan, $SCAN_OPS reads"
  "$BIN/ycsb" run "${COMMON[@]}" -p operationcount="$SCAN_OPS" -p use_get_api=false \
    -threads "$YCSB_THREADS" >"$WORK/scan.out" 2>&1 || { cat "$WORK/scan.out" >&2; die "ycsb run (Scan) failed"; }
  grep -E "OVERALL|\[READ\], (AverageLatency|99th|Return)" "$WORK/scan.out"
  SCAN_RATE=$(ycsb_rate "$WORK/scan.out")
  # For the record: the Get API without the client's sharing of concurrent Gets.
  log "Nyala: YCSB workload C, $YCSB_THREADS threads, Get API, one RPC per Get, $SCAN_OPS reads"
  "$BIN/ycsb" run "${COMMON[@]}" -p operationcount="$SCAN_OPS" -p use_get_api=true \
    -p share_gets=false -threads "$YCSB_THREADS" >"$WORK/get1.out" 2>&1 ||
    { cat "$WORK/get1.out" >&2; die "ycsb run (unshared Get) failed"; }
  grep -E "OVERALL|\[READ\], (AverageLatency|99th|Return)" "$WORK/get1.out"
  GET1_OPS=$(ycsb_rate "$WORK/get1.out")
fi

echo
echo "== summary: $RECORDS rows; load average now $(cut -d' ' -f1-3 /proc/loadavg)"
[[ -n "$PG_TPS" ]] && printf "PostgreSQL pgbench -M prepared point select, %d clients: %12.0f tx/s\n" "$PG_CLIENTS" "$PG_TPS"
[[ -n "$GET_OPS" ]] && printf "Nyala YCSB C, Get API, %d threads:                    %12.0f ops/s\n" "$YCSB_THREADS" "$GET_OPS"
[[ -n "$SCAN_RATE" ]] && printf "Nyala YCSB C, one-row Scan, %d threads:              %12.0f ops/s\n" "$YCSB_THREADS" "$SCAN_RATE"
[[ -n "$GET1_OPS" ]] && printf "Nyala YCSB C, Get API, one RPC per Get (share_gets=false): %6.0f ops/s\n" "$GET1_OPS"
[[ -n "$GET_OPS" && -n "$SCAN_RATE" ]] && echo "Get / Scan:       $(ratio "$GET_OPS" "$SCAN_RATE")  (target >= 2.5)"
[[ -n "$GET_OPS" && -n "$PG_TPS" ]] && echo "Get / PostgreSQL: $(ratio "$GET_OPS" "$PG_TPS")  (target >= 1.0)"
exit 0
