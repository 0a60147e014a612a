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
       scripts/start-cluster.sh --only master|tserver-N [--data DIR]

Starts a local Nyala cluster on loopback: one master and N tablet servers (default 3),
each launched from conf/*.gflags with its own data and log directory under DIR
(default: ./nyala-cluster, or $NYALA_CLUSTER_DIR). Waits until every tablet server has
registered with the master, then prints the addresses and web UI URLs. PIDs are
recorded in DIR/pids for scripts/stop-cluster.sh, and each daemon's command line in
DIR/cmdlines/NAME (its arguments separated by NUL bytes, like /proc/PID/cmdline).

Refuses to start, before touching any file, when a daemon of a cluster in DIR is still
running (by the PIDs in DIR/pids, and by the data-dir locks the daemons hold, so also
when DIR/pids is gone), or when one of the ports is in use (naming the port and, when
ss(8) can tell, the process holding it).

Ports: master RPC P (default 7051) and web P+1000; tablet server i (0-based) RPC
P+10+i and web P+1010+i. Warns when one of them lies in the kernel's ephemeral port
range (/proc/sys/net/ipv4/ip_local_port_range, usually 32768-60999), where outgoing
connections take their local ports and may hold one of them when a daemon (re)starts.

--only NAME starts one daemon (master, or tserver-N) of the cluster started earlier
from DIR, again with the command line recorded in DIR/cmdlines/NAME (same binary,
flags, ports and data dir; NYALA_*_FLAGS are not read again), while the others keep
running. Refuses when that daemon still runs or its ports are in use. Waits until it
is up: a tablet server until it has heartbeated to the master, the master until every
running tablet server has heartbeated to it. scripts/restart-daemon.sh stops a daemon,
then starts it with --only.

Environment:
  NYALA_BIN_DIR        where nyala-master, nyala-tserver and nyala are (default: build/bin;
                       installed: the bin/ of the install prefix)
  NYALA_MASTER_FLAGS   extra master flags, space-separated,
                       e.g. --tserver_unresponsive_timeout_ms=5000
  NYALA_TSERVER_FLAGS  extra tablet server flags, space-separated
USAGE
}
ONLY=""
while [ $# -gt 0 ]; do
  case "$1" in
    --tservers) TSERVERS=$2; shift 2 ;;
    --tservers=*) TSERVERS=${1#*=}; shift ;;
    --data) DATA=$2; shift 2 ;;
    --data=*) DATA=${1#*=}; shift ;;
    --base-port) BASE_PORT=$2; shift 2 ;;
    --base-port=*) BASE_PORT=${1#*=}; shift ;;
    --only) ONLY=$2; shift 2 ;;
    --only=*) ONLY=${1#*=}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "start-cluster: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
case "$ONLY" in
  ''|master) ;;
  tserver-*[!0-9]*|tserver-) echo "start-cluster: --only takes master or tserver-N, not $ONLY" >&2; exit 2 ;;
  tserver-*) ;;
  *) echo "start-cluster: --only takes master or tserver-N, not $ONLY" >&2; exit 2 ;;
esac
case "$TSERVERS" in ''|*[!0-9]*) echo "start-cluster: --tservers takes a number" >&2; exit 2 ;; esac
BIN=${NYALA_BIN_DIR:-$DEFAULT_BIN}
for b in nyala-master nyala-tserver nyala; do
  if [ ! -x "$BIN/$b" ]; then
    echo "start-cluster: $BIN/$b is missing; build first (scripts/quickstart.sh, or cmake --build build -j2)" >&2
    exit 1
  fi
done
BIN=$(cd "$BIN" && pwd)  # absolute in the recorded command lines, for --only from anywhere
case "$BASE_PORT" in ''|*[!0-9]*) echo "start-cluster: --base-port takes a number" >&2; exit 2 ;; esac
if [ $((BASE_PORT + 1010 + TSERVERS)) -gt 65535 ]; then
  echo "start-cluster: --base-port $BASE_PORT is too high for $TSERVERS tablet servers" >&2
  exit 2
fi
if [ -n "$ONLY" ] && [ ! -d "$DATA" ]; then
  echo "start-cluster: --only $ONLY: $DATA does not exist; pass the cluster's directory with --data" >&2
  exit 1
fi
mkdir -p "$DATA"
DATA=$(cd "$DATA" && pwd)

# With --only, the command line recorded for that daemon.
if [ -n "$ONLY" ]; then
  if [ ! -s "$DATA/cmdlines/$ONLY" ]; then
    echo "start-cluster: no command line recorded for $ONLY in $DATA/cmdlines/ (not a daemon" \
      "of this cluster, or a cluster started by an older start-cluster.sh); stop the cluster" \
      "and start it whole: scripts/stop-cluster.sh --data $DATA; scripts/start-cluster.sh --data $DATA" >&2
    exit 1
  fi
  ONLY_ARGS=()
  mapfile -d '' -t ONLY_ARGS <"$DATA/cmdlines/$ONLY"
fi

# alive PID: the process runs (a zombie, dead but not yet reaped, does not).
alive() { kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }

# Refuse to start over a running cluster, before changing anything under $DATA: a
# second start used to remove the live daemons' .info files and truncate their logs
# before the daemons' own data-dir lock stopped it. With --only, only the daemon to
# start matters.
for pidfile in "$DATA"/pids/*.pid; do
  [ -e "$pidfile" ] || continue
  name=$(basename "$pidfile" .pid)
  [ -n "$ONLY" ] && [ "$name" != "$ONLY" ] && continue
  pid=$(cat "$pidfile")
  if alive "$pid"; then
    if [ -n "$ONLY" ]; then
      echo "start-cluster: $ONLY of the cluster in $DATA is already running (pid $pid)." >&2
      echo "Restart it with: scripts/restart-daemon.sh --data $DATA $ONLY" >&2
    else
      echo "start-cluster: a cluster is already running from $DATA ($name has pid $pid)." >&2
      echo "Stop it first: scripts/stop-cluster.sh --data $DATA" >&2
    fi
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
    [ -n "$pid" ] && alive "$pid"
  fi
}
holders=()
holder_pids=()
for lock in "$DATA"/*/LOCK; do
  [ -e "$lock" ] || continue
  name=$(basename "$(dirname "$lock")")
  [ -n "$ONLY" ] && [ "$name" != "$ONLY" ] && continue
  if lock_held "$lock"; then
    holder=$(head -c 64 "$lock" 2>/dev/null || true)
    holders+=("$name (${holder:-pid unknown})")
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

# The ports to bind: from --base-port, or with --only from the recorded command line.
ports=()
if [ -n "$ONLY" ]; then
  for arg in "${ONLY_ARGS[@]}"; do
    case "$arg" in
      --rpc_bind_addresses=*) ports+=("${arg##*:}") ;;
      --webserver_port=*) ports+=("${arg#*=}") ;;
    esac
  done
else
  ports=("$BASE_PORT" $((BASE_PORT + 1000)))
  for i in $(seq 0 $((TSERVERS - 1))); do ports+=($((BASE_PORT + 10 + i)) $((BASE_PORT + 1010 + i))); done
fi
# A port in the kernel's ephemeral range may be the local port of some outgoing
# connection when a daemon binds it (at this start or a later restart): warn.
if read -r eph_lo eph_hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null; then
  in_range=()
  for p in "${ports[@]}"; do
    [ "$p" -ge "$eph_lo" ] && [ "$p" -le "$eph_hi" ] && in_range+=("$p")
  done
  if [ ${#in_range[@]} -gt 0 ]; then
    echo "start-cluster: warning: port(s) ${in_range[*]} lie in the kernel's ephemeral port range" \
      "$eph_lo-$eph_hi (/proc/sys/net/ipv4/ip_local_port_range), from which outgoing connections" \
      "take their local ports: one may hold a daemon's port when it starts or restarts." >&2
    if [ -z "$ONLY" ]; then
      echo "  Pick a --base-port of at most $((eph_lo - 1010 - TSERVERS)) (e.g. the default 7051)," \
        "or above $eph_hi; or keep outgoing connections off them:" \
        "sysctl -w net.ipv4.ip_local_reserved_ports=$(IFS=,; echo "${in_range[*]}")" >&2
    fi
  fi
fi
# port_holder PORT: prints what holds TCP port PORT where a daemon binding 127.0.0.1
# would collide (a listener, or a connection whose local port it is), or nothing.
port_holder() {
  local p=$1 state local_addr peer procs
  if command -v ss >/dev/null 2>&1; then
    # TIME-WAIT and closing sockets, such as a stopped daemon's last connections, do not
    # stop a bind with SO_REUSEADDR; neither do sockets on another local address.
    while read -r state _ _ local_addr peer procs; do
      case "$state" in LISTEN | ESTAB | SYN-SENT | SYN-RECV | CLOSE-WAIT) ;; *) continue ;; esac
      case "$local_addr" in
        127.0.0.1:* | 0.0.0.0:* | \*:* | \[::\]:* | \[::ffff:127.0.0.1\]:*) ;;
        *) continue ;;
      esac
      local who=""
      if [[ "$procs" =~ \(\"([^\"]*)\",pid=([0-9]+) ]]; then
        who=" by ${BASH_REMATCH[1]} (pid ${BASH_REMATCH[2]})"
      fi
      if [ "$state" = LISTEN ]; then
        echo "listened on$who"
      else
        echo "the local port of a connection $local_addr -> $peer ($state)$who"
      fi
      return 0
    done < <(ss -Htanp "( sport = :$p )" 2>/dev/null)
    return 0
  fi
  # No ss(8): a listener is all that can be seen.
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "listened on"; fi
}
for p in "${ports[@]}"; do
  holder=$(port_holder "$p")
  if [ -n "$holder" ]; then
    echo "start-cluster: port $p on 127.0.0.1 is already in use ($holder);" \
      "nothing was started." >&2
    if [ -n "$ONLY" ]; then
      echo "  $ONLY needs the ports it was started with; free port $p, or stop the cluster" \
        "and start it again with another --base-port" >&2
    else
      echo "  Pick other ports with --base-port (another cluster or program holds this one)" >&2
    fi
    exit 1
  fi
done
mkdir -p "$DATA/pids" "$DATA/logs" "$DATA/cmdlines"
if [ -z "$ONLY" ]; then
  rm -f "$DATA"/pids/*.pid "$DATA"/cmdlines/*
fi

started=()
cleanup_on_failure() {
  echo "start-cluster: stopping what was started" >&2
  for name in "${started[@]}"; do
    pid=$(cat "$DATA/pids/$name.pid" 2>/dev/null || true)
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
  done
}

# launch_daemon <name> <command line...>: starts it in the background with its output
# in logs/<name>.out (appended to with --only), records its PID, and waits until it has
# written <name>.info (it serves RPCs then).
launch_daemon() {
  local name=$1
  shift
  mkdir -p "$DATA/logs/$name"
  rm -f "$DATA/$name.info"
  if [ -n "$ONLY" ]; then
    echo "==== $(date -u +%Y-%m-%dT%H:%M:%SZ) started again by start-cluster.sh --only $name" \
      >>"$DATA/logs/$name.out"
    nohup "$@" >>"$DATA/logs/$name.out" 2>&1 &
  else
    nohup "$@" >"$DATA/logs/$name.out" 2>&1 &
  fi
  local pid=$!
  echo "$pid" >"$DATA/pids/$name.pid"
  started+=("$name")
  for _ in $(seq 1 300); do
    [ -s "$DATA/$name.info" ] && return 0
    if ! alive "$pid"; then
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

# start_daemon <name> <binary> <flagfile> <rpc port> <web port> [flags...]: its command
# line, recorded in cmdlines/<name> for --only, then launched.
start_daemon() {
  local name=$1 binary=$2 flagfile=$3 rpc=$4 web=$5
  shift 5
  local cmd=("$BIN/$binary" --flagfile="$ROOT/conf/$flagfile"
    --fs_data_dirs="$DATA/$name" --log_dir="$DATA/logs/$name"
    --rpc_bind_addresses="127.0.0.1:$rpc" --webserver_port="$web"
    --webserver_interface=127.0.0.1 --server_dump_info_path="$DATA/$name.info" "$@")
  printf '%s\0' "${cmd[@]}" >"$DATA/cmdlines/$name"
  launch_daemon "$name" "${cmd[@]}"
}

info_field() { sed -n "s/^$2=//p" "$DATA/$1.info" 2>/dev/null | head -1; }
running() {  # running <name>: its recorded PID is alive
  local pid
  pid=$(cat "$DATA/pids/$1.pid" 2>/dev/null) && [ -n "$pid" ] && alive "$pid"
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

if [ -n "$ONLY" ]; then
  MASTER=$(head -1 "$DATA/master_addresses" 2>/dev/null || true)
  launched_ms=$(now_ms)
  launch_daemon "$ONLY" "${ONLY_ARGS[@]}"
  # The tablet servers that must heartbeat to the master (listed by uuid): the one
  # started, or for a master every tablet server that runs.
  waiting_for=()
  if [ "$ONLY" = master ]; then
    for info in "$DATA"/tserver-*.info; do
      [ -e "$info" ] || continue
      name=$(basename "$info" .info)
      running "$name" && waiting_for+=("$name")
    done
  elif [ -n "$MASTER" ] && running master; then
    waiting_for=("$ONLY")
  else
    echo "start-cluster: the master of $DATA is not running; $ONLY will register when it is" >&2
  fi
  # A heartbeat newer than the launch: the master's last_heartbeat_ms for the server is
  # below the time since.
  missing=("${waiting_for[@]}")
  for _ in $(seq 1 300); do
    [ ${#missing[@]} -eq 0 ] && break
    list=$("$BIN/nyala" tserver list "$MASTER" --format=csv --timeout_ms=2000 2>/dev/null || true)
    since=$(($(now_ms) - launched_ms))
    still=()
    for name in "${missing[@]}"; do
      uuid=$(info_field "$name" uuid)
      ms=$(awk -F, -v u="$uuid" '$1 == u && $3 == "LIVE" { print $4 }' <<<"$list")
      if [ -z "$ms" ] || [ "$ms" -ge "$since" ]; then still+=("$name"); fi
    done
    missing=("${still[@]}")
    [ ${#missing[@]} -eq 0 ] && break
    sleep 0.1
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "start-cluster: ${missing[*]} did not heartbeat to the master at $MASTER within 30 s" \
      "of $ONLY's start; see $DATA/logs" >&2
    cleanup_on_failure
    exit 1
  fi
  echo "Started $ONLY of the cluster in $DATA (pid $(cat "$DATA/pids/$ONLY.pid"))"
  echo "  $ONLY    rpc $(info_field "$ONLY" rpc)   web http://127.0.0.1:$(info_field "$ONLY" http_port)/"
  exit 0
fi

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
echo "Restart one daemon with: scripts/restart-daemon.sh --data $DATA master|tserver-N"
