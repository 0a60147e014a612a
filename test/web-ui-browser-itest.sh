#!/usr/bin/env bash
# Browser test of the web UI: headless Chromium (Debian's `chromium`, installed by
# scripts/setup-deps.sh) loads the master's and the tablet servers' pages from a real
# cluster of three tablet servers (tables of three replicas) and the test checks what
# the browser rendered (the DOM after parsing), the replicas' roles included; that the
# master links each tablet server and tablet to the tablet server's own pages, and the
# links load; and, under a bounded load, that the home pages' rate charts (drawn by
# their inline script from /rates.json) render as SVG with non-zero rates.
# Exits 77 (CTest: skipped) with a message when Chromium is not available.
#
#   test/web-ui-browser-itest.sh <bin dir>
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export NYALA_BIN_DIR=${1:-$ROOT/build/bin}
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
  echo "SKIPPED: chromium is not installed (scripts/setup-deps.sh could not install it)"
  exit 77
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nyala-web-XXXXXX")
DATA="$WORK/cluster"
failures=0
cleanup() {
  "$ROOT/scripts/stop-cluster.sh" --data "$DATA" --grace 5 >/dev/null 2>&1 || true
  if [ "$failures" -eq 0 ]; then rm -rf "$WORK"; else echo "kept $WORK"; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
has() { if grep -qF -- "$2" <<<"$1"; then echo "ok: $3"; else fail "$3"; fi; }

source "$ROOT/test/itest_util.sh"
BASE=$(pick_base_port 3)
M="127.0.0.1:$BASE"
# Three tablet servers: the tables get the master's default of three replicas each. A
# server silent for 3 s is dead (the last checks kill one).
export NYALA_MASTER_FLAGS="--tserver_unresponsive_timeout_ms=3000"
"$ROOT/scripts/start-cluster.sh" --tservers 3 --data "$DATA" --base-port "$BASE" >/dev/null
"$NYALA_BIN_DIR/nyala" table create "$M" \
  '{"name": "<script>alert(1)</script>", "columns": [{"name": "k", "type": "INT64", "key": true}]}' >/dev/null
"$NYALA_BIN_DIR/nyala" table create "$M" \
  '{"name": "web_demo", "columns": [{"name": "k", "type": "INT64", "key": true}],
    "hash_partitions": [{"columns": ["k"], "buckets": 2}]}' >/dev/null

# The DOM as Chromium built it, after parsing (the pages need no JavaScript but the
# home pages' charts).
dom() {
  timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$WORK/chromium" --dump-dom "$1" 2>/dev/null
}
# The same after the page's scripts ran for 7 s of virtual time (fetches included): the
# charts refresh every 2 s.
dom_js() {
  timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$WORK/chromium" --virtual-time-budget=7000 --dump-dom "$1" 2>/dev/null
}
MWEB="http://127.0.0.1:$((BASE + 1000))"
TWEB="http://127.0.0.1:$((BASE + 1010))"

home=$(dom "$MWEB/")
has "$home" "nyala-master" "master home page names the daemon"
has "$home" "<th>Dead tablet servers</th><td>none</td>" "master home page: no dead tablet server"
has "$home" "<th>Tablets unavailable</th><td>0</td>" "master home page: no tablet unavailable"
has "$home" "<th>Tablets under-replicated</th><td>0</td>" "master home page: none under-replicated"
has "$home" "UUID" "master home page shows the uuid"
tables=$(dom "$MWEB/tables")
has "$tables" "&lt;script&gt;alert(1)&lt;/script&gt;" "a table named <script>... is shown as text"
if grep -q "<script" <<<"$tables"; then fail "/tables contains a script element"; else echo "ok: no script element on /tables"; fi
has "$tables" "web_demo" "/tables lists web_demo"
has "$tables" "TABLET_RUNNING" "/tables shows running tablets"
servers=$(dom "$MWEB/tablet-servers")
has "$servers" "127.0.0.1:$((BASE + 10))" "/tablet-servers lists the first tablet server"
has "$servers" "127.0.0.1:$((BASE + 11))" "/tablet-servers lists the second tablet server"
has "$servers" "127.0.0.1:$((BASE + 12))" "/tablet-servers lists the third tablet server"
has "$tables" "LEADER" "/tables names each tablet's leader replica"
# A tablet's row starts with its id (linked to its leader's page of it).
tablet_id=$(grep -oE '<tr><td>(<a [^>]*>)?[0-9a-f]{32}' <<<"$tables" | head -1 | grep -oE '[0-9a-f]{32}$' || true)
ts_pages=()
for i in 0 1 2; do ts_pages+=("$(dom "http://127.0.0.1:$((BASE + 1010 + i))/tablets")"); done
ts_tablets="${ts_pages[0]}${ts_pages[1]}${ts_pages[2]}"
has "$ts_tablets" "$tablet_id" "a tablet server's /tablets shows a tablet the master placed"
# Each replica's consensus state: the columns, and across the three servers one row of
# that tablet as LEADER and two as FOLLOWER, all naming the same leader.
has "${ts_pages[0]}" "<th>Role</th><th>Term</th><th>Leader</th><th>Committed / applied / last index</th><th>Peers</th>" \
  "/tablets has the role, term, leader, indexes and peers columns"
rows=$(for page in "${ts_pages[@]}"; do
  sed 's/<tr/\n<tr/g' <<<"$page" | grep -F "<tr id=\"$tablet_id\">" || true
done)
roles=$( (grep -oE '<td class="role">[A-Z]+</td>' <<<"$rows" || true) | sed 's/<[^>]*>//g' | sort | tr '\n' ' ')
if [ "$roles" = "FOLLOWER FOLLOWER LEADER " ]; then
  echo "ok: the tablet's three replicas are one LEADER and two FOLLOWERs"
else
  fail "the roles of tablet $tablet_id's replicas: '$roles'"
fi
leader_row=$(grep -F '<td class="role">LEADER</td>' <<<"$rows" || true)
leader_uuid=$(sed -nE 's/.*<td class="role">LEADER<\/td><td>[0-9]+<\/td><td>([0-9a-f]{32}) \(this server\)<\/td>.*/\1/p' <<<"$leader_row")
if [ -n "$leader_uuid" ] && [ "$(grep -c "<td>$leader_uuid</td>" <<<"$rows")" -eq 2 ]; then
  echo "ok: the leader names itself and both followers name it"
else
  fail "the leader column of tablet $tablet_id: leader '$leader_uuid' in rows: $rows"
fi
if [ "$(grep -o '<br>' <<<"$leader_row" | wc -l)" -eq 3 ] && grep -qE '<td>[0-9]+ / [0-9]+ / [0-9]+</td>' <<<"$leader_row"; then
  echo "ok: the leader's row lists three peers and its committed / applied / last index"
else
  fail "the peers or indexes of the leader's row: $leader_row"
fi
has "$(dom "$TWEB/scans")" "nyala-tserver" "tablet server /scans page loads"
has "$ts_tablets" "Rows inserted / upserted" "a tablet server's /tablets shows per-tablet counts"
rpcz=$(dom "$TWEB/rpcz")
has "$rpcz" "Calls in flight" "tablet server /rpcz lists the calls in flight"
has "$rpcz" "nyala.tserver.TabletServerService" "tablet server /rpcz shows the service queues"
metrics=$(dom "$MWEB/metrics")
has "$metrics" "table_locations_cache_hits_total" "/metrics has the table-locations cache metrics"

# Links: the master links each tablet server to its own web UI (its advertised web
# address), and each tablet to its leader's page of it; the targets load and describe
# that server and that tablet.
for i in 0 1 2; do
  has "$servers" "<a href=\"http://127.0.0.1:$((BASE + 1010 + i))/\">127.0.0.1:$((BASE + 1010 + i))</a>" \
    "/tablet-servers links the web address of tablet server $i"
done
link=$(grep -oE '<a href="http://127\.0\.0\.1:[0-9]+/">[0-9a-f]{32}</a>' <<<"$servers" | head -1 || true)
link_url=$(sed -E 's/<a href="([^"]*)">.*/\1/' <<<"$link")
link_uuid=$(sed -E 's/.*">([0-9a-f]{32})<\/a>/\1/' <<<"$link")
if [ -n "$link" ]; then
  target=$(dom "$link_url")
  if grep -qF "nyala-tserver" <<<"$target" && grep -qF "<td>$link_uuid</td>" <<<"$target"; then
    echo "ok: the link of tablet server $link_uuid loads its own home page ($link_url)"
  else
    fail "the link of tablet server $link_uuid ($link_url) does not load that server's page"
  fi
else
  fail "/tablet-servers has no tablet server uuid linked to a web UI"
fi
tlink=$(grep -oE "<a href=\"http://127\.0\.0\.1:[0-9]+/tablet\?id=$tablet_id\">$tablet_id</a>" <<<"$tables" | head -1 || true)
if [ -n "$tlink" ]; then
  turl=$(sed -E 's/<a href="([^"]*)">.*/\1/' <<<"$tlink")
  tpage=$(dom "$turl")
  has "$tpage" "<h2>Tablet $tablet_id</h2>" "tablet $tablet_id's link loads the tablet's page ($turl)"
  has "$tpage" '<span class="role">LEADER</span>' "the tablet's link goes to its leader's page"
else
  fail "/tables does not link tablet $tablet_id to its leader's page"
fi
nreplica=$( (grep -oE "<a href=\"http://127\.0\.0\.1:[0-9]+/tablet\?id=$tablet_id\">replica</a>" <<<"$tables" || true) | sort -u | wc -l)
[ "$nreplica" -eq 3 ] && echo "ok: /tables links each of the tablet's 3 replicas to its server's page" ||
  fail "/tables links $nreplica distinct replica pages of tablet $tablet_id, expected 3"
has "$(dom "$TWEB/tablet?id=no-such-tablet")" "hosts no tablet no-such-tablet" \
  "a tablet server's page of an unknown tablet says so"

# The tablet server's home page: tablets, disk use, memory and request rates, also
# exported as metrics.
thome=$(dom "$TWEB/")
for label in "Tablets" "Disk use" "Memory" "RocksDB block cache" "memtables" "row cache" \
             "Rates (last minute)"; do
  has "$thome" "$label" "tablet server home page shows $label"
done
disk=$(grep -oE '<span class="bytes">[0-9.]+ [KMG]?i?B</span>' <<<"$thome" | head -1 || true)
if [ -n "$disk" ] && ! grep -qF '>0 B<' <<<"$disk"; then
  echo "ok: the first data dir's disk use is non-zero: $disk"
else
  fail "tablet server home page disk use: '$disk'"
fi
tprom=$(dom "$TWEB/metrics_prometheus")
for fam in tserver_data_dir_bytes tserver_wal_dir_bytes tserver_tablets rocksdb_block_cache_usage_bytes \
           rocksdb_memtable_bytes process_resident_memory_bytes; do
  grep -qE "^$fam(\{[^}]*\})? [1-9]" <<<"$tprom" && echo "ok: tablet server exports $fam > 0" ||
    fail "tablet server does not export $fam > 0"
done

# Charts under load: writes (loadgen), scans and gets, bounded; then each home page's
# inline script draws SVG from /rates.json with non-zero rates.
"$NYALA_BIN_DIR/nyala" table create "$M" \
  '{"name": "web_load", "columns": [{"name": "key", "type": "INT64", "key": true},
    {"name": "a", "type": "INT32", "nullable": true}, {"name": "b", "type": "STRING", "nullable": true},
    {"name": "c", "type": "STRING", "nullable": true}, {"name": "d", "type": "INT32", "nullable": true}],
    "hash_partitions": [{"columns": ["key"], "buckets": 6}]}' >/dev/null
"$NYALA_BIN_DIR/nyala" perf loadgen "$M" --table_name=web_load --num_threads=2 \
  --num_rows_per_thread=20000 >"$WORK/loadgen.out" 2>&1 &
loadgen_pid=$!
# Scans read every tablet (each server leads some); gets of 30 keys reach them all.
for k in $(seq 1 30); do
  "$NYALA_BIN_DIR/nyala" table get "$M" web_load "$k" >/dev/null 2>&1 || true
  if [ $((k % 5)) -eq 0 ]; then "$NYALA_BIN_DIR/nyala" table scan "$M" web_load >/dev/null 2>&1 || true; fi
done
wait "$loadgen_pid" || fail "nyala perf loadgen failed: $(tail -3 "$WORK/loadgen.out")"
# chart <page> <series>: the figure element of that series.
chart() { grep -oE "<figure class=\"chart\" data-series=\"$2\"[^>]*>" <<<"$1" || true; }
attr() { sed -nE "s/.* $2=\"([^\"]*)\".*/\1/p" <<<"$1"; }
check_chart() {  # check_chart <page> <what> <series>
  local fig max
  fig=$(chart "$1" "$3")
  max=$(attr "$fig" data-max)
  if [ -n "$fig" ] && awk -v m="${max:-0}" 'BEGIN { exit !(m > 0) }'; then
    echo "ok: $2 chart '$3' shows a non-zero rate (max $max)"
  else
    fail "$2 chart '$3': '$fig'"
  fi
}
for page in "$TWEB/" "$MWEB/"; do
  what=$([ "$page" = "$TWEB/" ] && echo "tablet server" || echo "master")
  p=$(dom_js "$page")
  refreshes=$(grep -oE 'id="rate-charts" data-refreshes="[0-9]+"' <<<"$p" | grep -oE '[0-9]+"$' | tr -d '"' || true)
  [ "${refreshes:-0}" -ge 2 ] && echo "ok: $what charts were drawn and refreshed ($refreshes times)" ||
    fail "$what charts refreshed '${refreshes:-}' times (error: $(grep -oE 'data-error="[^"]*"' <<<"$p"))"
  npoly=$( (grep -oE '<svg[^>]*>(<line[^>]*>(</line>)?)?<polyline points="[^"]+' <<<"$p" || true) | wc -l)
  [ "$npoly" -ge 4 ] && echo "ok: $what charts are SVG polylines ($npoly)" ||
    fail "$what home page has $npoly SVG charts with a line"
  check_chart "$p" "$what" bytes_in
  check_chart "$p" "$what" bytes_out
  if [ "$what" = "master" ]; then
    check_chart "$p" "$what" rpc_calls
    check_chart "$p" "$what" location_lookups
  else
    for s in writes rows_written scans reads rows_read; do check_chart "$p" "$what" "$s"; done
  fi
done

# A tablet server killed: the master's home page says so at a glance, and /tables shows
# its replicas as dead rather than as followers with their last indexes.
dead_pid=$(cat "$DATA/pids/tserver-2.pid")
kill -9 "$dead_pid"
home=""
for _ in $(seq 1 40); do
  home=$(dom "$MWEB/")
  grep -qF "127.0.0.1:$((BASE + 12))" <<<"$home" && break
  sleep 0.5  # the master declares it dead after --tserver_unresponsive_timeout_ms
done
has "$home" "127.0.0.1:$((BASE + 12))" "master home page lists the dead tablet server with its address"
under=$(grep -oE '<th>Tablets under-replicated</th><td><b class="bad">[0-9]+' <<<"$home" | grep -oE '[0-9]+$' || true)
[ "${under:-0}" -gt 0 ] && echo "ok: master home page counts $under tablets under-replicated" ||
  fail "master home page does not count under-replicated tablets: $(grep -oE '<th>Tablets under[^/]*' <<<"$home")"
tables=$(dom "$MWEB/tables")
has "$tables" "DEAD</b> (no report since its server stopped heartbeating)" "/tables marks the dead server's replicas DEAD"

if [ "$failures" -gt 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "all checks passed"
