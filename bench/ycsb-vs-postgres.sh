#!/usr/bin/env bash
# Point reads by primary key, PostgreSQL 15 vs Nyala, back to back on this machine.
#
#  1. PostgreSQL 15: a private cluster in a temp dir, a 1M-row table
#     kv(k bigint primary key, v text), then `pgbench -M prepared` with 64 clients
#     selecting one row by a random key for $SECONDS_PG seconds.
#  2. Nyala: a master and one tablet server from build/bin in a temp dir, `ycsb load`
#     of 1M records, then YCSB workload C (read only, zipfian) with 100 threads,
#     through the Get API and through a one-row Scan.
#
# Usage: bench/ycsb-vs-postgres.sh [build dir, default build]
# Env: RECORDS (1000000), OPS (1000000), SECONDS_PG (30), PG_BIN (/usr/lib/postgresql/15/bin),
#      FIELDCOUNT (1), FIELDLENGTH (100).
# Needs the Debian packages postgresql-15 and postgresql-client-15 (pgbench).
set -euo pipefail

BUILD=${1:-build}
BIN=$(cd "$BUILD/bin" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
RECORDS=${RECORDS:-1000000}
OPS=${OPS:-1000000}
SECONDS_PG=${SECONDS_PG:-30}
FIELDCOUNT=${FIELDCOUNT:-1}
FIELDLENGTH=${FIELDLENGTH:-100}
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
WORK=$(mktemp -d /tmp/ycsb-vs-pg.XXXXXX)
PIDS=()

cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [[ -f "$WORK/pg/postmaster.pid" ]]; then "$PG_BIN/pg_ctl" -D "$WORK/pg" -m fast stop >/dev/null 2>&1 || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# ---- PostgreSQL ------------------------------------------------------------------
PGPORT=$(free_port)
"$PG_BIN/initdb" -D "$WORK/pg" -U postgres --auth=trust >/dev/null
cat >> "$WORK/pg/postgresql.conf" <<CONF
port = $PGPORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$WORK'
max_connections = 200
shared_buffers = 512MB
fsync = off
synchronous_commit = off
CONF
"$PG_BIN/pg_ctl" -D "$WORK/pg" -l "$WORK/pg.log" -w start >/dev/null
PSQL=(psql -h 127.0.0.1 -p "$PGPORT" -U postgres -q -v ON_ERROR_STOP=1)
"${PSQL[@]}" -c "CREATE TABLE kv (k bigint PRIMARY KEY, v text)"
"${PSQL[@]}" -c "INSERT INTO kv SELECT g, repeat('x', $FIELDLENGTH) FROM generate_series(1, $RECORDS) g"
"${PSQL[@]}" -c "VACUUM ANALYZE kv"
cat > "$WORK/select.sql" <<SQL
\set k random(1, $RECORDS)
SELECT v FROM kv WHERE k = :k;
SQL
echo "== PostgreSQL 15: pgbench -M prepared, point select by bigint PK, $RECORDS rows, 64 clients, ${SECONDS_PG}s"
pgbench -h 127.0.0.1 -p "$PGPORT" -U postgres -n -M prepared -c 64 -j 2 -T "$SECONDS_PG" \
  -f "$WORK/select.sql" postgres | grep -E "tps|latency average|number of transactions"
"$PG_BIN/pg_ctl" -D "$WORK/pg" -m fast stop >/dev/null

# ---- Nyala -------------------------------------------------------------------------
MPORT=$(free_port)
TPORT=$(free_port)
mkdir -p "$WORK/master" "$WORK/ts"
"$BIN/nyala-master" --fs_data_dirs="$WORK/master" --rpc_bind_addresses=127.0.0.1:$MPORT \
  --webserver_port=0 --log_dir="$WORK" >"$WORK/master.out" 2>&1 &
PIDS+=($!)
"$BIN/nyala-tserver" --fs_data_dirs="$WORK/ts" --rpc_bind_addresses=127.0.0.1:$TPORT \
  --webserver_port=0 --tserver_master_addrs=127.0.0.1:$MPORT --log_dir="$WORK" >"$WORK/ts.out" 2>&1 &
PIDS+=($!)
for i in $(seq 1 100); do
  if "$BIN/ycsb" load -P "$HERE/ycsb/workloadc" -p master_addresses=127.0.0.1:$MPORT \
       -p recordcount=0 -p table=probe >/dev/null 2>&1; then break; fi
  sleep 0.2
done
COMMON=(-P "$HERE/ycsb/workloadc" -p master_addresses=127.0.0.1:$MPORT -p recordcount=$RECORDS
        -p fieldcount=$FIELDCOUNT -p fieldlength=$FIELDLENGTH)
echo "== Nyala: ycsb load, $RECORDS records"
"$BIN/ycsb" load "${COMMON[@]}" -threads 4 | grep OVERALL
echo "== Nyala: YCSB workload C, 100 threads, Get API"
"$BIN/ycsb" run "${COMMON[@]}" -p operationcount=$OPS -p use_get_api=true -threads 100 | grep -E "OVERALL|READ"
echo "== Nyala: YCSB workload C, 100 threads, one-row Scan"
"$BIN/ycsb" run "${COMMON[@]}" -p operationcount=$((OPS / 4)) -p use_get_api=false -threads 100 | grep -E "OVERALL|READ"
