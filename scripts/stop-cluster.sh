#!/usr/bin/env bash
# Stops the cluster started by start-cluster.sh; see usage() below.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# Installed (<prefix>/share/nyala/scripts, no CMakeLists.txt beside conf/), the
# cluster's directory defaults to ./nyala-cluster.
DEFAULT_DATA=$ROOT/nyala-cluster
[ -f "$ROOT/CMakeLists.txt" ] || DEFAULT_DATA=$PWD/nyala-cluster
DATA=${NYALA_CLUSTER_DIR:-$DEFAULT_DATA}
GRACE=15
usage() {
  cat <<'USAGE'
Usage: scripts/stop-cluster.sh [--data DIR] [--grace SECONDS]

Stops the cluster that scripts/start-cluster.sh started from DIR (default:
./nyala-cluster, or $NYALA_CLUSTER_DIR): the PIDs it recorded in DIR/pids, and any
daemon holding the LOCK of a data dir under DIR (found even when DIR/pids is gone),
with SIGTERM, then SIGKILL for any still running after SECONDS (default 15).
USAGE
}
while [ $# -gt 0 ]; do
  case "$1" in
    --data) DATA=$2; shift 2 ;;
    --data=*) DATA=${1#*=}; shift ;;
    --grace) GRACE=$2; shift 2 ;;
    --grace=*) GRACE=${1#*=}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "stop-cluster: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
if [ ! -d "$DATA" ]; then
  echo "stop-cluster: $DATA does not exist; pass the cluster's directory with --data" >&2
  exit 1
fi
# alive PID: the process runs (a zombie, dead but not yet reaped, does not).
alive() { kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
# Only signal a PID that is still one of our daemons (not a recycled PID).
is_ours() { [ -r "/proc/$1/cmdline" ] && tr '\0' ' ' <"/proc/$1/cmdline" | grep -q "nyala-"; }
pids=()
names=()
for pidfile in "$DATA"/pids/*.pid; do
  [ -e "$pidfile" ] || continue
  pid=$(cat "$pidfile")
  name=$(basename "$pidfile" .pid)
  if alive "$pid" && is_ours "$pid"; then
    kill -TERM "$pid"
    pids+=("$pid")
    names+=("$name")
  else
    rm -f "$pidfile"
  fi
done
# Each daemon holds an exclusive flock on <data dir>/LOCK while it runs and writes
# "pid N" into it (fs_manager.cc): that finds daemons whose pid file is gone.
lock_held() {  # lock_held <lock file>: true when a process holds it
  if command -v flock >/dev/null 2>&1; then
    ! flock -n "$1" true 2>/dev/null
  else
    return 0  # no flock(1): the pid in the file is checked below
  fi
}
for lock in "$DATA"/*/LOCK; do
  [ -e "$lock" ] || continue
  lock_held "$lock" || continue
  pid=$(sed -n 's/^pid \([0-9][0-9]*\).*/\1/p' "$lock" 2>/dev/null | head -1)
  [ -n "$pid" ] || continue
  case " ${pids[*]} " in *" $pid "*) continue ;; esac
  if alive "$pid" && is_ours "$pid"; then
    kill -TERM "$pid"
    pids+=("$pid")
    names+=("$(basename "$(dirname "$lock")")")
  fi
done
deadline=$(( $(date +%s) + GRACE ))
for idx in "${!pids[@]}"; do
  pid=${pids[$idx]}
  # Gone means reaped too (kill -0 fails), which init may take a moment to do; a
  # zombie past the deadline has exited all the same: no SIGKILL, no message.
  while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.1; done
  if alive "$pid"; then
    echo "stop-cluster: ${names[$idx]} (pid $pid) ignored SIGTERM for ${GRACE}s; killing" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$DATA/pids/${names[$idx]}.pid"
  echo "stopped ${names[$idx]} (pid $pid)"
done
[ ${#pids[@]} -eq 0 ] && echo "stop-cluster: nothing was running in $DATA"
exit 0
