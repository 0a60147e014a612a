#!/usr/bin/env bash
# YCSB against PostgreSQL 15 on this machine, in one of two workloads.
#
# Workload C (the default): point reads by primary key, back to back.
#  1. PostgreSQL 15: a private cluster in a temp dir (owned by the `postgres` user when
#     run as root: initdb refuses root), on 127.0.0.1 and a port picked at run time,
#     fsync off, a table kv(k bigint primary key, v text) of $RECORDS rows, prewarmed,
#     then `pgbench -M prepared` with $PG_CLIENTS clients selecting one row by a
#     uniformly random key for $SECONDS_PG seconds. The cluster is stopped before Nyala
#     starts.
#  2. Nyala: a master and one tablet server from <build>/bin (conf/*.gflags, ports
#     picked by the daemons and read back from their info files) in the same temp dir,
#     `ycsb load` of $RECORDS records, then YCSB workload C (read only, zipfian) with
#     $YCSB_THREADS threads through the Get API ($OPS reads), through a one-row Scan
#     ($SCAN_OPS reads) and, for the record, through the Get API with the client's
#     sharing of concurrent Gets turned off (-p share_gets=false, $SCAN_OPS reads).
#  Prints the rates and the ratios Get/Scan and Get/PostgreSQL.
#
# Workload A (--workload a, or WORKLOAD=a): durable single-row updates and reads, 50/50.
#  PostgreSQL with fsync=on, synchronous_commit=on (and its default full_page_writes=on)
#  runs two pgbench scripts weighted @50 each, every statement its own transaction: a
#  SELECT of one row and an UPDATE of one row's value column (a new $FIELDLENGTH-byte
#  value), by uniformly random keys, $PG_CLIENTS clients. Nyala runs YCSB workload A
#  (bench/ycsb/workloada: readproportion 0.5, updateproportion 0.5; the file says
#  zipfian, so requestdistribution=uniform is set here) with $YCSB_THREADS threads on
#  an RF=1 table on a cluster of one tablet server and on an RF=3 table on a cluster of
#  three (the consensus log fdatasync'ed before every acknowledgement: --log_fsync=true,
#  the default). RF3's PostgreSQL counterpart, "PG replicated": a second cluster (a
#  primary, loaded and prewarmed the same way) and two streaming standbys cloned from
#  it by pg_basebackup -R, each with its own replication slot, application_name s1 and
#  s2, its own data dir and port, fsync on; the primary has wal_level replica,
#  max_wal_senders 10 and synchronous_standby_names 'ANY 1 (s1, s2)' with
#  synchronous_commit on, so every commit waits until one of the two standbys has
#  flushed its WAL. It runs the same pgbench scripts against the primary, and its runs
#  start only once both standbys stream with sync_state 'quorum'; after each run the
#  script waits until both standbys have replayed the run's WAL, so the next run finds
#  them idle. All four are started and loaded first, then run in turn, PostgreSQL,
#  PG replicated, RF1, RF3, for $ROUNDS rounds of $SECONDS_RUN seconds each: the others
#  stay up but idle during each run. Prints each run's ops/s (pgbench tx/s: one
#  statement each), the CPU per operation of the servers (the postmaster and its
#  children; the primary's and both standbys' together; the tablet servers) and of the
#  client (pgbench, ycsb), the machine's CPU use during each run, and per round the
#  ratios RF1/PostgreSQL, RF3/PostgreSQL, RF3/RF1 and RF3/PG replicated, with their
#  medians, and the median UPDATE latencies of RF3 (ycsb's [UPDATE] AverageLatency)
#  and PG replicated (pgbench's latency average of update.sql).
#
# Stops what it started (by PID) and removes the temp dir, also on failure or Ctrl-C.
#
# Usage: bench/ycsb-vs-postgres.sh [--workload a|c] [build dir, default build]
# Env:   WORKLOAD        c (default) or a, as --workload
#        QUICK=1         smoke run: C about 1.5 min (SECONDS_PG=10, OPS=200000,
#                        SCAN_OPS=50000); A about 1.5 min (SECONDS_RUN=8, ROUNDS=1)
#        RECORDS         rows / records loaded (1000000)
#        PG_CLIENTS      pgbench clients (64)
#        YCSB_THREADS    ycsb threads (C: 100, A: 64)
#        FIELDCOUNT (1), FIELDLENGTH (100): non-key columns and their length, both sides
#        PG_BIN          PostgreSQL binaries (the newest /usr/lib/postgresql/*/bin)
#        SKIP_PG=1, SKIP_NYALA=1   run one side only (SKIP_PG=1: no PostgreSQL at all)
#        KEEP_WORK=1     keep the temp dir (logs, ycsb and pgbench output)
#        TSERVER_FLAGS   extra nyala-tserver flags, e.g. "--row_cache_capacity_mb=0"
#        C only: SECONDS_PG (30) pgbench run length; OPS, SCAN_OPS reads in the Nyala
#                Get run (1000000) and Scan run (OPS / 4)
#        A only: SECONDS_RUN (30) length of every run; ROUNDS (3); SKIP_RF3=1 leaves
#                out the RF=3 cluster; SKIP_PG_REPL=1 leaves out PG replicated
# Needs the Debian package postgresql-15 (initdb, postgres, pgbench, psql; pg_basebackup
# for PG replicated): when it is missing, this runs `scripts/setup-deps.sh --bench`
# (root or sudo) to install it.
set -euo pipefail

die() { echo "ycsb-vs-postgres: $*" >&2; exit 1; }

WORKLOAD=${WORKLOAD:-c}
BUILD=build
while [[ $# -gt 0 ]]; do
  case $1 in
    --workload) [[ $# -ge 2 ]] || die "--workload needs a|c"; WORKLOAD=$2; shift 2 ;;
    --workload=*) WORKLOAD=${1#--workload=}; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option $1 (--help)" ;;
    *) BUILD=$1; shift ;;
  esac
done
WORKLOAD=${WORKLOAD,,}
[[ $WORKLOAD == a || $WORKLOAD == c ]] || die "unknown workload '$WORKLOAD': a or c"

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source=bench/ycsb-common.sh
source "$HERE/ycsb-common.sh"

if [[ -n "${QUICK:-}" && "${QUICK}" != 0 ]]; then
  if [[ $WORKLOAD == c ]]; then
    : "${SECONDS_PG:=10}" "${OPS:=200000}" "${SCAN_OPS:=50000}"
  else
    : "${SECONDS_RUN:=8}" "${ROUNDS:=1}"
  fi
fi
RECORDS=${RECORDS:-1000000}
OPS=${OPS:-1000000}
SCAN_OPS=${SCAN_OPS:-$((OPS / 4))}
SECONDS_PG=${SECONDS_PG:-30}
SECONDS_RUN=${SECONDS_RUN:-30}
ROUNDS=${ROUNDS:-3}
PG_CLIENTS=${PG_CLIENTS:-64}
if [[ $WORKLOAD == c ]]; then YCSB_THREADS=${YCSB_THREADS:-100}; else YCSB_THREADS=${YCSB_THREADS:-64}; fi
FIELDCOUNT=${FIELDCOUNT:-1}
FIELDLENGTH=${FIELDLENGTH:-100}
SKIP_PG=${SKIP_PG:-0}
SKIP_NYALA=${SKIP_NYALA:-0}
SKIP_RF3=${SKIP_RF3:-0}
SKIP_PG_REPL=${SKIP_PG_REPL:-0}
[[ $WORKLOAD == a && "$SKIP_PG" == 0 ]] || SKIP_PG_REPL=1

[[ "$SKIP_NYALA" == 0 ]] && check_nyala_bins "$BUILD"

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
  for b in initdb pg_ctl postgres pgbench psql $([[ "$SKIP_PG_REPL" == 0 ]] && echo pg_basebackup); do
    [[ -x "$PG_BIN/$b" ]] || die "$PG_BIN/$b is missing (set PG_BIN)"
  done
fi

WORK=$(mktemp -d /tmp/ycsb-vs-pg.XXXXXX)
chmod 755 "$WORK"  # the postgres user must reach its directories inside
# PostgreSQL clusters, by the name of their data dir in $WORK: pg (the single server),
# pgr0 (PG replicated's primary), pgr1 and pgr2 (its standbys s1 and s2). A postmaster
# is a child of pg_ctl, not of this shell: PG_PIDS records it by PID.
declare -A PG_PIDS PG_PORTS
PG_NAMES=()        # those started, in start order (the primary before its standbys)

cleanup() {
  local name
  stop_children
  for name in "${PG_NAMES[@]}"; do pg_stop "$name"; done
  remove_work
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); workload $WORKLOAD"

# ---- PostgreSQL ------------------------------------------------------------------
# pg_dir <name>: creates the data dir $WORK/<name> (and the shared socket and log dirs)
# for the user the servers run as; sets AS_PG.
pg_dir() {
  AS_PG=()
  if [[ $(id -u) -eq 0 ]]; then
    id postgres >/dev/null 2>&1 || die "running as root needs the postgres user (package postgresql-15)"
    AS_PG=(runuser -u postgres --)
  fi
  mkdir -p "$WORK/$1" "$WORK/pgsock" "$WORK/pglog"
  if [[ ${#AS_PG[@]} -gt 0 ]]; then chown postgres: "$WORK/$1" "$WORK/pgsock" "$WORK/pglog"; fi
  chmod 700 "$WORK/$1"
}
# pg_run <name>: starts the cluster in $WORK/<name>, its log in $WORK/pglog/<name>.log,
# and records its postmaster's PID.
pg_run() {
  local name=$1
  PG_NAMES+=("$name")
  "${AS_PG[@]}" "$PG_BIN/pg_ctl" -D "$WORK/$name" -l "$WORK/pglog/$name.log" -w -t 60 start >/dev/null ||
    { tail -20 "$WORK/pglog/$name.log" >&2; die "PostgreSQL ($name) did not start"; }
  PG_PIDS[$name]=$(head -1 "$WORK/$name/postmaster.pid")
}
# pg_stop <name>: a fast shutdown of that cluster, by its postmaster's PID (read from its
# postmaster.pid when pg_ctl start did not return).
pg_stop() {
  local pid=${PG_PIDS[$1]:-}
  [[ $pid == stopped ]] && return 0
  if [[ -z $pid && -s "$WORK/$1/postmaster.pid" ]]; then
    pid=$(head -1 "$WORK/$1/postmaster.pid")
    [[ $(ps -o comm= -p "$pid" 2>/dev/null) == postgres ]] || pid=""
  fi
  if [[ -n $pid ]]; then stop_pid "$pid" INT; fi
  PG_PIDS[$1]=stopped
}
# pg_psql <name> [psql args...]: psql as postgres to database postgres of that cluster.
pg_psql() {
  local name=$1
  shift
  "$PG_BIN/psql" -h 127.0.0.1 -p "${PG_PORTS[$name]}" -U postgres -d postgres -q -X -v ON_ERROR_STOP=1 "$@"
}
# pg_start <durable: 0|1> <name> [more postgresql.conf lines]: a private cluster in
# $WORK/<name> with kv loaded and prewarmed; sets PG_PIDS[<name>], PG_PORTS[<name>] and
# PGBENCH (the pgbench command line without its port, scripts and length).
pg_start() {
  local durable=$1 name=$2 more=${3:-} what=PostgreSQL
  [[ $name == pg ]] || what="PG replicated, primary"
  pg_dir "$name"
  PG_PORTS[$name]=$(free_port)
  "${AS_PG[@]}" "$PG_BIN/initdb" -D "$WORK/$name" -U postgres --auth=trust -E UTF8 --no-sync \
    --no-instructions >"$WORK/initdb-$name.log" 2>&1 || { cat "$WORK/initdb-$name.log" >&2; die "initdb failed"; }
  local durability
  if [[ $durable == 1 ]]; then
    durability=$'fsync = on\nsynchronous_commit = on\nfull_page_writes = on'
  else
    durability=$'fsync = off\nsynchronous_commit = off\nfull_page_writes = off'
  fi
  "${AS_PG[@]}" tee -a "$WORK/$name/postgresql.conf" >/dev/null <<CONF
port = ${PG_PORTS[$name]}
listen_addresses = '127.0.0.1'
unix_socket_directories = '$WORK/pgsock'
max_connections = $((PG_CLIENTS + 20))
shared_buffers = 512MB
$durability
$more
CONF
  pg_run "$name"
  log "$what $("$PG_BIN/postgres" --version | awk '{print $3}') (pid ${PG_PIDS[$name]}, port ${PG_PORTS[$name]}):" \
    "$(pg_psql "$name" -At -F' ' -c "SELECT 'fsync=' || current_setting('fsync'),
      'synchronous_commit=' || current_setting('synchronous_commit'),
      'full_page_writes=' || current_setting('full_page_writes'),
      'wal_sync_method=' || current_setting('wal_sync_method')")"
  log "$what: loading $RECORDS rows"
  pg_psql "$name" <<SQL
CREATE TABLE kv (k bigint PRIMARY KEY, v text);
INSERT INTO kv SELECT g, repeat('x', $FIELDLENGTH) FROM generate_series(1, $RECORDS) g;
VACUUM ANALYZE kv;
CHECKPOINT;
SQL
  # Both sides read from memory: Nyala's 1M rows sit in its block cache after the load.
  pg_psql "$name" -c "CREATE EXTENSION IF NOT EXISTS pg_prewarm" \
    -c "SELECT pg_prewarm('kv'), pg_prewarm('kv_pkey')" >/dev/null 2>&1 ||
    log "pg_prewarm unavailable: the first seconds read through the OS page cache"
  cat >"$WORK/select.sql" <<SQL
\set k random(1, $RECORDS)
SELECT v FROM kv WHERE k = :k;
SQL
  # A new value of $FIELDLENGTH bytes, random in its last 32 (YCSB's are random bytes).
  cat >"$WORK/update.sql" <<SQL
\set k random(1, $RECORDS)
UPDATE kv SET v = lpad(md5(random()::text), $FIELDLENGTH, 'x') WHERE k = :k;
SQL
  PGBENCH=("$PG_BIN/pgbench" -h 127.0.0.1 -U postgres -n -M prepared -c "$PG_CLIENTS" -j 2)
}

# pg_repl_start: PG replicated. The primary pgr0, durable, loaded and prewarmed like the
# single server (wal_level, max_wal_senders and max_replication_slots at PostgreSQL 15's
# defaults, spelled out); the standbys pgr1 and pgr2 (application_name s1 and s2) cloned
# from it by pg_basebackup -R, each through a replication slot of its name, on ports of
# their own, and prewarmed; then synchronous_standby_names = 'ANY 1 (s1, s2)' on the
# primary, and a wait until both stream as quorum standbys.
pg_repl_start() {
  pg_start 1 pgr0 $'wal_level = replica\nmax_wal_senders = 10\nmax_replication_slots = 10'
  local i name
  for i in 1 2; do
    name=pgr$i
    pg_dir "$name"
    PG_PORTS[$name]=$(free_port)
    log "PG replicated: pg_basebackup -R of the primary for standby s$i"
    "${AS_PG[@]}" "$PG_BIN/pg_basebackup" -D "$WORK/$name" -R -X stream -c fast -C -S "s$i" \
      -d "host=127.0.0.1 port=${PG_PORTS[pgr0]} user=postgres application_name=s$i" \
      >"$WORK/basebackup-$name.log" 2>&1 || { cat "$WORK/basebackup-$name.log" >&2; die "pg_basebackup (s$i) failed"; }
    # The copied postgresql.conf has the primary's settings (fsync on among them): a port
    # of its own overrides the primary's. -R wrote primary_conninfo and primary_slot_name.
    "${AS_PG[@]}" tee -a "$WORK/$name/postgresql.conf" >/dev/null <<<"port = ${PG_PORTS[$name]}"
    if [[ ! -e "$WORK/$name/standby.signal" ]] || ! grep -q "application_name=s$i" "$WORK/$name/postgresql.auto.conf"; then
      die "pg_basebackup -R did not configure $WORK/$name as standby s$i"
    fi
    pg_run "$name"
    pg_psql "$name" -c "SELECT pg_prewarm('kv'), pg_prewarm('kv_pkey')" >/dev/null 2>&1 ||
      log "pg_prewarm failed on standby s$i"
  done
  pg_psql pgr0 -c "ALTER SYSTEM SET synchronous_standby_names = 'ANY 1 (s1, s2)'" \
    -c "SELECT pg_reload_conf()" >/dev/null
  pg_repl_wait
  local standbys=""
  for i in 1 2; do
    standbys+="s$i (pid ${PG_PIDS[pgr$i]}, port ${PG_PORTS[pgr$i]}): $(pg_psql "pgr$i" -At -F' ' -c \
      "SELECT 'in_recovery=' || pg_is_in_recovery(), 'fsync=' || current_setting('fsync')"); "
  done
  log "PG replicated: standbys streaming, sync_state quorum; $standbys" \
    "primary: $(pg_psql pgr0 -At -F' ' -c "SELECT 'synchronous_standby_names=''' ||
      current_setting('synchronous_standby_names') || '''', 'synchronous_commit=' ||
      current_setting('synchronous_commit'), 'wal_level=' || current_setting('wal_level'),
      'max_wal_senders=' || current_setting('max_wal_senders')")"
}
# pg_repl_wait: waits (up to 60 s) until both standbys stream to the primary as quorum
# standbys: pg_stat_replication shows s1 and s2 in state 'streaming', sync_state 'quorum'.
pg_repl_wait() {
  local q="SELECT count(*) FROM pg_stat_replication WHERE application_name IN ('s1', 's2')
           AND state = 'streaming' AND sync_state = 'quorum'"
  for _ in $(seq 1 600); do
    [[ $(pg_psql pgr0 -At -c "$q") == 2 ]] && return 0
    sleep 0.1
  done
  pg_psql pgr0 -c "SELECT application_name, state, sync_state FROM pg_stat_replication" >&2
  die "PG replicated: standbys s1 and s2 are not both streaming as quorum standbys"
}
# pg_repl_caught_up <lsn>: whether both standbys have replayed the WAL up to <lsn>. Asks
# the standbys: pg_stat_replication.replay_lsn lags (a standby reports its replay every
# wal_receiver_status_interval, unless a commit waits for remote_apply).
pg_repl_caught_up() {
  local i
  for i in 1 2; do
    [[ $(pg_psql "pgr$i" -At -c "SELECT pg_last_wal_replay_lsn() >= '$1'") == t ]] || return 1
  done
}
# pg_repl_catch_up: waits (up to 120 s) until both standbys have replayed the primary's
# WAL up to its flush position now; sets CATCH_UP_S to the seconds that took.
pg_repl_catch_up() {
  local lsn t0=$EPOCHREALTIME
  lsn=$(pg_psql pgr0 -At -c "SELECT pg_current_wal_flush_lsn()")
  for _ in $(seq 1 1200); do
    if pg_repl_caught_up "$lsn"; then
      CATCH_UP_S=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}')
      return 0
    fi
    sleep 0.1
  done
  die "PG replicated: the standbys did not replay the primary's WAL up to $lsn within 120 s"
}

# ---- Workload C --------------------------------------------------------------------
workload_c() {
  local PG_TPS="" GET_OPS="" SCAN_RATE="" GET1_OPS=""
  if [[ "$SKIP_PG" == 0 ]]; then
    pg_start 0 pg
    log "PostgreSQL: pgbench -M prepared, point select by bigint PK, $PG_CLIENTS clients, ${SECONDS_PG}s"
    "${PGBENCH[@]}" -p "${PG_PORTS[pg]}" -T "$SECONDS_PG" -f "$WORK/select.sql" postgres >"$WORK/pgbench.out" 2>&1 ||
      { cat "$WORK/pgbench.out" >&2; die "pgbench failed"; }
    grep -E "number of transactions actually processed|latency average|^tps" "$WORK/pgbench.out"
    PG_TPS=$(awk '/^tps = / {print $3; exit}' "$WORK/pgbench.out")
    pg_stop pg
  fi

  if [[ "$SKIP_NYALA" == 0 ]]; then
    # shellcheck disable=SC2086  # TSERVER_FLAGS is a list of flags
    start_cluster rf1 1 ${TSERVER_FLAGS:-}
    local common=(-P "$HERE/ycsb/workloadc" -p master_addresses="${MASTER_ADDR[rf1]}"
                  -p recordcount="$RECORDS" -p fieldcount="$FIELDCOUNT" -p fieldlength="$FIELDLENGTH")
    log "Nyala: ycsb load, $RECORDS records, 4 threads"
    ycsb_load rf1 "$WORK/load.out" "${common[@]}" -threads 4
    log "Nyala: YCSB workload C, $YCSB_THREADS threads, Get API, $OPS reads"
    "$BIN/ycsb" run "${common[@]}" -p operationcount="$OPS" -p use_get_api=true \
      -threads "$YCSB_THREADS" >"$WORK/get.out" 2>&1 || { cat "$WORK/get.out" >&2; die "ycsb run (Get) failed"; }
    grep -E "OVERALL|\[READ\], (AverageLatency|99th|Return)" "$WORK/get.out"
    GET_OPS=$(ycsb_rate "$WORK/get.out")
    log "Nyala: YCSB workload C, $YCSB_THREADS threads, one-row Scan, $SCAN_OPS reads"
    "$BIN/ycsb" run "${common[@]}" -p operationcount="$SCAN_OPS" -p use_get_api=false \
      -threads "$YCSB_THREADS" >"$WORK/scan.out" 2>&1 || { cat "$WORK/scan.out" >&2; die "ycsb run (Scan) failed"; }
    grep -E "OVERALL|\[READ\], (AverageLatency|99th|Return)" "$WORK/scan.out"
    SCAN_RATE=$(ycsb_rate "$WORK/scan.out")
    # For the record: the Get API without the client's sharing of concurrent Gets.
    log "Nyala: YCSB workload C, $YCSB_THREADS threads, Get API, one RPC per Get, $SCAN_OPS reads"
    "$BIN/ycsb" run "${common[@]}" -p operationcount="$SCAN_OPS" -p use_get_api=true \
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
  return 0
}

# ---- Workload A --------------------------------------------------------------------
# Per run, by "<tag>,<round>" (tags pg, pgr, rf1, rf3): ops/s, server and client CPU
# per operation (µs), machine busy %, UPDATE average latency (ms).
declare -A RATE CPU_US CLIENT_US BUSY UPD_MS
# per_op <seconds> <ops>: microseconds per operation.
per_op() { awk -v c="$1" -v n="$2" 'BEGIN {printf "%.1f", (n > 0 ? c * 1e6 / n : 0)}'; }
# run_nyala_a <tag> <round>: one timed YCSB A run against cluster <tag>; prints and
# records it.
run_nyala_a() {
  local tag=$1 r=$2 out="$WORK/a-$1-$2.out"
  # shellcheck disable=SC2086  # TSERVER_PIDS is a list
  measure ${TSERVER_PIDS[$tag]} -- "$BIN/ycsb" run -P "$HERE/ycsb/workloada" \
    -p requestdistribution=uniform -p master_addresses="${MASTER_ADDR[$tag]}" \
    -p recordcount="$RECORDS" -p fieldcount="$FIELDCOUNT" -p fieldlength="$FIELDLENGTH" \
    -p operationcount=1000000000 -p maxexecutiontime="$SECONDS_RUN" \
    -threads "$YCSB_THREADS" >"$out" 2>&1 || { cat "$out" >&2; die "ycsb run ($tag) failed"; }
  RATE[$tag,$r]=$(ycsb_rate "$out")
  local ops
  ops=$(awk -F', ' '/\], Operations, / {n += $3} END {print n + 0}' "$out")
  CPU_US[$tag,$r]=$(per_op "$RUN_CPU_TOTAL_S" "$ops")
  CLIENT_US[$tag,$r]=$(per_op "$RUN_CLIENT_S" "$ops")
  BUSY[$tag,$r]=$RUN_BUSY
  UPD_MS[$tag,$r]=$(awk -F', ' '/^\[UPDATE\], AverageLatency/ {printf "%.3f", $3 / 1000}' "$out")
  log "Nyala $tag: $(printf '%.0f' "${RATE[$tag,$r]}") ops/s;" \
    "$(awk -F', ' '/^\[(READ|UPDATE)\], AverageLatency/ {printf "%s avg %.2f ms; ", $1, $3 / 1000}' "$out")" \
    "CPU per op: tablet servers ${CPU_US[$tag,$r]} µs (s per server: $RUN_CPU_S), ycsb" \
    "${CLIENT_US[$tag,$r]} µs; machine ${RUN_BUSY}% busy"
  local failed
  failed=$(ycsb_failed "$out")
  [[ $failed == 0 ]] || log "WARNING: $failed operations failed in the $tag run (counted in its rate)"
}
# run_pg_a <tag> <round>: one timed pgbench run, select.sql@50 + update.sql@50, against
# pg (the single server) or pgr (PG replicated: its primary; the CPU of the primary's
# and both standbys' process trees, counted until the standbys have replayed the run's
# WAL); prints and records it.
run_pg_a() {
  local tag=$1 r=$2 out="$WORK/pgbench-$1-$2.out" names=(pg) what=PostgreSQL i dt ticks=0 per="" txs
  local t0=() after=""
  if [[ $tag == pgr ]]; then
    names=(pgr0 pgr1 pgr2)
    what="PG replicated"
    pg_repl_wait
  fi
  log "$what: pgbench -M prepared, select.sql@50 + update.sql@50, $PG_CLIENTS clients"
  for i in "${!names[@]}"; do t0[i]=$(tree_ticks "${PG_PIDS[${names[i]}]}"); done
  measure -- "${PGBENCH[@]}" -p "${PG_PORTS[${names[0]}]}" -T "$SECONDS_RUN" -f "$WORK/select.sql@50" \
    -f "$WORK/update.sql@50" postgres >"$out" 2>&1 || { cat "$out" >&2; die "pgbench ($what) failed"; }
  if [[ $tag == pgr ]]; then
    pg_repl_catch_up
    after="; standbys caught up ${CATCH_UP_S}s after the run"
  fi
  for i in "${!names[@]}"; do
    dt=$(($(tree_ticks "${PG_PIDS[${names[i]}]}") - t0[i]))
    ticks=$((ticks + dt))
    per+="${per:+, }$([[ ${names[i]} == pgr0 ]] && echo primary || echo "s${names[i]#pgr}")"
    per+=" $(awk -v t=$dt 'BEGIN {printf "%.2f", t / 100}')"
  done
  RATE[$tag,$r]=$(awk '/^tps = / {print $3; exit}' "$out")
  txs=$(awk '/number of transactions actually processed/ {print $NF; exit}' "$out")
  CPU_US[$tag,$r]=$(per_op "$(awk -v t=$ticks 'BEGIN {print t / 100}')" "$txs")
  CLIENT_US[$tag,$r]=$(per_op "$RUN_CLIENT_S" "$txs")
  BUSY[$tag,$r]=$RUN_BUSY
  UPD_MS[$tag,$r]=$(awk '/^SQL script 2:/ {s = 1} /^ - latency average/ && s {print $5; exit}' "$out")
  local server="server ${CPU_US[$tag,$r]} µs"
  [[ $tag == pgr ]] && server="servers ${CPU_US[$tag,$r]} µs (s per server: $per)"
  log "$what: $(printf '%.0f' "${RATE[$tag,$r]}") tx/s;" \
    "$(awk '/^SQL script 1:/ {s = "SELECT"} /^SQL script 2:/ {s = "UPDATE"}
        /^ - latency average/ && s {printf "%s avg %s ms; ", s, $5}' "$out")" \
    "CPU per op: $server, pgbench ${CLIENT_US[$tag,$r]} µs; machine ${RUN_BUSY}% busy$after"
  grep -E "failed|aborted" "$out" | grep -v ' 0 (0.000%)' || true
}

workload_a() {
  local tags=() r t
  if [[ "$SKIP_PG" == 0 ]]; then
    pg_start 1 pg
    tags+=(pg)
    if [[ "$SKIP_PG_REPL" == 0 ]]; then
      pg_repl_start
      tags+=(pgr)
    fi
  fi
  if [[ "$SKIP_NYALA" == 0 ]]; then
    # shellcheck disable=SC2086  # TSERVER_FLAGS is a list of flags
    start_cluster rf1 1 ${TSERVER_FLAGS:-}
    tags+=(rf1)
    if [[ "$SKIP_RF3" == 0 ]]; then
      # shellcheck disable=SC2086
      start_cluster rf3 3 ${TSERVER_FLAGS:-}
      tags+=(rf3)
    fi
    for t in rf1 rf3; do
      [[ $t == rf3 && "$SKIP_RF3" != 0 ]] && continue
      log "Nyala $t: ycsb load, $RECORDS records, 4 threads, num_replicas=${t#rf}"
      ycsb_load "$t" "$WORK/load-$t.out" -P "$HERE/ycsb/workloada" -p recordcount="$RECORDS" \
        -p fieldcount="$FIELDCOUNT" -p fieldlength="$FIELDLENGTH" -p num_replicas="${t#rf}" -threads 4
    done
  fi
  for ((r = 1; r <= ROUNDS; r++)); do
    log "---- round $r of $ROUNDS: ${tags[*]}, ${SECONDS_RUN}s each; load average $(cut -d' ' -f1-3 /proc/loadavg)"
    for t in "${tags[@]}"; do
      case $t in
        pg | pgr) run_pg_a "$t" "$r" ;;
        *) run_nyala_a "$t" "$r" ;;
      esac
    done
  done

  echo
  echo "== summary: YCSB A (50% reads, 50% updates, uniform), $RECORDS rows, ${SECONDS_RUN}s runs;" \
    "pgbench $PG_CLIENTS clients, ycsb $YCSB_THREADS threads; load average now $(cut -d' ' -f1-3 /proc/loadavg)"
  [[ " ${tags[*]} " == *" pgr "* ]] && echo "PG: one PostgreSQL server; PGrep: a primary and 2" \
    "streaming standbys, synchronous_standby_names 'ANY 1 (s1, s2)', its server CPU the three servers' together"
  printf "%-6s %12s %12s %12s %12s %8s %8s %8s %9s %s\n" round "PG tx/s" "PGrep tx/s" "RF1 ops/s" "RF3 ops/s" \
    RF1/PG RF3/PG RF3/RF1 RF3/PGrep "server µs CPU/op PG, PGrep, RF1, RF3 | client µs CPU/op PG, PGrep, RF1, RF3 | machine busy % PG, PGrep, RF1, RF3"
  local rf1pg=() rf3pg=() rf3rf1=() rf3pgr=() pgs=() pgrs=() rf1s=() rf3s=() tag
  local -A upd=()
  for ((r = 1; r <= ROUNDS; r++)); do
    local pg=${RATE[pg,$r]:-} pgr=${RATE[pgr,$r]:-} a=${RATE[rf1,$r]:-} b=${RATE[rf3,$r]:-}
    [[ -n $pg ]] && pgs+=("$pg")
    [[ -n $pgr ]] && pgrs+=("$pgr")
    [[ -n $a ]] && rf1s+=("$a")
    [[ -n $b ]] && rf3s+=("$b")
    [[ -n $pg && -n $a ]] && rf1pg+=("$(ratio "$a" "$pg")")
    [[ -n $pg && -n $b ]] && rf3pg+=("$(ratio "$b" "$pg")")
    [[ -n $a && -n $b ]] && rf3rf1+=("$(ratio "$b" "$a")")
    [[ -n $pgr && -n $b ]] && rf3pgr+=("$(ratio "$b" "$pgr")")
    for tag in pg pgr rf1 rf3; do
      [[ -n ${UPD_MS[$tag,$r]:-} ]] && upd[$tag]+="${upd[$tag]:+ }${UPD_MS[$tag,$r]}"
    done
    printf "%-6s %12.0f %12.0f %12.0f %12.0f %8s %8s %8s %9s %s, %s, %s, %s | %s, %s, %s, %s | %s, %s, %s, %s\n" \
      "$r" "${pg:-0}" "${pgr:-0}" "${a:-0}" "${b:-0}" \
      "$( [[ -n $pg && -n $a ]] && ratio "$a" "$pg" || echo -)" \
      "$( [[ -n $pg && -n $b ]] && ratio "$b" "$pg" || echo -)" \
      "$( [[ -n $a && -n $b ]] && ratio "$b" "$a" || echo -)" \
      "$( [[ -n $pgr && -n $b ]] && ratio "$b" "$pgr" || echo -)" \
      "${CPU_US[pg,$r]:--}" "${CPU_US[pgr,$r]:--}" "${CPU_US[rf1,$r]:--}" "${CPU_US[rf3,$r]:--}" \
      "${CLIENT_US[pg,$r]:--}" "${CLIENT_US[pgr,$r]:--}" "${CLIENT_US[rf1,$r]:--}" "${CLIENT_US[rf3,$r]:--}" \
      "${BUSY[pg,$r]:--}" "${BUSY[pgr,$r]:--}" "${BUSY[rf1,$r]:--}" "${BUSY[rf3,$r]:--}"
  done
  printf "%-6s %12s %12s %12s %12s %8s %8s %8s %9s\n" median "$(rounded "$(median "${pgs[@]}")")" \
    "$(rounded "$(median "${pgrs[@]}")")" "$(rounded "$(median "${rf1s[@]}")")" \
    "$(rounded "$(median "${rf3s[@]}")")" "$(median "${rf1pg[@]}")" "$(median "${rf3pg[@]}")" \
    "$(median "${rf3rf1[@]}")" "$(median "${rf3pgr[@]}")"
  [[ ${#rf1pg[@]} -gt 0 ]] && echo "Nyala RF1 / PostgreSQL, median of the rounds' ratios: $(median "${rf1pg[@]}")  (target >= 1.0)"
  [[ ${#rf3pg[@]} -gt 0 ]] && echo "Nyala RF3 / PostgreSQL, median of the rounds' ratios: $(median "${rf3pg[@]}")"
  [[ ${#rf3pgr[@]} -gt 0 ]] && echo "Nyala RF3 / PG replicated, median of the rounds' ratios: $(median "${rf3pgr[@]}")"
  # shellcheck disable=SC2086  # upd[<tag>] is a list of numbers
  if [[ -n ${upd[rf3]:-} && -n ${upd[pgr]:-} ]]; then
    local u3 ur
    u3=$(median ${upd[rf3]})
    ur=$(median ${upd[pgr]})
    echo "UPDATE average latency, median of the rounds: Nyala RF3 ${u3} ms, PG replicated ${ur} ms" \
      "(RF3 / PG replicated: $(ratio "$u3" "$ur")); PostgreSQL $(median ${upd[pg]:-}) ms," \
      "Nyala RF1 $(median ${upd[rf1]:-}) ms"
  fi
  return 0
}

if [[ $WORKLOAD == c ]]; then workload_c; else workload_a; fi
exit 0
