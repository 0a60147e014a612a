#!/usr/bin/env bash
# Shows the daemons of the cluster in --data DIR (started by start-cluster.sh):
# name, PID, whether it runs, its RPC address and web UI.
#
#   scripts/cluster-status.sh [--data DIR]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA=${NYALA_CLUSTER_DIR:-$ROOT/nyala-cluster}
while [ $# -gt 0 ]; do
  case "$1" in
    --data) DATA=$2; shift 2 ;;
    --data=*) DATA=${1#*=}; shift ;;
    -h|--help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "cluster-status: unknown argument $1" >&2; exit 2 ;;
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
