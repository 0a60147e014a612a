#!/usr/bin/env bash
# Shows the daemons of a cluster started by start-cluster.sh; see usage() below.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# Installed (<prefix>/share/nyala/scripts, no CMakeLists.txt beside conf/), the
# cluster's directory defaults to ./nyala-cluster.
DEFAULT_DATA=$ROOT/nyala-cluster
[ -f "$ROOT/CMakeLists.txt" ] || DEFAULT_DATA=$PWD/nyala-cluster
DATA=${NYALA_CLUSTER_DIR:-$DEFAULT_DATA}
usage() {
  cat <<'USAGE'
Usage: scripts/cluster-status.sh [--data DIR]

Shows the daemons of the cluster that scripts/start-cluster.sh started from DIR
(default: ./nyala-cluster, or $NYALA_CLUSTER_DIR): name, PID, whether it runs, its RPC
address and web UI. Lists every daemon that wrote DIR/NAME.info or whose command line
start-cluster.sh recorded in DIR/cmdlines/ (so also one that failed to start again;
scripts/restart-daemon.sh restarts one). Exits 0 when at least one of them runs, 1
otherwise.
USAGE
}
while [ $# -gt 0 ]; do
  case "$1" in
    --data) DATA=$2; shift 2 ;;
    --data=*) DATA=${1#*=}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "cluster-status: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
if [ ! -d "$DATA/pids" ]; then
  echo "no cluster recorded in $DATA"
  exit 1
fi
# alive PID: the process runs (a zombie, dead but not yet reaped, does not).
alive() { kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
printf '%-12s %-8s %-8s %-22s %s\n' NAME PID STATE RPC WEB
running=0
names=$(
  for f in "$DATA"/*.info "$DATA"/cmdlines/*; do
    [ -e "$f" ] && basename "$f" .info
  done | sort -u -V
)
for name in $names; do
  pid=$(cat "$DATA/pids/$name.pid" 2>/dev/null || echo "-")
  state=stopped
  if [ "$pid" != "-" ] && alive "$pid"; then state=running; running=$((running + 1)); fi
  rpc="" web=""
  if [ -e "$DATA/$name.info" ]; then
    rpc=$(grep '^rpc=' "$DATA/$name.info" | head -1 | cut -d= -f2)
    web=$(grep '^http_port=' "$DATA/$name.info" | head -1 | cut -d= -f2)
  elif [ -e "$DATA/cmdlines/$name" ]; then  # no .info: the ports it was started with
    rpc=$(tr '\0' '\n' <"$DATA/cmdlines/$name" | sed -n 's/^--rpc_bind_addresses=//p' | head -1)
    web=$(tr '\0' '\n' <"$DATA/cmdlines/$name" | sed -n 's/^--webserver_port=//p' | head -1)
  fi
  printf '%-12s %-8s %-8s %-22s %s\n' "$name" "$pid" "$state" "${rpc:--}" "${web:+http://127.0.0.1:$web/}"
done
[ "$running" -gt 0 ]
