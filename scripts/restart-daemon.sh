#!/usr/bin/env bash
# Restarts one daemon of a cluster started by start-cluster.sh; see usage() below.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# Installed (<prefix>/share/nyala/scripts, no CMakeLists.txt beside conf/), the
# cluster's directory defaults to ./nyala-cluster.
DEFAULT_DATA=$ROOT/nyala-cluster
[ -f "$ROOT/CMakeLists.txt" ] || DEFAULT_DATA=$PWD/nyala-cluster
DATA=${NYALA_CLUSTER_DIR:-$DEFAULT_DATA}
GRACE=15
NAME=""
usage() {
  cat <<'USAGE'
Usage: scripts/restart-daemon.sh [--data DIR] [--grace SECONDS] master|tserver-N

Restarts one daemon of the cluster that scripts/start-cluster.sh started from DIR
(default: ./nyala-cluster, or $NYALA_CLUSTER_DIR) while the others keep running:
master, or tserver-N (0-based, as start-cluster.sh and scripts/cluster-status.sh name
them).

Stops exactly that daemon, by the PID in DIR/pids/NAME.pid (or, when that file is gone
or stale, the PID in the LOCK its data dir holds), with SIGTERM; if it still runs after
SECONDS (default 15) it is killed with SIGKILL, saying so. A daemon that was not
running is just started. Then runs scripts/start-cluster.sh --only NAME, which starts
it again with the command line recorded in DIR/cmdlines/NAME when the cluster was
started (same binary, flags, ports and data dir) and waits until it is up: a tablet
server until it has heartbeated to the master, the master until every running tablet
server has heartbeated to it. Exits 0 once it is; 1 when it could not be stopped or
started (the log is in DIR/logs/NAME.out and DIR/logs/NAME/).

Example, with the cluster in ./nyala-cluster:
  scripts/restart-daemon.sh tserver-2
USAGE
}
while [ $# -gt 0 ]; do
  case "$1" in
    --data) DATA=$2; shift 2 ;;
    --data=*) DATA=${1#*=}; shift ;;
    --grace) GRACE=$2; shift 2 ;;
    --grace=*) GRACE=${1#*=}; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "restart-daemon: unknown argument $1" >&2; usage >&2; exit 2 ;;
    *)
      if [ -n "$NAME" ]; then
        echo "restart-daemon: one daemon at a time ($NAME, then $1)" >&2; exit 2
      fi
      NAME=$1; shift ;;
  esac
done
case "$NAME" in
  master) ;;
  tserver-*[!0-9]* | tserver-) echo "restart-daemon: not a daemon name: $NAME (master or tserver-N)" >&2; exit 2 ;;
  tserver-*) ;;
  '') echo "restart-daemon: which daemon? master or tserver-N" >&2; usage >&2; exit 2 ;;
  *) echo "restart-daemon: not a daemon name: $NAME (master or tserver-N)" >&2; exit 2 ;;
esac
case "$GRACE" in ''|*[!0-9]*) echo "restart-daemon: --grace takes a number of seconds" >&2; exit 2 ;; esac
if [ ! -d "$DATA" ]; then
  echo "restart-daemon: $DATA does not exist; pass the cluster's directory with --data" >&2
  exit 1
fi
DATA=$(cd "$DATA" && pwd)
# Before stopping anything: the daemon must be one that can be started again.
if [ ! -s "$DATA/cmdlines/$NAME" ]; then
  echo "restart-daemon: no command line recorded for $NAME in $DATA/cmdlines/ (not a daemon" \
    "of this cluster, or a cluster started by an older start-cluster.sh); nothing was stopped." >&2
  echo "Restart the whole cluster: scripts/stop-cluster.sh --data $DATA;" \
    "scripts/start-cluster.sh --data $DATA" >&2
  exit 1
fi

# alive PID: the process runs (a zombie, dead but not yet reaped, does not).
alive() { kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
# is_this_daemon PID: PID is alive and is this daemon (a nyala binary on this data dir),
# not a process that got a recycled PID.
is_this_daemon() {
  alive "$1" && [ -r "/proc/$1/cmdline" ] || return 1
  tr '\0' '\n' <"/proc/$1/cmdline" | grep -qxF -- "--fs_data_dirs=$DATA/$NAME"
}
pid=""
if [ -s "$DATA/pids/$NAME.pid" ]; then
  pid=$(cat "$DATA/pids/$NAME.pid")
  is_this_daemon "$pid" || pid=""
fi
if [ -z "$pid" ] && [ -e "$DATA/$NAME/LOCK" ]; then
  # Each daemon writes "pid N" into the LOCK of its data dir while it holds it.
  pid=$(sed -n 's/^pid \([0-9][0-9]*\).*/\1/p' "$DATA/$NAME/LOCK" 2>/dev/null | head -1)
  [ -n "$pid" ] && ! is_this_daemon "$pid" && pid=""
fi
if [ -z "$pid" ]; then
  echo "restart-daemon: $NAME was not running; starting it"
else
  kill -TERM "$pid" 2>/dev/null || true
  deadline=$(($(date +%s) + GRACE))
  while alive "$pid" && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.1; done
  if alive "$pid"; then
    echo "restart-daemon: $NAME (pid $pid) ignored SIGTERM for ${GRACE}s; killing it with SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then
      echo "restart-daemon: $NAME (pid $pid) still runs 10 s after SIGKILL; not starting it again" >&2
      exit 1
    fi
  fi
  rm -f "$DATA/pids/$NAME.pid"
  echo "stopped $NAME (pid $pid)"
fi
exec "$HERE/start-cluster.sh" --data "$DATA" --only "$NAME"
