#!/usr/bin/env bash
# Builds Nyala, starts a local cluster and shows it working; see usage() below.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
ROWS=100000
DATA=${NYALA_CLUSTER_DIR:-$ROOT/nyala-cluster}
BASE_PORT=7051
usage() {
  cat <<'USAGE'
Usage: scripts/quickstart.sh [--rows N] [--data DIR] [--base-port P]

Installs dependencies, builds the daemons and the CLI into build/ (or $BUILD_DIR),
starts a local cluster (one master, three tablet servers) from conf/, creates a demo
table whose tablets have three replicas each (one when a reused cluster has fewer than
three live tablet servers), loads N rows (default 100000), runs a few gets and a
filtered scan through the CLI, shows each tablet's replicas and checks the cluster,
and leaves the cluster running for you to explore.

  --data DIR      the cluster's data and logs (default: ./nyala-cluster, or
                  $NYALA_CLUSTER_DIR); a cluster already running there is reused
  --base-port P   master RPC port P (default 7051), master web UI P+1000, tablet
                  server i on P+10+i and P+1010+i; use it when Kudu's ports are taken

Stop the cluster with scripts/stop-cluster.sh --data DIR.
USAGE
}
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) ROWS=$2; shift 2 ;;
    --rows=*) ROWS=${1#*=}; shift ;;
    --data) DATA=$2; shift 2 ;;
    --data=*) DATA=${1#*=}; shift ;;
    --base-port) BASE_PORT=$2; shift 2 ;;
    --base-port=*) BASE_PORT=${1#*=}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "quickstart: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done

case "$BASE_PORT" in ''|*[!0-9]*) echo "quickstart: --base-port takes a number" >&2; exit 2 ;; esac
case "$ROWS" in ''|*[!0-9]*) echo "quickstart: --rows takes a number" >&2; exit 2 ;; esac

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "Installing dependencies (scripts/setup-deps.sh)"
bash scripts/setup-deps.sh
step "Building nyala-master, nyala-tserver and nyala (build/)"
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" -j2 --target nyala-master nyala-tserver nyala
export NYALA_BIN_DIR="$ROOT/$BUILD_DIR/bin"
NYALA="$NYALA_BIN_DIR/nyala"

step "Starting a local cluster (scripts/start-cluster.sh --data $DATA --base-port $BASE_PORT)"
if scripts/cluster-status.sh --data "$DATA" >/dev/null 2>&1; then
  echo "A cluster is already running from $DATA; using it."
  MASTER=$(cat "$DATA/master_addresses")
else
  scripts/start-cluster.sh --data "$DATA" --base-port "$BASE_PORT"
  MASTER=$(cat "$DATA/master_addresses")
fi

# Three replicas of each tablet, one on each tablet server (a reused cluster with
# fewer live tablet servers gets one).
LIVE=$("$NYALA" tserver list "$MASTER" --format=csv | grep -c ',LIVE,' || true)
REPLICAS=3
[ "$LIVE" -ge 3 ] || REPLICAS=1
step "Creating table 'quickstart' (4 hash buckets on id, $REPLICAS replicas of each tablet)"
if "$NYALA" table describe "$MASTER" quickstart >/dev/null 2>&1; then
  "$NYALA" table delete "$MASTER" quickstart
fi
"$NYALA" table create "$MASTER" '{
  "name": "quickstart",
  "columns": [
    {"name": "id", "type": "INT64", "key": true},
    {"name": "city", "type": "STRING"},
    {"name": "temperature", "type": "DOUBLE", "nullable": true},
    {"name": "ts", "type": "UNIXTIME_MICROS"}
  ],
  "hash_partitions": [{"columns": ["id"], "buckets": 4}],
  "num_replicas": '"$REPLICAS"'
}'

step "Loading $ROWS rows from a CSV file (nyala table insert)"
CSV="$DATA/quickstart-rows.csv"
awk -v n="$ROWS" 'BEGIN {
  split("Nairobi,Oslo,Lima,Osaka,Perth,Quito,Hanoi,Dakar", c, ",");
  print "id,city,temperature,ts";
  srand(42);
  for (i = 1; i <= n; i++) {
    t = (i % 97 == 0) ? "" : sprintf("%.1f", -10 + rand() * 45);
    printf "%d,%s,%s,%.0f\n", i, c[1 + i % 8], t, 1700000000000000 + i * 1000000;
  }
}' >"$CSV"
"$NYALA" table insert "$MASTER" quickstart --file="$CSV"
"$NYALA" table count "$MASTER" quickstart | sed 's/^/rows in table: /'

step "Point lookups (nyala table get quickstart 1 42 99999999)"
"$NYALA" table get "$MASTER" quickstart 1 42 99999999 || true

step "A filtered scan: Oslo, warmer than 30 degrees, first 5 rows"
"$NYALA" table scan "$MASTER" quickstart \
  --predicates='["AND", ["=", "city", "Oslo"], [">", "temperature", 30.0]]' \
  --columns=id,city,temperature --limit=5

step "Each tablet's replicas: the leader first (nyala tablet list --table quickstart)"
"$NYALA" tablet list "$MASTER" --table quickstart

step "Cluster check (nyala cluster ksck)"
# Followers may still be applying the load's last writes: give them a few seconds.
for _ in $(seq 1 20); do "$NYALA" cluster ksck "$MASTER" >/dev/null 2>&1 && break; sleep 0.5; done
"$NYALA" cluster ksck "$MASTER" 2>&1 | tail -n 1 || true

WEB_PORT=$(grep '^http_port=' "$DATA/master.info" | cut -d= -f2)
cat <<MSG

The cluster is still running.
  Web UI:        http://127.0.0.1:$WEB_PORT/   (tables, tablet servers, metrics)
  CLI:           $NYALA table scan $MASTER quickstart --limit=10
                 $NYALA tablet leader_step_down $MASTER <tablet_id>   (moves a leader)
  Stop it with:  scripts/stop-cluster.sh --data $DATA
MSG
