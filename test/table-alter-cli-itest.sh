#!/usr/bin/env bash
# The CLI's alter verbs and describe, as a user runs them, on a local cluster from
# scripts/start-cluster.sh (three tablet servers, ports picked at run time):
#  - `table describe --format=json` prints exactly the spec `table create` takes: for
#    every kind of table (no partitioning, hash only, range only with split points,
#    bounds with gaps, hash and range, a compound key, every type with defaults and
#    comments), the described spec creates a table whose description is the same, and
#    equals the spec it was created from;
#  - every verb (add_column, drop_column, rename_column, rename_table,
#    column_set_default, column_remove_default, column_set_comment, set_comment,
#    add_range_partition, drop_range_partition, alter) changes what describe, scan and
#    insert see, and refusals say why and exit 1 without changing anything;
#  - rows past a time-series table's last range get a partition the next month.
#
#   test/table-alter-cli-itest.sh <bin dir>
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export NYALA_BIN_DIR=${1:-$ROOT/build/bin}
NYALA="$NYALA_BIN_DIR/nyala"
command -v jq >/dev/null || { echo "table-alter-cli-itest needs jq (scripts/setup-deps.sh installs it)"; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nyala-alter-cli-XXXXXX")
DATA="$WORK/cluster"
failures=0

cleanup() {
  "$ROOT/scripts/stop-cluster.sh" --data "$DATA" --grace 5 >/dev/null 2>&1 || true
  if [ "$failures" -eq 0 ]; then rm -rf "$WORK"; else echo "kept $WORK for inspection"; fi
}
trap cleanup EXIT

source "$ROOT/test/itest_util.sh"  # fail, check, contains, same, pick_base_port
refused() {  # refused <description> <expected message part> <command...>: exit 1 with it
  local what=$1 msg=$2; shift 2
  local out st=0
  out=$("$@" 2>&1) || st=$?
  if [ "$st" -ne 1 ]; then fail "$what: exit $st, not 1: $out"; return; fi
  check "$what" contains "$out" "$msg"
}

BASE=$(pick_base_port 3)
M="127.0.0.1:$BASE"
export NYALA_TSERVER_FLAGS="--heartbeat_interval_ms=300"
"$ROOT/scripts/start-cluster.sh" --tservers 3 --data "$DATA" --base-port "$BASE" >/dev/null

describe() { "$NYALA" table describe "$M" "$1" --format=json; }

# --- Round trips: spec -> create -> describe (= spec) -> create -> describe (same).
specs=(
  '{"name":"rt_plain","columns":[{"name":"k","type":"INT64","key":true,"nullable":false},{"name":"v","type":"STRING","key":false,"nullable":true}],"num_replicas":1}'
  '{"name":"rt_hash","columns":[{"name":"k","type":"INT32","key":true,"nullable":false},{"name":"v","type":"DOUBLE","key":false,"nullable":false,"default":1.5}],"hash_partitions":[{"columns":["k"],"buckets":3,"seed":7}],"num_replicas":3}'
  '{"name":"rt_splits","columns":[{"name":"k","type":"INT64","key":true,"nullable":false},{"name":"v","type":"INT64","key":false,"nullable":true}],"range_partition":{"columns":["k"],"splits":[[10],[20]],"bounds":[{"lower":[],"upper":[]}]},"num_replicas":1}'
  '{"name":"rt_gaps","columns":[{"name":"k","type":"INT64","key":true,"nullable":false},{"name":"v","type":"BOOL","key":false,"nullable":false,"default":true,"comment":"a flag"}],"range_partition":{"columns":["k"],"splits":[[50]],"bounds":[{"lower":[0],"upper":[100]},{"lower":[200],"upper":[300]}]},"num_replicas":1,"comment":"ranges with a gap"}'
  '{"name":"rt_both","columns":[{"name":"host","type":"STRING","key":true,"nullable":false},{"name":"ts","type":"UNIXTIME_MICROS","key":true,"nullable":false},{"name":"b","type":"BINARY","key":false,"nullable":true,"default":"AAEC"},{"name":"i8","type":"INT8","key":false,"nullable":false,"default":-3},{"name":"i16","type":"INT16","key":false,"nullable":true},{"name":"f","type":"FLOAT","key":false,"nullable":true,"default":0.25},{"name":"t","type":"UNIXTIME_MICROS","key":false,"nullable":true,"default":"2026-01-02T03:04:05.000006Z"}],"hash_partitions":[{"columns":["host"],"buckets":2,"seed":0}],"range_partition":{"columns":["ts"],"splits":[],"bounds":[{"lower":["2026-01-01T00:00:00.000000Z"],"upper":["2026-02-01T00:00:00.000000Z"]}]},"num_replicas":1}'
)
for spec in "${specs[@]}"; do
  name=$(jq -r .name <<<"$spec")
  "$NYALA" table create "$M" "$spec" >/dev/null || { fail "create $name"; continue; }
  d1=$(describe "$name")
  check "$name: describe --format=json is the spec it was created from" \
    same "$(jq -cS . <<<"$spec")" "$(jq -cS . <<<"$d1")"
  "$NYALA" table create "$M" "$(jq -c '.name += "_again"' <<<"$d1")" >/dev/null ||
    fail "$name: create from its description"
  d2=$(describe "${name}_again")
  check "$name: a table created from the description describes the same" \
    same "$(jq -cS 'del(.name)' <<<"$d1")" "$(jq -cS 'del(.name)' <<<"$d2")"
done

# --- Every verb on one table.
"$NYALA" table create "$M" '{"name":"t","columns":[{"name":"k","type":"INT64","key":true},{"name":"a","type":"STRING","nullable":true},{"name":"b","type":"INT32","nullable":true}],"range_partition":{"columns":["k"],"bounds":[{"lower":[0],"upper":[100]}]},"num_replicas":3}' >/dev/null
printf 'k,a,b\n1,one,10\n2,two,20\n' >"$WORK/rows.csv"
"$NYALA" table insert "$M" t --file="$WORK/rows.csv" >/dev/null

out=$("$NYALA" table add_column "$M" t n INT64 --nonullable --default_value=7 --comment="added" 2>&1)
check "add_column says the new schema version" contains "$out" "Altered table t: schema version 1"
check "... rows stored before read its default" \
  same '[7,7]' "$("$NYALA" table scan "$M" t --format=json | jq -c '[.[].n]')"
check "... describe shows the column with its comment" \
  same '{"comment":"added","default":7,"key":false,"name":"n","nullable":false,"type":"INT64"}' \
  "$(describe t | jq -cS '.columns[3]')"
refused "add_column NOT NULL without a default" "NOT NULL without a default" \
  "$NYALA" table add_column "$M" t bad INT64 --nonullable
refused "add_column of an existing name" "already has a column 'a'" \
  "$NYALA" table add_column "$M" t a INT64
refused "add_column with a default of the wrong type" "INT64" \
  "$NYALA" table add_column "$M" t bad2 INT64 --default_value=abc
refused "drop_column of a key column" "primary key cannot change" \
  "$NYALA" table drop_column "$M" t k
refused "drop_column of an unknown column" "no column 'zz'" "$NYALA" table drop_column "$M" t zz
check "... and none of the refusals changed the table" same 1 "$("$NYALA" table describe "$M" t | grep -oP 'schema version \K[0-9]+')"

"$NYALA" table rename_column "$M" t a alpha >/dev/null
"$NYALA" table column_set_default "$M" t n 8 >/dev/null
"$NYALA" table column_set_comment "$M" t b "the b" >/dev/null
"$NYALA" table set_comment "$M" t "a test table" >/dev/null
printf 'k,alpha\n3,three\n' >"$WORK/more.csv"
"$NYALA" table insert "$M" t --file="$WORK/more.csv" >/dev/null
check "rename_column, column_set_default: new rows get the new default, old rows keep theirs" \
  same '[[1,"one",7],[2,"two",7],[3,"three",8]]' \
  "$("$NYALA" table scan "$M" t --format=json | jq -c '[.[] | [.k, .alpha, .n]]')"
d=$(describe t)
check "... column_set_comment and set_comment show in describe" \
  same '["the b","a test table"]' "$(jq -c '[.columns[2].comment, .comment]' <<<"$d")"
text=$("$NYALA" table describe "$M" t)
check "describe's text says the schema version (a table comment is not in the schema)" \
  contains "$text" "schema version 4"
check "... and the comment" contains "$text" "Comment: a test table"

"$NYALA" table column_remove_default "$M" t n >/dev/null
printf 'k,alpha\n4,four\n' >"$WORK/nodefault.csv"
out=$("$NYALA" table insert "$M" t --file="$WORK/nodefault.csv" 2>&1) || true
check "column_remove_default: a row without the NOT NULL column is refused" \
  contains "$out" "column 'n' is not nullable, has no default and was not set"

"$NYALA" table drop_column "$M" t b >/dev/null
check "drop_column: the column is gone from scans" \
  same '["alpha","k","n"]' "$("$NYALA" table scan "$M" t --format=json | jq -c '.[0] | keys')"
"$NYALA" table add_column "$M" t b INT32 >/dev/null
check "... and added again under its name it starts empty" \
  same '[null,null,null]' "$("$NYALA" table scan "$M" t --format=json | jq -c '[.[].b]')"

# Time-series: a row past the last range fails until next month's partition is added.
printf 'k,n\n150,1\n' >"$WORK/late.csv"
out=$("$NYALA" table insert "$M" t --file="$WORK/late.csv" 2>&1) || true
check "a row past the last range has no tablet" contains "$out" "no tablet covers"
"$NYALA" table add_range_partition "$M" t '[100]' '[200]' >/dev/null
"$NYALA" table insert "$M" t --file="$WORK/late.csv" >/dev/null
check "add_range_partition: the row goes in" same 4 "$("$NYALA" table count "$M" t | grep -oE '[0-9]+' | head -1)"
check "... describe lists both ranges" \
  same '[{"lower":[0],"upper":[200]}]' "$(describe t | jq -c '.range_partition.bounds')"
refused "add_range_partition overlapping" "overlaps" \
  "$NYALA" table add_range_partition "$M" t '[150]' '[250]'
refused "drop_range_partition of a range the table lacks" "no range partition" \
  "$NYALA" table drop_range_partition "$M" t '[0]' '[50]'
"$NYALA" table drop_range_partition "$M" t '[0]' '[100]' >/dev/null
check "drop_range_partition: its rows are gone" \
  same '[150]' "$("$NYALA" table scan "$M" t --format=json | jq -c '[.[].k]')"

"$NYALA" table rename_table "$M" t t2 >/dev/null
check "rename_table: the new name lists, the old one does not" \
  same '["t2"]' "$("$NYALA" table list "$M" --format=json | jq -c '[.[].name | select(. == "t" or . == "t2")]')"

# Several steps at once, all or nothing.
refused "alter with one bad step changes nothing" "step 2" \
  "$NYALA" table alter "$M" t2 '[{"add_column":{"name":"x","type":"INT8","nullable":true}},{"drop_column":"nope"}]'
check "... x was not added" same '["k","alpha","n","b"]' "$(describe t2 | jq -c '[.columns[].name]')"
echo '{"steps":[{"add_column":{"name":"x","type":"INT8","nullable":true,"default":1}},{"rename_column":{"name":"alpha","new_name":"a"}},{"column_set_default":{"name":"n","default":9}},{"set_comment":"altered"},{"add_range_partition":{"lower":[200],"upper":[]}},{"rename_table":"t3"}]}' >"$WORK/alter.json"
out=$("$NYALA" table alter "$M" t2 "$WORK/alter.json" 2>&1)
check "alter from a file applies every step" contains "$out" "Altered table t3"
d=$(describe t3)
check "... columns" same '["k","a","n","b","x"]' "$(jq -c '[.columns[].name]' <<<"$d")"
check "... default, comment and ranges" same '[9,"altered",[{"lower":[100],"upper":[]}]]' \
  "$(jq -c '[.columns[2].default, .comment, .range_partition.bounds]' <<<"$d")"
refused "alter with an unknown step" "unknown step" "$NYALA" table alter "$M" t3 '[{"truncate":true}]'
refused "alter of an unknown table" "not found" "$NYALA" table add_column "$M" nosuch c INT64

# README's "Changing a table" block, every command in order, on the example spec's table.
"$NYALA" table create "$M" "$("$NYALA" table create --help | awk '/^  \{"name": "metrics"/ {on = 1} on {print} on && /"num_replicas"/ {exit}')" >/dev/null ||
  fail "create the example spec's metrics table"
block=$(awk '/<!-- alter tour/ {on = 1; next} on && /^```sh/ {in_block = 1; next} in_block && /^```/ {exit} in_block' "$ROOT/README.md")
block=${block//build\/bin\/nyala/\"\$NYALA\"}
block=$(sed "s|^M=.*|M=$M|" <<<"$block")
if out=$(NYALA="$NYALA" bash -euo pipefail -c "$block" 2>&1); then
  echo "ok: README's \"Changing a table\" commands run as written"
else
  fail "README's \"Changing a table\" commands: $out"
fi
check "... and leave the table they describe" same '["host","ts","value","dc"]' \
  "$(describe host_metrics | jq -c '[.columns[].name]')"

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks passed"
