#!/usr/bin/env bash
# Starts a local Nyala cluster on loopback; see usage() below.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# Installed (<prefix>/share/nyala/scripts, no CMakeLists.txt beside conf/), the
# daemons are in <prefix>/bin and the cluster's directory defaults to ./nyala-cluster.
if [ -f "$ROOT/CMakeLists.txt" ]; then
  DEFAULT_BIN=$ROOT/build/bin DEFAULT_DATA=$ROOT/nyala-cluster
else
  DEFAULT_BIN=$(cd "$ROOT/../.." && pwd)/bin DEFAULT_DATA=$PWD/nyala-cluster
fi
TSERVERS=3
DATA=${NYALA_CLUSTER_DIR:-$DEFAULT_DATA}
BASE_PORT=7051
usage() {
  cat <<'USAGE'
Usage: scripts/start-cluster.sh [--tservers N] [--data DIR] [--base-port P]

Starts a local Nyala cluster on loopback: one master and N tablet servers (default 3),
each launched from conf/*.gflags with its own data and log directory under DIR
(default: ./nyala-cluster, or $NYALA_CLUSTER_DIR). Waits until every tablet server has
registered with the master, then prints the addresses and web UI URLs. PIDs are
recorded in DIR/pids for scripts/stop-cluster.sh.

Refuses to start, before touching any file, when a daemon of a cluster in DIR is still
running (by the PIDs in DIR/pids, and by the data-dir locks the daemons hold, so also
when DIR/pids is gone), or when one of the ports is in use.

Ports: master RPC P (default 7051) and web P+1000; tablet server i (0-based) RPC
P+10+i and web P+1010+i.

Environment:
  NYALA_BIN_DIR        where nyala-master, nyala-tserver and nyala are (default: build/bin;
                       installed: the bin/ of the install prefix)
  NYALA_MASTER_FLAGS   extra master flags, space-separated,
                       e.g. --tserver_unresponsive_timeout_ms=5000
  NYALA_TSERVER_FLAGS  extra tablet server flags, space-separated
USAGE
}
while [ $# -gt 0 ]; do
  case "$1" in
    --tservers) TSERVERS=$2; shift 2 ;;
    --tservers=*) TSERVERS=${1#*=}; shift ;;
    --data) DATA=$2; shift 2 ;;
    --data=*) DATA=${1#*=}; shift ;;
    --base-port) BASE_PORT=$2; shift 2 ;;
    --base-port=*) BASE_PORT=${1#*=}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "start-cluster: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
case "$TSERVERS" in ''|*[!0-9]*) echo "start-cluster: --tservers takes a number" >&2; exit 2 ;; esac
BIN=${NYALA_BIN_DIR:-$DEFAULT_BIN}
for b in nyala-master nyala-tserver nyala; do
  if [ ! -x "$BIN/$b" ]; then
    echo "start-cluster: $BIN/$b is missing; build first (scripts/quickstart.sh, or cmake --build build -j2)" >&2
    exit 1
  fi
done
case "$BASE_PORT" in ''|*[!0-9]*) echo "start-cluster: --base-port takes a number" >&2; exit 2 ;; esac
if [ $((BASE_PORT + 1010 + TSERVERS)) -gt 65535 ]; then
  echo "start-cluster: --base-port $BASE_PORT is too high for $TSERVERS tablet servers" >&2
  exit 2
fi
mkdir -p "$DATA"
DATA=$(cd "$DATA" && pwd)

# Refuse to start over a running cluster, before changing anything under $DATA: a
# second start used to remove the live daemons' .info files and truncate their logs
# before the daemons' own data-dir lock stopped it.
for pidfile in "$DATA"/pids/*.pid; do
  [ -e "$pidfile" ] || continue
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    echo "start-cluster: a cluster is already running from $DATA ($(basename "$pidfile" .pid) has pid $pid)." >&2
    echo "Stop it first: scripts/stop-cluster.sh --data $DATA" >&2
    exit 1
  fi
done
# Each daemon holds an exclusive flock on <data dir>/LOCK while it runs (fs_manager.cc)
# and writes "pid N" into it; a lock we cannot take means a live daemon, whatever
# pids/ says.
lock_held() {  # lock_held <lock file>: true when a process holds it
  if command -v flock >/dev/null 2>&1; then
    ! flock -n "$1" true 2>/dev/null
  else  # no flock(1): trust the pid written in the file
    local pid
    pid=$(sed -n 's/^pid \([0-9][0-9]*\).*/\1/p' "$1" 2>/dev/null)
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
  fi
}
holders=()
holder_pids=()
for lock in "$DATA"/*/LOCK; do
  [ -e "$lock" ] || continue
  if lock_held "$lock"; then
    holder=$(head -c 64 "$lock" 2>/dev/null || true)
    holders+=("$(basename "$(dirname "$lock")") (${holder:-pid unknown})")
    case "$holder" in "pid "*) holder_pids+=("${holder#pid }") ;; esac
  fi
done
if [ ${#holders[@]} -gt 0 ]; then
  echo "start-cluster: nyala daemons are already running on $DATA/: ${holders[*]}," \
    "each holding its data dir's LOCK." >&2
  echo "Stop them first: scripts/stop-cluster.sh --data $DATA (it finds them by their locks" \
    "when pids/ is gone), or by PID: kill ${holder_pids[*]}" >&2
  exit 1
fi
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
ports=("$BASE_PORT" $((BASE_PORT + 1000)))
for i in $(seq 0 $((TSERVERS - 1))); do ports+=($((BASE_PORT + 10 + i)) $((BASE_PORT + 1010 + i))); done
for p in "${ports[@]}"; do
  if port_in_use "$p"; then
    echo "start-cluster: port $p on 127.0.0.1 is already in use (another cluster or program);" \
      "pick other ports with --base-port" >&2
    exit 1
  fi
done
mkdir -p "$DATA/pids" "$DATA/logs"
rm -f "$DATA"/pids/*.pid

started=()
cleanup_on_failure() {
  echo "start-cluster: stopping what was started" >&2
  for name in "${started[@]}"; do
    pid=$(cat "$DATA/pids/$name.pid" 2>/dev/null || true)
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
  done
}

# start_daemon <name> <binary> <flagfile> <rpc port> <web port> [flags...]
start_daemon() {
  local name=$1 binary=$2 flagfile=$3 rpc=$4 web=$5
  shift 5
  mkdir -p "$DATA/logs/$name"
  rm -f "$DATA/$name.info"
  nohup "$BIN/$binary" --flagfile="$ROOT/conf/$flagfile" \
    --fs_data_dirs="$DATA/$name" --log_dir="$DATA/logs/$name" \
    --rpc_bind_addresses="127.0.0.1:$rpc" --webserver_port="$web" \
    --webserver_interface=127.0.0.1 --server_dump_info_path="$DATA/$name.info" \
    "$@" >"$DATA/logs/$name.out" 2>&1 &
  echo $! >"$DATA/pids/$name.pid"
  started+=("$name")
  local pid=$!
  for _ in $(seq 1 300); do
    [ -s "$DATA/$name.info" ] && return 0
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "start-cluster: $name exited during start-up:" >&2
      tail -n 20 "$DATA/logs/$name.out" >&2
      ls "$DATA/logs/$name"/*.ERROR >/dev/null 2>&1 && tail -n 20 "$DATA/logs/$name"/*.ERROR >&2
      cleanup_on_failure
      exit 1
    fi
    sleep 0.1
  done
  echo "start-cluster: $name did not start within 30 s; see $DATA/logs/$name" >&2
  cleanup_on_failure
  exit 1
}

MASTER_RPC=$BASE_PORT
MASTER="127.0.0.1:$MASTER_RPC"
# shellcheck disable=SC2086
start_daemon master nyala-master master.gflags "$MASTER_RPC" $((BASE_PORT + 1000)) \
  ${NYALA_MASTER_FLAGS:-}
for i in $(seq 0 $((TSERVERS - 1))); do
  start_daemon "tserver-$i" nyala-tserver tserver.gflags $((BASE_PORT + 10 + i)) \
    $((BASE_PORT + 1010 + i)) --tserver_master_addrs="$MASTER" ${NYALA_TSERVER_FLAGS:-}
done
echo "$MASTER" >"$DATA/master_addresses"

# Wait until every tablet server has registered.
live=0
for _ in $(seq 1 300); do
  live=$("$BIN/nyala" tserver list "$MASTER" --format=csv 2>/dev/null | grep -c ',LIVE,' || true)
  [ "$live" -ge "$TSERVERS" ] && break
  sleep 0.1
done
if [ "$live" -lt "$TSERVERS" ]; then
  echo "start-cluster: only $live of $TSERVERS tablet servers registered within 30 s; see $DATA/logs" >&2
  cleanup_on_failure
  exit 1
fi

echo "Nyala cluster running from $DATA"
echo "  master       rpc $MASTER   web http://127.0.0.1:$((BASE_PORT + 1000))/"
for i in $(seq 0 $((TSERVERS - 1))); do
  echo "  tserver-$i    rpc 127.0.0.1:$((BASE_PORT + 10 + i))   web http://127.0.0.1:$((BASE_PORT + 1010 + i))/"
done
echo "Master addresses for clients and the CLI: $MASTER"
echo "Stop it with: scripts/stop-cluster.sh --data $DATA"
