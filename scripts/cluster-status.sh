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
address and web UI. Exits 0 when at least one of them runs, 1 otherwise.
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
printf '%-12s %-8s %-8s %-22s %s\n' NAME PID STATE RPC WEB
running=0
for info in "$DATA"/*.info; do
  [ -e "$info" ] || continue
  name=$(basename "$info" .info)
  pid=$(cat "$DATA/pids/$name.pid" 2>/dev/null || echo "-")
  state=stopped
  if [ "$pid" != "-" ] && kill -0 "$pid" 2>/dev/null; then state=running; running=$((running + 1)); fi
  rpc=$(grep '^rpc=' "$info" | head -1 | cut -d= -f2)
  web=$(grep '^http_port=' "$info" | head -1 | cut -d= -f2)
  printf '%-12s %-8s %-8s %-22s %s\n' "$name" "$pid" "$state" "$rpc" "${web:+http://127.0.0.1:$web/}"
done
[ "$running" -gt 0 ]
