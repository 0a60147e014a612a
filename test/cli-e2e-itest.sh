#!/usr/bin/env bash
# End-to-end test of the scripts and the CLI, run as a user would: a wrong master
# address reported at once on a terminal, start-cluster, a second start refused (also
# with pids/ gone, leaving master.info and the logs intact, and on ports in use), no
# --help pointing at source files, the example spec of `table create --help`, create a
# table from JSON, insert a CSV with a bad line, count, scan with predicates in every
# format, get, values that start with '-' (keys and table names, with and without
# `--`), row errors reported at their input lines and summaries equal to the table's
# count (duplicates, bad input lines, delete_rows, upsert, a tablet server killed
# mid-load), scans that stream in bounded memory and print what came before a failure,
# tables of three replicas (five refused), tablet list and leader_step_down, ksck
# healthy, one tablet server killed (under-replicated, exit 3), a second (unavailable,
# exit 4), with valid JSON each time, then reads of the closest replica answering
# where leader reads cannot, stop-cluster leaves no process.
# Also checks the web UI escapes user data and that /metrics_prometheus is
# well-formed. A section of its own checks values: every type round-trips scan →
# JSON → insert (NaN, infinities, non-UTF-8 BINARY, timestamps before 1970, NULL),
# timestamps print as ISO-8601, FLOAT 1e40 is a bad line, partitions show as typed key
# ranges in describe and on /tables, and deleted tables leave /tables. Ports are picked at run time.
#
#   test/cli-e2e-itest.sh <bin dir>
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export NYALA_BIN_DIR=${1:-$ROOT/build/bin}
NYALA="$NYALA_BIN_DIR/nyala"
command -v jq >/dev/null || { echo "cli-e2e-itest needs jq (scripts/setup-deps.sh installs it)"; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nyala-cli-e2e-XXXXXX")
DATA="$WORK/cluster"
failures=0

cleanup() {
  [ -d "$WORK/pids.saved" ] && rm -rf "$DATA/pids" && mv "$WORK/pids.saved" "$DATA/pids"
  "$ROOT/scripts/stop-cluster.sh" --data "$DATA" --grace 5 >/dev/null 2>&1 || true
  if [ "$failures" -eq 0 ]; then rm -rf "$WORK"; else echo "kept $WORK for inspection"; fi
}
trap cleanup EXIT

source "$ROOT/test/itest_util.sh"  # fail, check, contains, same, pick_base_port

BASE=$(pick_base_port 3)
M="127.0.0.1:$BASE"

# HTTP GET over bash's /dev/tcp (no curl needed).
http_get() {
  exec 3<>"/dev/tcp/127.0.0.1/$1"
  printf 'GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n' "$2" >&3
  cat <&3
  exec 3<&-
}

# An unknown flag in a flagfile stops the daemon with the flag, the file and the line.
printf -- '--webserver_port=0\n--no_such_flag=3\n' >"$WORK/bad.gflags"
if out=$("$NYALA_BIN_DIR/nyala-master" --flagfile="$WORK/bad.gflags" --fs_data_dirs="$WORK/bad" 2>&1); then
  fail "a flagfile with an unknown flag was accepted"
else
  check "an unknown flagfile flag is named with its file" \
    contains "$out" "unknown flag --no_such_flag in flagfile $WORK/bad.gflags (line 2)"
fi

# A wrong master address: on a terminal (a pty from script(1)) the CLI says within a
# second what it waits for, then fails with exit code 1 at --timeout_ms; without a
# terminal it says nothing extra.
CLOSED=""
for _ in $(seq 1 50); do
  p=$((10000 + RANDOM % 20000))
  if port_free "$p"; then CLOSED=$p; break; fi
done
if [ -n "$CLOSED" ] && command -v script >/dev/null; then
  start_ns=$(date +%s%N)
  first_ms=""
  tty_out=""
  while IFS= read -r line; do
    [ -n "$first_ms" ] || first_ms=$((($(date +%s%N) - start_ns) / 1000000))
    tty_out+="${line%$'\r'}"$'\n'
  done < <(
    st=0
    script -qec "'$NYALA' table list 127.0.0.1:$CLOSED --timeout_ms=3000" /dev/null 2>&1 || st=$?
    echo "exit=$st"
  )
  check "on a terminal, a refused master is named with the retry and the timeout" contains "$tty_out" \
    "master 127.0.0.1:$CLOSED: connection refused, retrying until the 3 s timeout; --timeout_ms to change"
  check "... within a second (first line after ${first_ms:-?} ms)" test "${first_ms:-9999}" -lt 1000
  check "... and the command still fails with exit code 1" contains "$tty_out" "exit=1"
  out=$("$NYALA" table list "127.0.0.1:$CLOSED" --timeout_ms=500 2>&1) && fail "table list of a closed port exited 0"
  if contains "$out" "retrying until"; then fail "without a terminal the retry note is printed"; fi
else
  echo "skipped: the wrong-master-address check (no free port or no script(1))"
fi

export NYALA_MASTER_FLAGS="--tserver_unresponsive_timeout_ms=3000"
export NYALA_TSERVER_FLAGS="--heartbeat_interval_ms=300"
"$ROOT/scripts/start-cluster.sh" --tservers 3 --data "$DATA" --base-port "$BASE"

# Starting again on the same data dir is refused, and the cluster keeps running.
if out=$("$ROOT/scripts/start-cluster.sh" --tservers 3 --data "$DATA" --base-port "$BASE" 2>&1); then
  fail "second start-cluster on the same data dir succeeded"
else
  check "second start is refused with a clear message" contains "$out" "already running"
fi

# With pids/ gone the cluster is still found, by the locks its daemons hold on their data
# dirs, and refused before anything under the data dir is touched: master.info and
# every log file stay as they were (the logs may only have grown).
mv "$DATA/pids" "$WORK/pids.saved"
cp "$DATA/master.info" "$WORK/master.info.before"
mkdir "$WORK/logs.before"
(cd "$DATA/logs" && find . -type f -exec cp --parents {} "$WORK/logs.before/" \;)
links_before=$(cd "$DATA/logs" && find . -type l -printf '%p -> %l\n' | sort)
if out=$("$ROOT/scripts/start-cluster.sh" --tservers 3 --data "$DATA" --base-port "$BASE" 2>&1); then
  fail "a start over a running cluster whose pids/ is gone succeeded"
else
  check "a start with pids/ gone is refused, naming the running daemon" \
    contains "$out" "already running on $DATA/: master (pid"
fi
check "the refused start left master.info as it was" cmp -s "$WORK/master.info.before" "$DATA/master.info"
logs_intact=1
while IFS= read -r f; do
  if ! cmp -s -n "$(stat -c %s "$WORK/logs.before/$f")" "$WORK/logs.before/$f" "$DATA/logs/$f"; then
    echo "log $f was truncated or changed" >&2
    logs_intact=0
  fi
done < <(cd "$WORK/logs.before" && find . -type f)
check "the refused start left every log file intact" test "$logs_intact" -eq 1
check "the refused start left the log symlinks pointing at the running daemons' logs" \
  test "$(cd "$DATA/logs" && find . -type l -printf '%p -> %l\n' | sort)" = "$links_before"
check "the refused start created no pids/" test ! -e "$DATA/pids"
rm -rf "$DATA/pids" && mv "$WORK/pids.saved" "$DATA/pids"
# Another data dir on the ports of the running cluster is refused too.
if out=$("$ROOT/scripts/start-cluster.sh" --tservers 1 --data "$WORK/other" --base-port "$BASE" 2>&1); then
  fail "a start on ports in use succeeded"
  "$ROOT/scripts/stop-cluster.sh" --data "$WORK/other" --grace 5 || true
else
  check "a start on ports in use is refused, naming the port" contains "$out" "port $BASE on 127.0.0.1 is already in use"
fi
check "cluster-status shows 4 running daemons" \
  test "$("$ROOT/scripts/cluster-status.sh" --data "$DATA" | grep -c running)" -eq 4

cat >"$WORK/spec.json" <<'JSON'
{"name": "people",
 "columns": [{"name": "id", "type": "INT64", "key": true},
             {"name": "name", "type": "STRING"},
             {"name": "age", "type": "INT32", "nullable": true}],
 "hash_partitions": [{"columns": ["id"], "buckets": 3}],
 "range_partition": {"columns": ["id"], "splits": [[100]]}}
JSON
check "table create from a JSON file" "$NYALA" table create "$M" "$WORK/spec.json"
# Help text is for someone with the binary, not the source tree: no verb's --help points
# at a source file, and the example spec in `table create --help` creates its table.
help_src=""
while read -r noun verb; do
  if "$NYALA" "$noun" "$verb" --help | grep -qE 'src/|\.h\b'; then help_src="$help_src $noun/$verb"; fi
done < <("$NYALA" --help | awk '/^Nouns:/ {on = 1; next} on && NF == 0 {exit} on && NF >= 2 {for (i = 2; i <= NF; i++) if ($i != "|") print $1, $i}')
check "no --help names a source file (found in:${help_src:- none})" test -z "$help_src"
readme_spec=$(awk '/^## Table specs/ {sec = 1} sec && /^```text/ {on = 1; next} on && /^```/ {exit} on' "$ROOT/README.md")
help_spec=$("$NYALA" table create --help | awk '/^The table spec is/ {on = 1} on && /^Flags:/ {exit} on')
check "README's table spec section is the text of 'table create --help'" same "$help_spec" "$readme_spec"
"$NYALA" table create --help | awk '/For example:$/ {on = 1; next} on && /^Fields/ {exit} on' >"$WORK/example.json"
check "the example spec in 'table create --help' creates a table" "$NYALA" table create "$M" "$WORK/example.json"
printf 'host,ts\nh1,1700000000000001\n' >"$WORK/example.csv"
check "a row inside the example's range bounds is written" "$NYALA" table insert "$M" metrics --file="$WORK/example.csv"
check "the example table counts 1 row" same 1 "$("$NYALA" table count "$M" metrics 2>&1)"
check "the example table's row got the column default" \
  same "h1,2023-11-14T22:13:20.000001Z,0" "$("$NYALA" table scan "$M" metrics --format=csv 2>&1 | tail -n +2)"
"$NYALA" table delete "$M" metrics >/dev/null
out=$("$NYALA" table create "$M" '{"name": "bad", "columns": [{"name": "k", "type": "INT46", "key": true}]}' 2>&1) && fail "bad spec accepted"
check "a bad spec names the offending field" contains "$out" "columns[0].type"
# Three replicas on three tablet servers are accepted; five need five live servers,
# and the error says how many are alive.
check "num_replicas 3 is accepted on 3 tablet servers" "$NYALA" table create "$M" \
  '{"name": "rf3", "num_replicas": 3, "columns": [{"name": "k", "type": "INT64", "key": true}]}'
check "... and rf3 is described with 3 replicas" \
  contains "$("$NYALA" table describe "$M" rf3 --format=json 2>&1)" '"num_replicas":3'
printf 'k\n1\n2\n3\n-4\n' >"$WORK/rf3.csv"
check "4 rows inserted into rf3" "$NYALA" table insert "$M" rf3 --file="$WORK/rf3.csv"
out=$("$NYALA" table create "$M" '{"name": "rf5", "num_replicas": 5, "columns": [{"name": "k", "type": "INT64", "key": true}]}' 2>&1) && fail "num_replicas 5 accepted with 3 tablet servers"
check "num_replicas 5 is refused: REPLICATION_FACTOR_TOO_HIGH" contains "$out" "REPLICATION_FACTOR_TOO_HIGH"
check "... naming how many tablet servers are alive" contains "$out" "needs 5 live tablet servers, 3 are alive"
# tablet list: rf3's one tablet has a LEADER and two FOLLOWERs, each with its term,
# indexes and lag; leader_step_down moves the leadership (to a chosen or a named voter)
# and prints the new leader once the master reports it.
json_ok() { jq -e . >/dev/null 2>&1 <<<"$1"; }
rf3_json=$("$NYALA" tablet list "$M" --table rf3 --format=json 2>&1) || fail "tablet list: $rf3_json"
check "tablet list --format=json is valid JSON" json_ok "$rf3_json"
check "rf3's tablet has one LEADER and two FOLLOWERs" \
  same "FOLLOWER,FOLLOWER,LEADER" "$(jq -r '[.[].role] | sort | join(",")' <<<"$rf3_json")"
check "... every replica RUNNING, its own state (from its server), with a term, indexes and a lag" \
  same "RUNNING:server:number:number:number:number" \
  "$(jq -r '[.[] | [.state, .source, (.term | type), (.committed_index | type), (.applied_index | type), (.lag | type)] | join(":")] | unique | join(" ")' <<<"$rf3_json")"
rf3_tablet=$(jq -r '.[0].tablet_id' <<<"$rf3_json")
old_leader=$(jq -r '.[] | select(.role == "LEADER") | .replica_uuid' <<<"$rf3_json")
check "... listed leader first" same "$old_leader" "$(jq -r '.[0].replica_uuid' <<<"$rf3_json")"
check "tablet list as a table has its header" \
  contains "$("$NYALA" tablet list "$M" --table rf3 2>&1)" "replica_uuid"
out=$("$NYALA" tablet leader_step_down "$M" "$rf3_tablet" --format=json 2>"$WORK/stepdown.err") || fail "leader_step_down: $out $(cat "$WORK/stepdown.err")"
new_leader=$(jq -r '.[0].new_leader // empty' <<<"$out" 2>/dev/null || true)
check "leader_step_down moved the leadership from $old_leader to ${new_leader:-nobody}" \
  test -n "$new_leader" -a "$new_leader" != "$old_leader"
check "... said what it was waiting for" contains "$(cat "$WORK/stepdown.err")" "waiting for the master to report the new leader"
check "... and tablet list shows the new leader" \
  same "$new_leader" "$("$NYALA" tablet list "$M" --table rf3 --format=json | jq -r '.[] | select(.role == "LEADER") | .replica_uuid')"
out=$("$NYALA" tablet leader_step_down "$M" "$rf3_tablet" --new_leader_uuid="$old_leader" --format=csv 2>/dev/null) || fail "leader_step_down back: $out"
check "leader_step_down --new_leader_uuid hands it back to $old_leader" \
  same "$old_leader" "$(tail -n +2 <<<"$out" | cut -d, -f3)"
out=$("$NYALA" tablet leader_step_down "$M" "$rf3_tablet" --new_leader_uuid=not-a-replica 2>&1) && fail "a step-down to a non-replica exited 0"
check "... to a server that is not a voter: INVALID_CONFIG" contains "$out" "INVALID_CONFIG"
out=$("$NYALA" tablet leader_step_down "$M" no-such-tablet 2>&1) && fail "a step-down of an unknown tablet exited 0"
check "... of an unknown tablet: TABLET_NOT_FOUND" contains "$out" "TABLET_NOT_FOUND"
out=$("$NYALA" tablet list "$M" --table no-such-table 2>&1) && fail "tablet list of an unknown table exited 0"
check "tablet list of an unknown table: TABLE_NOT_FOUND" contains "$out" "TABLE_NOT_FOUND"
out=$("$NYALA" table create "$M" '{"name": "rf2", "num_replicas": 2, "columns": [{"name": "k", "type": "INT64", "key": true}]}' 2>&1) && fail "num_replicas 2 accepted"
check "an even num_replicas is refused" contains "$out" "num_replicas must be odd"

printf 'id,name,age\n1,ann,31\n2,"bo, jr",\n3,cy,notanumber\n4,di,45\n150,eve,22\n' >"$WORK/rows.csv"
if out=$("$NYALA" table insert "$M" people --file="$WORK/rows.csv" 2>&1); then
  fail "insert with a bad line exited 0"
fi
check "the bad line is named with its reason" contains "$out" "line 4: column 'age': 'notanumber' is not a valid INT32"
check "count finds the 4 good rows" test "$("$NYALA" table count "$M" people)" = 4

# Row errors are reported at their own input lines, and at no other; the summary counts
# what the table holds. Keys 0, 2, ..., 18 exist; in a CSV of keys 0-19 (key k at line
# k+2, after the header) the ten duplicates are at lines 2, 4, ..., 20.
# The summary of insert/upsert/delete_rows says "1 row", "1 bad input line" in the
# singular: the patterns take both forms.
written_of() { sed -nE 's/^([0-9]+) rows? written .*/\1/p' <<<"$1"; }
count_of() { "$NYALA" table count "$M" "$1" 2>&1; }
check "table create dups" "$NYALA" table create "$M" '{"name": "dups",
  "columns": [{"name": "k", "type": "INT64", "key": true}, {"name": "v", "type": "STRING", "nullable": true}],
  "hash_partitions": [{"columns": ["k"], "buckets": 3}]}'
{ echo k,v; for k in $(seq 0 2 18); do echo "$k,first"; done; } >"$WORK/evens.csv"
out=$("$NYALA" table insert "$M" dups --file="$WORK/evens.csv" 2>&1) || fail "insert of the even keys: $out"
check "the even keys: 10 rows written, nothing rejected" \
  contains "$out" "10 rows written in"
{ echo k,v; for k in $(seq 0 19); do echo "$k,second"; done; } >"$WORK/all.csv"
out=$("$NYALA" table insert "$M" dups --file="$WORK/all.csv" 2>&1) && fail "an insert with duplicates exited 0"
lines=$(grep -oE '^line [0-9]+: ' <<<"$out" | awk '{print $2}' | tr -d : | sort -n | tr '\n' ' ' || true)
check "the duplicates are reported at lines 2, 4, ..., 20 and no other" \
  same "2 4 6 8 10 12 14 16 18 20 " "$lines"
check "... each as already present" test "$(grep -c '^line [0-9]*: Already present' <<<"$out")" -eq 10
if contains "$out" "a row:"; then fail "a row error was reported without its line"; fi
check "... and the summary says 10 written, 10 rejected" \
  contains "$out" "; 0 bad input lines, 10 rows rejected"
check "... 10 of them written" same 10 "$(written_of "$out")"
check "dups counts 20 rows" same 20 "$(count_of dups)"
# A row that fails on the client (no key column) is a bad input line, not a written row.
printf 'v\nno key\n' >"$WORK/nokey.csv"
out=$("$NYALA" table insert "$M" dups --file="$WORK/nokey.csv" 2>&1) && fail "an insert without the key column exited 0"
check "a CSV without the key column: 0 rows written, 1 bad input line" \
  contains "$out" "0 rows written in"
check "... its line is named" contains "$out" "line 2: "
check "... and counted as a bad input line (singular)" contains "$out" "; 1 bad input line, 0 rows rejected"
check "dups still counts 20 rows" same 20 "$(count_of dups)"
# Bad lines, duplicates and new rows mixed: the summary is the count's change.
printf 'k,v\n100,a\nnotanumber,b\n5,dup\n101,c\n,nokey\n102,d\n' >"$WORK/mixed.csv"
out=$("$NYALA" table insert "$M" dups --file="$WORK/mixed.csv" 2>&1) && fail "a mixed insert exited 0"
check "a mixed insert: bad lines 3 and 6, the duplicate at line 4" \
  same "3 4 6 " "$(grep -oE '^line [0-9]+: ' <<<"$out" | awk '{print $2}' | tr -d : | sort -n | tr '\n' ' ')"
summary=$(sed -nE 's/^([0-9]+) rows? written .*; ([0-9]+) bad input lines?, ([0-9]+) rows? rejected$/\1 \2 \3/p' <<<"$out" || true)
check "... summary: 3 written, 2 bad input lines, 1 rejected" same "3 2 1" "$summary"
check "... and dups counts 20 + 3 rows" same 23 "$(count_of dups)"
# delete_rows and upsert count the same way.
printf 'k\n100\n101\n999\nx\n' >"$WORK/del.csv"
out=$("$NYALA" table delete_rows "$M" dups --file="$WORK/del.csv" 2>&1) && fail "delete_rows of a missing key exited 0"
check "delete_rows: the missing key at line 4, the bad line 5" \
  same "4 5 " "$(grep -oE '^line [0-9]+: ' <<<"$out" | awk '{print $2}' | tr -d : | sort -n | tr '\n' ' ')"
check "... 2 rows written (deleted)" same 2 "$(written_of "$out")"
check "... and dups counts 21 rows" same 21 "$(count_of dups)"
out=$("$NYALA" table upsert "$M" dups --file="$WORK/all.csv" 2>&1) || fail "upsert: $out"
check "upsert of keys 0-19: 20 rows written" same 20 "$(written_of "$out")"
check "... and dups counts 21 rows" same 21 "$(count_of dups)"

preds='["AND", [">=", "id", 2], ["NOTNULL", "age"]]'
table_out=$("$NYALA" table scan "$M" people --predicates="$preds" --format=table 2>/dev/null)
csv_out=$("$NYALA" table scan "$M" people --predicates="$preds" --format=csv)
json_out=$("$NYALA" table scan "$M" people --predicates="$preds" --format=json)
check "scan as a table shows di and eve" bash -c "grep -q ' di ' <<<'$table_out' && grep -q ' eve ' <<<'$table_out'"
check "scan as CSV has a header and 2 rows" test "$(sort <<<"$csv_out" | tr '\n' ';')" = "150,eve,22;4,di,45;id,name,age;"
check "scan as JSON has the 2 rows" bash -c "grep -q '\"name\":\"di\"' <<<'$json_out' && grep -q '\"id\":150' <<<'$json_out' && ! grep -q '\"ann\"' <<<'$json_out'"
# JSON objects keep the columns' order, the table's or the projection's, not sorted.
check "scan as JSON keeps the table's column order (id, name, age)" same "id,name,age" \
  "$(jq -r '.[0] | keys_unsorted | join(",")' <<<"$json_out" 2>/dev/null)"
check "... and a projection's (age, id)" same "age,id" \
  "$("$NYALA" table scan "$M" people --columns=age,id --format=json | jq -r '.[0] | keys_unsorted | join(",")' 2>/dev/null)"
check "... and so does get" same "name,id" \
  "$("$NYALA" table get "$M" people 150 --columns=name,id --format=json | jq -r '.[0] | keys_unsorted | join(",")' 2>/dev/null)"
out=$("$NYALA" table scan "$M" people --predicates='["AND", ["IN", "id", [1, 2]], ["NULL", "age"]]' --format=csv)
check "IN and NULL predicates" test "$(tail -n +2 <<<"$out")" = '2,"bo, jr",'
out=$("$NYALA" table get "$M" people 150 1 --format=csv)
check "get by key" test "$(tail -n +2 <<<"$out" | sort | tr '\n' ';')" = "1,ann,31;150,eve,22;"

# Values that start with '-' stay positional, with or without a '--' before them, in
# every verb that takes them: key values (negative numbers, strings like -dash) and
# table names; flags still work before, between and after them.
check "table create of a table named -neg" "$NYALA" table create "$M" '{"name": "-neg",
  "columns": [{"name": "k", "type": "INT64", "key": true}, {"name": "s", "type": "STRING", "key": true},
              {"name": "v", "type": "STRING"}]}'
printf 'k,s,v\n-5,-dash,a\n5,dash,b\n-1,--x,c\n-7,-format,d\n' >"$WORK/neg.csv"
check "table insert into -neg (table name after --)" "$NYALA" table insert "$M" --file="$WORK/neg.csv" -- -neg
check "table count of -neg" same 4 "$("$NYALA" table count "$M" -neg 2>&1)"
out=$("$NYALA" table get "$M" -neg -5 -dash --format=csv 2>&1) || true
check "get of the key -5 -dash" same "-5,-dash,a" "$(tail -n +2 <<<"$out")"
out=$("$NYALA" table get "$M" -neg --format csv -5 -dash 2>&1) || true
check "get with '--format csv' before the keys" same "-5,-dash,a" "$(tail -n +2 <<<"$out")"
out=$("$NYALA" table get --format=csv "$M" -- -neg -5 -dash 2>&1) || true
check "get -- -neg -5 -dash" same "-5,-dash,a" "$(tail -n +2 <<<"$out")"
out=$("$NYALA" table get "$M" -neg --format=csv -- -1 --x -7 -format 5 dash 2>&1) || true
check "get after --, of --x and of a key that spells a flag" \
  same "-1,--x,c;-7,-format,d;5,dash,b;" "$(tail -n +2 <<<"$out" | sort | tr '\n' ';')"
out=$("$NYALA" table scan "$M" -neg --format=csv --predicates='["<", "k", -4]' 2>&1) || true
check "scan of -neg with a negative number in the predicate" \
  same "-5,-dash,a;-7,-format,d;" "$(tail -n +2 <<<"$out" | sort | tr '\n' ';')"
check "describe -neg" bash -c '"$0" table describe "$1" -neg >/dev/null' "$NYALA" "$M"
out=$("$NYALA" table get "$M" -neg -5 -dash --formt=csv 2>&1) && fail "a mistyped --flag was accepted"
check "a mistyped --flag is an error naming it, and the flag meant" contains "$out" \
  "unknown flag --formt; did you mean --format?"
check "table delete -neg" "$NYALA" table delete "$M" -- -neg

# ---- Values people can read, and JSON that loses nothing ----
# Every type goes scan --format=json → JSONL (and the array as printed) → insert into a
# second table → scan, and compares equal: NaN and infinities (strings, not null), bytes
# that are not UTF-8 (base64), timestamps before 1970 (ISO-8601 UTC by default, raw
# with --timestamp_format=micros), NULLs. FLOAT 1e40 is a bad input line. describe and
# /tables show partitions as typed key ranges; a deleted table leaves /tables.
vals_spec() {  # vals_spec <name>: a table with a column of every type
  printf '{"name": "%s", "columns": [{"name": "k", "type": "INT64", "key": true},
    {"name": "b", "type": "BOOL", "nullable": true}, {"name": "i8", "type": "INT8", "nullable": true},
    {"name": "i16", "type": "INT16", "nullable": true}, {"name": "i32", "type": "INT32", "nullable": true},
    {"name": "f", "type": "FLOAT", "nullable": true}, {"name": "d", "type": "DOUBLE", "nullable": true},
    {"name": "s", "type": "STRING", "nullable": true}, {"name": "bin", "type": "BINARY", "nullable": true},
    {"name": "t", "type": "UNIXTIME_MICROS", "nullable": true}],
    "hash_partitions": [{"columns": ["k"], "buckets": 2}]}' "$1"
}
for t in vals vals_jsonl vals_array; do
  check "table create $t (every type)" "$NYALA" table create "$M" "$(vals_spec $t)"
done
cat >"$WORK/vals-in.jsonl" <<'JSONL'
{"k": 1, "b": true, "i8": -128, "i16": 32767, "i32": -2147483648, "f": "NaN", "d": "NaN", "s": "ünï \"q\", x", "bin": "AP/+gA==", "t": "1969-12-31T23:59:59.999999Z"}
{"k": 2, "b": false, "i8": 127, "i16": -32768, "i32": 2147483647, "f": "Infinity", "d": "-Infinity", "s": "", "bin": "", "t": -62135596800000001}
{"k": 3, "f": "-Infinity", "d": "Infinity", "t": "2023-11-14T23:13:21.5+01:00"}
{"k": 4, "f": 3.4028235e38, "d": 1.7976931348623157e308, "bin": "3q2+7w==", "t": 0}
{"k": -5, "f": 1.401298464324817e-45, "d": 5e-324, "s": "plain", "t": 1700000001000000}
JSONL
out=$("$NYALA" table insert "$M" vals --file="$WORK/vals-in.jsonl" 2>&1) || fail "JSONL insert of every type: $out"
check "JSONL with NaN/Infinity strings, base64 and ISO times: 5 rows written" same 5 "$(written_of "$out")"
"$NYALA" table scan "$M" vals --format=json >"$WORK/vals.json" 2>"$WORK/vals.err" || fail "scan vals: $(cat "$WORK/vals.err")"
check "scan --format=json of every type is valid JSON" jq -e . "$WORK/vals.json"
by_k() { jq -S 'sort_by(.k)' "$1"; }
check "NaN and infinities are the strings NaN/Infinity/-Infinity, not null" same \
  '[["NaN","NaN"],["Infinity","-Infinity"],["-Infinity","Infinity"]]' \
  "$(by_k "$WORK/vals.json" | jq -c '[.[] | select(.k >= 1 and .k <= 3) | [.f, .d]]')"
check "BINARY is base64 (bytes 00 ff fe 80, not UTF-8)" same '"AP/+gA=="' \
  "$(jq -c '.[] | select(.k == 1) | .bin' "$WORK/vals.json")"
check "UNIXTIME_MICROS prints ISO-8601 UTC, also before 1970 and year 0" same \
  '["1969-12-31T23:59:59.999999Z","0000-12-31T23:59:59.999999Z","2023-11-14T22:13:21.500000Z","1970-01-01T00:00:00.000000Z"]' \
  "$(by_k "$WORK/vals.json" | jq -c '[.[] | select(.k >= 1) | .t]')"
check "NULL stays null" same 'null null' "$(jq -r '.[] | select(.k == 3) | "\(.s) \(.bin)"' "$WORK/vals.json")"
jq -c '.[]' "$WORK/vals.json" >"$WORK/vals.jsonl"
out=$("$NYALA" table insert "$M" vals_jsonl --file="$WORK/vals.jsonl" 2>&1) || fail "insert of the scan as JSONL: $out"
out=$("$NYALA" table insert "$M" vals_array --file="$WORK/vals.json" 2>&1) || fail "insert of the scan's JSON array as printed: $out"
check "insert reads the JSON array that scan prints: 5 rows written" same 5 "$(written_of "$out")"
for t in vals_jsonl vals_array; do
  "$NYALA" table scan "$M" $t --format=json >"$WORK/$t.json" 2>/dev/null || fail "scan $t"
  check "scan → JSON → insert into $t → scan: equal on every type" same "$(by_k "$WORK/vals.json")" "$(by_k "$WORK/$t.json")"
done
check "... and the same in micros" same \
  "$("$NYALA" table scan "$M" vals --format=json --timestamp_format=micros | jq -S 'sort_by(.k)')" \
  "$("$NYALA" table scan "$M" vals_array --format=json --timestamp_format=micros | jq -S 'sort_by(.k)')"
# (grep, not jq: jq reads numbers as doubles, which lose int64 digits)
check "--timestamp_format=micros prints the raw integers (JSON numbers)" \
  same '"t":-62135596800000001 "t":-1 "t":0 "t":1700000001000000 "t":1700000001500000' \
  "$("$NYALA" table scan "$M" vals --format=json --timestamp_format=micros | grep -oE '"t":-?[0-9]+' | sort -t: -k2 -n | paste -sd' ')"
csv_t=$("$NYALA" table scan "$M" vals --format=csv --columns=k,t --predicates='["=", "k", 1]' | tail -n +2)
check "CSV prints timestamps as ISO-8601 too" same "1,1969-12-31T23:59:59.999999Z" "$csv_t"
check "... and the table format" contains "$("$NYALA" table get "$M" vals 1 2>/dev/null)" "1969-12-31T23:59:59.999999Z"
check "--timestamp_format=micros in CSV" same "1,-1" \
  "$("$NYALA" table scan "$M" vals --format=csv --columns=k,t --predicates='["=", "k", 1]' --timestamp_format=micros | tail -n +2)"
out=$("$NYALA" table scan "$M" vals --timestamp_format=seconds 2>&1) && fail "--timestamp_format=seconds accepted"
check "a bad --timestamp_format names the choices" contains "$out" "must be iso8601 or micros"
# CSV in both timestamp forms, and back out as CSV.
printf 'k,t,d\n10,1969-07-20T20:17:40Z,NaN\n11,-14182940000000,-Infinity\n' >"$WORK/vals-t.csv"
out=$("$NYALA" table insert "$M" vals --file="$WORK/vals-t.csv" 2>&1) || fail "CSV with ISO and integer times: $out"
check "CSV takes ISO-8601 and integer times alike" same \
  "10,1969-07-20T20:17:40.000000Z,NaN;11,1969-07-20T20:17:40.000000Z,-Infinity;" \
  "$("$NYALA" table scan "$M" vals --format=csv --columns=k,t,d --predicates='[">=", "k", 10]' | tail -n +2 | sort | tr '\n' ';')"
# Out of range: FLOAT 1e40 and an INT8 of 300 are bad lines; Infinity is allowed.
printf 'k,f,i8\n20,1e40,1\n21,Infinity,1\n22,1.5,300\n' >"$WORK/vals-range.csv"
out=$("$NYALA" table insert "$M" vals --file="$WORK/vals-range.csv" 2>&1) && fail "FLOAT 1e40 accepted"
check "FLOAT 1e40 is a bad input line, out of range" contains "$out" "line 2: column 'f': '1e40' is not a valid FLOAT (out of range"
check "INT8 300 is a bad input line, out of range" contains "$out" "line 4: column 'i8': '300' is not a valid INT8 (out of range"
check "... Infinity is written: 1 row written, 2 bad input lines" same "1 2" \
  "$(sed -nE 's/^([0-9]+) rows? written .*; ([0-9]+) bad input lines?.*/\1 \2/p' <<<"$out")"
check "... the summary says '1 row written' (singular) and '2 bad input lines'" \
  bash -c 'grep -qE "^1 row written in .*; 2 bad input lines, 0 rows rejected$" <<<"$0"' "$out"
check "... and 1e40 was not stored as inf" same "21" \
  "$("$NYALA" table scan "$M" vals --format=csv --columns=k --predicates='[">=", "k", 20]' | tail -n +2 | tr '\n' ' ' | xargs)"
printf '{"k": 23, "f": 1e40}\n' >"$WORK/vals-range.jsonl"
out=$("$NYALA" table insert "$M" vals --file="$WORK/vals-range.jsonl" 2>&1) && fail "JSON FLOAT 1e40 accepted"
check "... in JSON too" contains "$out" "line 1: column 'f'"
check "scan --help states the JSON forms (base64, NaN, ISO-8601, --timestamp_format)" bash -c \
  'h=$("$0" table scan --help); grep -q "base64" <<<"$h" && grep -q "\"NaN\"" <<<"$h" && grep -q "2023-11-14T22:13:21.000000Z" <<<"$h" && grep -q -- "--timestamp_format" <<<"$h"' "$NYALA"
check "insert --help states that it reads the JSON array and base64" bash -c \
  'h=$("$0" table insert --help); grep -q "JSON array" <<<"$h" && grep -q "base64" <<<"$h"' "$NYALA"
# The daemons' --help lists flags by module, not by source file.
for d in nyala-master nyala-tserver; do
  h=$("$NYALA_BIN_DIR/$d" --help 2>&1 || true)
  check "$d --help names no source file" bash -c '! grep -qE "src/|Flags from" <<<"$0" && grep -q -- "--fs_data_dirs" <<<"$0"' "$h"
done
# Partitions as typed key ranges: in describe (bounds, split points, every tablet) and
# on the master's /tables page; no encoded bytes.
check "table create vparts (hash 2 x ranges [-100, 0), [50, 100), [100, -))" "$NYALA" table create "$M" \
  '{"name": "vparts", "columns": [{"name": "k", "type": "INT64", "key": true}],
    "hash_partitions": [{"columns": ["k"], "buckets": 2}],
    "range_partition": {"columns": ["k"], "splits": [[100]],
                        "bounds": [{"lower": [-100], "upper": [0]}, {"lower": [50]}]}}'
desc=$("$NYALA" table describe "$M" vparts 2>&1)
check "describe lists the range bounds" contains "$desc" "Range bounds: k >= -100 AND k < 0; k >= 50"
check "describe lists the split points" contains "$desc" "Range split points: 100"
check "describe shows each tablet's typed partition" contains "$desc" "HASH(k) bucket 1 of 2, k >= 50 AND k < 100"
check "... 6 tablets, each with its hash bucket and range" same 6 "$(grep -cE '^  [0-9a-f]+  HASH\(k\) bucket [01] of 2, k ' <<<"$desc")"
if contains "$desc" "0x"; then fail "describe shows encoded bytes: $desc"; fi
desc_json=$("$NYALA" table describe "$M" vparts --format=json 2>&1)
check "describe --format=json gives range_partition as a spec's splits and bounds" same \
  '{"bounds":[{"lower":[-100],"upper":[0]},{"lower":[50],"upper":[]}],"columns":["k"],"splits":[[100]]}' \
  "$(jq -cS '.range_partition' <<<"$desc_json")"
check "describe lists the ranges as text" contains "$desc" $'Ranges:\n  k >= -100 AND k < 0\n  k >= 50 AND k < 100\n  k >= 100'
VWEB=$((BASE + 1000))
page=$(http_get "$VWEB" /tables)
check "/tables shows partitions as typed key ranges" contains "$page" "HASH(k) bucket 0 of 2, k &gt;= -100 AND k &lt; 0"
if grep -q "keys \[0x" <<<"$page"; then fail "/tables still shows encoded partition keys"; fi
# ... and on the tablet servers' /tablets and /tablet?id= pages (vparts' first tablet
# is on some of the three).
vtablet=$(jq -r '.tablets[0].tablet_id' <<<"$desc_json")
ts_pages="" tablet_pages=""
for i in 0 1 2; do
  ts_pages+=$(http_get "$((BASE + 1010 + i))" /tablets || true)
  tablet_pages+=$(http_get "$((BASE + 1010 + i))" "/tablet?id=$vtablet" || true)
done
check "the tablet servers' /tablets show vparts' partitions as typed key ranges" \
  contains "$ts_pages" "HASH(k) bucket 1 of 2, k &gt;= 50 AND k &lt; 100"
check "... and /tablet?id= of its first tablet" contains "$tablet_pages" \
  "$(jq -r '.tablets[0].partition' <<<"$desc_json" | sed 's/>/\&gt;/g; s/</\&lt;/g')"
ts_pages+=$tablet_pages
if grep -q "0x" <<<"$ts_pages"; then fail "a tablet server's page shows encoded partition keys"; fi
check "table create vgone" "$NYALA" table create "$M" '{"name": "vgone", "columns": [{"name": "k", "type": "INT64", "key": true}]}'
check "/tables lists vgone" contains "$(http_get "$VWEB" /tables)" "<h3>vgone</h3>"
check "table delete vgone" "$NYALA" table delete "$M" vgone
if contains "$(http_get "$VWEB" /tables)" "vgone"; then fail "/tables still lists the deleted table vgone"; else echo "ok: a deleted table leaves /tables"; fi
for t in vals vals_jsonl vals_array vparts; do "$NYALA" table delete "$M" $t >/dev/null; done
# ---- end of the values section ----

# The web UI escapes table names.
"$NYALA" table create "$M" '{"name": "<script>alert(1)</script>", "columns": [{"name": "k", "type": "INT64", "key": true}]}' >/dev/null
MWEB=$((BASE + 1000))
page=$(http_get "$MWEB" /tables)
check "/tables shows the script-named table escaped" contains "$page" "&lt;script&gt;alert(1)&lt;/script&gt;"
if contains "$page" "<script>alert(1)"; then fail "/tables contains an unescaped <script>"; fi
prom=$(http_get "$MWEB" /metrics_prometheus | sed '1,/^\r$/d')
bad=$(grep -vE '^(# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .*|[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? [-+0-9.eEINaf]+)$' <<<"$prom" | grep -v '^$' || true)
check "/metrics_prometheus lines are well-formed" test -z "$bad"
check "/healthz says OK" contains "$(http_get "$MWEB" /healthz)" "OK"
# The CLI pointed at the web port by mistake says so.
wrong_port=$("$NYALA" table list "127.0.0.1:$MWEB" 2>&1 || true)
check "the CLI on a web port says it speaks HTTP" contains "$wrong_port" "web UI port"

# ==== Operator verbs: table statistics, table copy, tserver|master get_flags and
# set_flag, perf table_scan. A section of its own; the cluster is healthy here. ====
VSPEC='{"name": "vsrc", "num_replicas": 1,
  "columns": [{"name": "k", "type": "INT64", "key": true}, {"name": "v", "type": "STRING", "nullable": true}],
  "hash_partitions": [{"columns": ["k"], "buckets": 2}],
  "range_partition": {"columns": ["k"], "splits": [[100]]}}'
check "table create vsrc (2 hash buckets x 2 ranges)" "$NYALA" table create "$M" "$VSPEC"
{ echo k,v; for k in $(seq 0 299); do if [ $((k % 7)) -eq 0 ]; then echo "$k,"; else echo "$k,v$k"; fi; done; } >"$WORK/vsrc.csv"
check "300 rows inserted into vsrc" "$NYALA" table insert "$M" vsrc --file="$WORK/vsrc.csv"
VSRC_COUNT=$(count_of vsrc)
check "vsrc counts 300" same 300 "$VSRC_COUNT"
check "nyala --help lists the new verbs" bash -c '
  h=$("$0" --help); for v in statistics copy get_flags set_flag table_scan; do
    grep -q "$v" <<<"$h" || { echo "missing $v"; exit 1; }; done' "$NYALA"

# table statistics: the tablet servers measure their tablets every
# --update_tablet_stats_interval_ms (5 s) and report them; poll (bounded) until the
# master has a row estimate and a size for the table.
stats=""
for _ in $(seq 1 60); do
  stats=$("$NYALA" table statistics "$M" vsrc --format=json 2>&1) || true
  if json_ok "$stats" && [ "$(jq '.live_row_count > 0 and .on_disk_size > 0 and .tablets_without_stats == 0' <<<"$stats")" = true ]; then
    break
  fi
  sleep 0.5
done
check "table statistics --format=json is valid JSON" json_ok "$stats"
check "... with a live row estimate > 0, a size > 0 and every tablet reported" \
  same true "$(jq '.live_row_count > 0 and .on_disk_size > 0 and .tablets_without_stats == 0' <<<"$stats" 2>/dev/null)"
check "... numbers as numbers (table and replica figures)" \
  same "number number number number" \
  "$(jq -r '[(.on_disk_size | type), (.live_row_count | type), (.tablets[0].on_disk_size | type), (.tablets[0].replicas[0].live_row_count | type)] | join(" ")' <<<"$stats" 2>/dev/null)"
check "... 4 tablets, each with its replica's server address" \
  same "4 true" "$(jq -r '"\(.tablets | length) \([.tablets[].replicas[].address | test(":[0-9]+$")] | all)"' <<<"$stats" 2>/dev/null)"
check "... the table's figures are the sum of its tablets'" \
  same true "$(jq '.on_disk_size == ([.tablets[].on_disk_size] | add) and .live_row_count == ([.tablets[].live_row_count] | add)' <<<"$stats" 2>/dev/null)"
out=$("$NYALA" table statistics "$M" vsrc 2>&1) || fail "table statistics: $out"
check "table statistics as a table names the size and the row estimate" \
  contains "$out" "live row count:"
out=$("$NYALA" table statistics "$M" no-such-table 2>&1) && fail "statistics of an unknown table exited 0"
check "statistics of an unknown table: TABLE_NOT_FOUND" contains "$out" "TABLE_NOT_FOUND"
page=$(http_get $((BASE + 1000)) /tables)
check "the master's /tables page shows vsrc's size and row estimate" \
  contains "$page" "live rows (estimate): $(jq .live_row_count <<<"$stats")"

# tserver / master get_flags and set_flag.
TS0="127.0.0.1:$((BASE + 10))"
out=$("$NYALA" tserver get_flags "$TS0" --flags=heartbeat_interval_ms --format=json 2>&1) || fail "get_flags: $out"
check "tserver get_flags shows --heartbeat_interval_ms as started (300)" \
  same "300 false" "$(jq -r '.[] | select(.flag == "heartbeat_interval_ms") | "\(.value) \(.is_default)"' <<<"$out" 2>/dev/null)"
# Without --flags or --all_flags: the flags whose values differ from their defaults,
# not every flag that conf/tserver.gflags names at its default.
out=$("$NYALA" tserver get_flags "$TS0" --format=json 2>&1) || fail "get_flags: $out"
check "tserver get_flags lists --heartbeat_interval_ms (300, not the default)" \
  same 300 "$(jq -r '.[] | select(.flag == "heartbeat_interval_ms") | .value' <<<"$out" 2>/dev/null)"
check "... but not --rocksdb_block_size_bytes, which the flagfile sets to its default" \
  same "" "$(jq -r '.[] | select(.flag == "rocksdb_block_size_bytes") | .value' <<<"$out" 2>/dev/null)"
check "... and only flags away from their defaults" \
  same "" "$(jq -r '.[] | select(.is_default) | .flag' <<<"$out" 2>/dev/null)"
out=$("$NYALA" tserver get_flags "$TS0" --all_flags --format=json 2>&1) || fail "get_flags --all_flags: $out"
check "get_flags --all_flags lists --rocksdb_block_size_bytes at its default" \
  same "8192 true" "$(jq -r '.[] | select(.flag == "rocksdb_block_size_bytes") | "\(.value) \(.is_default)"' <<<"$out" 2>/dev/null)"
out=$("$NYALA" tserver get_flags "$TS0" --all_flags --tags=runtime --format=csv 2>&1) || fail "get_flags --tags: $out"
check "get_flags --tags=runtime lists scanner_ttl_ms and not rocksdb_block_size_bytes" \
  bash -c 'grep -q "^scanner_ttl_ms," <<<"$0" && ! grep -q "^rocksdb_block_size_bytes," <<<"$0"' "$out"
out=$("$NYALA" tserver set_flag "$TS0" scanner_ttl_ms 60001 2>&1) || fail "set_flag of a runtime flag: $out"
check "set_flag of a runtime flag says old and new value" contains "$out" "changed from '60000' to '60001'"
check "... and get_flags reads the new value back" \
  same 60001 "$("$NYALA" tserver get_flags "$TS0" --flags=scanner_ttl_ms --format=json | jq -r '.[0].value')"
code=0; out=$("$NYALA" tserver set_flag "$TS0" rocksdb_block_size_bytes 4096 2>&1) || code=$?
check "set_flag of a start-up flag is refused with exit code 4 (got $code)" test "$code" -eq 4
check "... saying it cannot be changed while the server runs" contains "$out" "cannot be changed while the server runs"
code=0; out=$("$NYALA" tserver set_flag "$TS0" no_such_flag 1 2>&1) || code=$?
check "set_flag of an unknown flag: exit code 3 (got $code), naming it" \
  bash -c '[ "$0" -eq 3 ] && grep -qF "has no flag --no_such_flag" <<<"$1"' "$code" "$out"
code=0; out=$("$NYALA" tserver set_flag "$TS0" scanner_ttl_ms -5 2>&1) || code=$?
check "set_flag with a bad value: exit code 5 (got $code), value kept" \
  bash -c '[ "$0" -eq 5 ] && grep -qF "bad value for --scanner_ttl_ms" <<<"$1"' "$code" "$out"
check "... the old value stays" \
  same 60001 "$("$NYALA" tserver get_flags "$TS0" --flags=scanner_ttl_ms --format=json | jq -r '.[0].value')"
out=$("$NYALA" tserver get_flags "$TS0" --flags=no_such_flag 2>&1) && fail "get_flags of an unknown flag exited 0"
check "get_flags of an unknown flag names it" contains "$out" "no_such_flag"
check "master get_flags shows --tserver_unresponsive_timeout_ms (3000)" \
  same 3000 "$("$NYALA" master get_flags "$M" --flags=tserver_unresponsive_timeout_ms --format=json | jq -r '.[0].value')"
check "master set_flag changes a runtime flag" "$NYALA" master set_flag "$M" table_locations_ttl_ms 299999
check "... read back" \
  same 299999 "$("$NYALA" master get_flags "$M" --flags=table_locations_ttl_ms --format=json | jq -r '.[0].value')"
"$NYALA" master set_flag "$M" table_locations_ttl_ms 300000 >/dev/null || fail "master set_flag back"
code=0; out=$("$NYALA" master set_flag "$M" fs_data_dirs /tmp 2>&1) || code=$?
check "master set_flag of a start-up flag is refused (exit $code)" test "$code" -eq 4

# table copy: into a new table (created like the source), with predicates, into an
# existing compatible table, refused into an incompatible one and into itself, and a
# failed row-count check exits non-zero.
sorted_scan() { "$NYALA" table scan "$M" "$1" --format=csv ${2:+--predicates="$2"} | tail -n +2 | sort; }
out=$("$NYALA" table copy "$M" vsrc "$M" vcopy 2>&1) || fail "table copy into a new table: $out"
check "copy into a new table passes its row-count check" contains "$out" "row count check passed"
check "... vcopy counts as many rows as vsrc" same "$VSRC_COUNT" "$(count_of vcopy)"
check "... with the same rows" same "$(sorted_scan vsrc)" "$(sorted_scan vcopy)"
check "... the same partitioning and replication" \
  same "$("$NYALA" table describe "$M" vsrc --format=json | jq -c 'del(.name)')" \
  "$("$NYALA" table describe "$M" vcopy --format=json | jq -c 'del(.name)')"
check "... and as many tablets, with the same partitions" \
  same "$("$NYALA" tablet list "$M" --table vsrc --format=json | jq -c '[.[].partition] | sort')" \
  "$("$NYALA" tablet list "$M" --table vcopy --format=json | jq -c '[.[].partition] | sort')"
P='["AND", [">=", "k", 250], ["NOTNULL", "v"]]'
out=$("$NYALA" table copy "$M" vsrc "$M" vpred --predicates="$P" 2>&1) || fail "copy with predicates: $out"
check "copy --predicates copies only the matching rows" \
  same "$("$NYALA" table count "$M" vsrc --predicates="$P")" "$(count_of vpred)"
check "... exactly those rows" same "$(sorted_scan vsrc "$P")" "$(sorted_scan vpred)"
check "table create vexist (same columns, no partitioning)" "$NYALA" table create "$M" \
  '{"name": "vexist", "num_replicas": 1, "columns": [{"name": "k", "type": "INT64", "key": true}, {"name": "v", "type": "STRING", "nullable": true}]}'
printf 'k,v\n1000,there before\n' >"$WORK/vexist.csv"
"$NYALA" table insert "$M" vexist --file="$WORK/vexist.csv" >/dev/null || fail "insert into vexist"
out=$("$NYALA" table copy "$M" vsrc "$M" vexist --predicates='["<", "k", 10]' 2>&1) || fail "copy into an existing table: $out"
check "copy into an existing compatible table: its row and the 10 copied" same 11 "$(count_of vexist)"
check "... the rows of both" \
  same "$( (sorted_scan vsrc '["<", "k", 10]'; echo '1000,there before') | sort)" "$(sorted_scan vexist)"
check "table create vbad (v is INT32)" "$NYALA" table create "$M" \
  '{"name": "vbad", "num_replicas": 1, "columns": [{"name": "k", "type": "INT64", "key": true}, {"name": "v", "type": "INT32", "nullable": true}]}'
out=$("$NYALA" table copy "$M" vsrc "$M" vbad 2>&1) && fail "copy into a table of another schema exited 0"
check "copy into an existing table of another schema is refused, naming the column" \
  contains "$out" "exists with a different schema: column 'v' is INT32 there, STRING here"
check "... and writes nothing" same 0 "$(count_of vbad)"
out=$("$NYALA" table copy "$M" vsrc "$M" 2>&1) && fail "copy of a table into itself exited 0"
check "copy of a table into itself is refused" contains "$out" "the source and the destination are the same table"
out=$("$NYALA" table copy "$M" vsrc "$M" vcopy 2>&1) && fail "a copy whose rows were all rejected exited 0"
check "a copy whose rows are rejected (already present) fails its row-count check" \
  contains "$out" "row count check failed"

# perf table_scan: the rows it reports are the table's count, split over its tablets.
out=$("$NYALA" perf table_scan "$M" vsrc --num_threads=3 --format=json 2>&1) || fail "perf table_scan: $out"
check "perf table_scan --format=json is valid JSON" json_ok "$out"
check "... its total rows are the table's count ($VSRC_COUNT)" same "$VSRC_COUNT" "$(jq .total.rows <<<"$out" 2>/dev/null)"
check "... the sum of its 4 tablets' rows, with bytes and rates as numbers" \
  same "4 $VSRC_COUNT true" \
  "$(jq -r '"\(.tablets | length) \([.tablets[].rows] | add) \(.total.bytes > 0 and (.total.rows_per_s | type) == "number" and (.tablets[0].bytes_per_s | type) == "number")"' <<<"$out" 2>/dev/null)"
out=$("$NYALA" perf table_scan "$M" vsrc --predicates="$P" 2>&1) || fail "perf table_scan --predicates: $out"
check "perf table_scan --predicates reports the matching rows in its total" \
  contains "$out" "Total: $("$NYALA" table count "$M" vsrc --predicates="$P") rows,"
# perf loadgen into an existing table: a run without --key_offset starts one past the
# table's largest key, so a second run writes all its rows too; --key_offset=0 writes
# the first run's keys again (all rejected), --key_offset=5000 keys from 5000.
check "table create lg, with loadgen's columns" "$NYALA" table create "$M" '{"name": "lg",
  "num_replicas": 1, "hash_partitions": [{"columns": ["key"], "buckets": 2}],
  "columns": [{"name": "key", "type": "INT64", "key": true}, {"name": "a", "type": "INT32"},
              {"name": "b", "type": "STRING"}, {"name": "c", "type": "STRING"},
              {"name": "d", "type": "INT32"}]}'
for run in 1 2; do
  out=$("$NYALA" perf loadgen "$M" --table_name=lg --num_threads=2 --num_rows_per_thread=300 2>&1) ||
    fail "loadgen run $run into lg: $out"
  check "loadgen run $run into lg writes its 600 rows" contains "$out" "rows written: 600"
  check "... from key $(((run - 1) * 600)), after the largest key" contains "$out" \
    "Writing keys from $(((run - 1) * 600)), after the largest key in lg"
done
check "lg holds the 1200 rows of both runs" same 1200 "$("$NYALA" table count "$M" lg 2>&1)"
out=$("$NYALA" perf loadgen "$M" --table_name=lg --num_threads=1 --num_rows_per_thread=100 \
  --key_offset=0 2>&1) && fail "loadgen --key_offset=0 into lg (keys that exist) exited 0"
check "loadgen --key_offset=0 writes keys 0-99 again: all 100 rejected" contains "$out" "rejected    : 100"
out=$("$NYALA" perf loadgen "$M" --table_name=lg --num_threads=1 --num_rows_per_thread=100 \
  --key_offset=5000 2>&1) || fail "loadgen --key_offset=5000: $out"
check "loadgen --key_offset=5000 writes keys 5000-5099" same 100 \
  "$("$NYALA" table count "$M" lg --predicates='["AND", [">=", "key", 5000], ["<", "key", 5100]]' 2>&1)"
check "table delete lg" "$NYALA" table delete "$M" lg

# The tables of one replica go: the checks below kill tablet servers and expect every
# tablet to keep a majority.
for t in vsrc vcopy vpred vexist vbad; do
  "$NYALA" table delete "$M" "$t" >/dev/null || fail "table delete $t"
done
# ==== end of h-verbs ====

# A tablet server killed (SIGKILL, by PID) in the middle of a load and started again:
# the summary still equals what the table counts, and every row is in it (rows whose
# outcome is unknown, if any, are counted apart and bound the count).
check "table create load" "$NYALA" table create "$M" '{"name": "load",
  "columns": [{"name": "k", "type": "INT64", "key": true}, {"name": "v", "type": "STRING"}],
  "hash_partitions": [{"columns": ["k"], "buckets": 6}]}'
LOAD_ROWS=800000
seq 0 $((LOAD_ROWS - 1)) | awk 'BEGIN {print "k,v"} {print $1 ",value-" $1}' >"$WORK/load.csv"
"$NYALA" table insert "$M" load --file="$WORK/load.csv" >"$WORK/load.out" 2>&1 &
load_pid=$!
landed=0
for _ in $(seq 1 600); do  # until the load's first batch has landed
  landed=$("$NYALA" table count "$M" load 2>/dev/null || echo 0)
  [ "$landed" -gt 0 ] && break
  kill -0 "$load_pid" 2>/dev/null || break
  sleep 0.05
done
ts_pid=$(cat "$DATA/pids/tserver-0.pid")
mapfile -d '' ts_cmd <"/proc/$ts_pid/cmdline"
if kill -0 "$load_pid" 2>/dev/null; then
  echo "killing tablet server 0 (pid $ts_pid) with $landed of $LOAD_ROWS rows in the table"
else
  echo "note: the load finished before tablet server 0 could be killed"
fi
kill -9 "$ts_pid"
for _ in $(seq 1 200); do kill -0 "$ts_pid" 2>/dev/null || break; sleep 0.05; done
check "tablet server 0 is gone" bash -c '! kill -0 "$0" 2>/dev/null' "$ts_pid"
rm -f "$DATA/tserver-0.info"
nohup "${ts_cmd[@]}" >>"$DATA/logs/tserver-0.out" 2>&1 &
echo $! >"$DATA/pids/tserver-0.pid"
for _ in $(seq 1 300); do [ -s "$DATA/tserver-0.info" ] && break; sleep 0.1; done
check "tablet server 0 runs again" test -s "$DATA/tserver-0.info"
load_status=0
wait "$load_pid" || load_status=$?
out=$(cat "$WORK/load.out")
echo "load (exit $load_status): $(grep -E 'rows? written' <<<"$out")"
written=$(written_of "$out")
timed_out=$(sed -nE 's/.*, ([0-9]+) rows? timed out .*/\1/p' <<<"$out")
rejected=$(sed -nE 's/.*bad input lines?, ([0-9]+) rows? rejected.*/\1/p' <<<"$out")
loaded=$(count_of load || true)
check "the killed load's summary accounts for every row" \
  same "$LOAD_ROWS" "$((${written:-0} + ${rejected:-0} + ${timed_out:-0}))"
if [ -z "$timed_out" ]; then
  check "the killed load's summary ($written written) is the table's count" same "$written" "$loaded"
  check "... every row of the load landed" same "$LOAD_ROWS" "$loaded"
else
  check "the count ($loaded) is within written ($written) and written + timed out" \
    test "$written" -le "$loaded" -a "$loaded" -le $((written + timed_out))
fi

# table scan streams: its memory stays bounded by a batch whatever the result's size
# (the load table holds 800,000 rows; holding them took hundreds of MB), in every
# format, and rows are printed as batches arrive, so a scan that fails midway has
# printed the rows before the failure.
sanitized=0
ldd "$NYALA" 2>/dev/null | grep -qE 'lib(a|t)san' && sanitized=1
if [ -x /usr/bin/time ] && [ "$sanitized" -eq 0 ]; then
  for fmt in table csv json; do
    /usr/bin/time -o "$WORK/rss.$fmt" -f '%M' "$NYALA" table scan "$M" load --format=$fmt \
      >"$WORK/scan.$fmt" 2>/dev/null || fail "scan --format=$fmt of the load table"
    rss_kb=$(tail -n 1 "$WORK/rss.$fmt")
    check "scan --format=$fmt of 800000 rows peaks at ${rss_kb:-?} KB of memory (bound: 100 MB)" \
      test "${rss_kb:-999999999}" -lt 102400
  done
  check "... the CSV holds every row" same $((LOAD_ROWS + 1)) "$(wc -l <"$WORK/scan.csv")"
  check "... the table output holds every row (with header and rule)" \
    same $((LOAD_ROWS + 2)) "$(wc -l <"$WORK/scan.table")"
  check "... the JSON holds every row" same "$LOAD_ROWS" "$(grep -o '"k":' "$WORK/scan.json" | wc -l)"
else
  echo "skipped: the scan memory check (no /usr/bin/time, or a sanitizer build)"
fi
# Read the header of a scan, stop every tablet server (SIGSTOP, by PID) while the CLI
# waits for the reader, then read the rest: the scan's next batch fails, and what came
# before it was printed. A scan that holds its rows until the end would be complete
# by the time its header can be read.
mkfifo "$WORK/scan.fifo"
"$NYALA" table scan "$M" load --format=csv --timeout_ms=1500 >"$WORK/scan.fifo" 2>"$WORK/scan.err" &
scan_pid=$!
exec 4<"$WORK/scan.fifo"
IFS= read -r scan_header <&4 || true
ts_pids=$(cat "$DATA"/pids/tserver-*.pid)
# shellcheck disable=SC2086
kill -STOP $ts_pids
cat <&4 >"$WORK/scan.rest"
exec 4<&-
scan_status=0
wait "$scan_pid" || scan_status=$?
# shellcheck disable=SC2086
kill -CONT $ts_pids
rest=$(wc -l <"$WORK/scan.rest")
check "a scan whose servers stop midway fails (exit $scan_status)" test "$scan_status" -ne 0
check "... after printing its header and $rest of $LOAD_ROWS rows" \
  test "$scan_header" = "k,v" -a "$rest" -gt 0 -a "$rest" -lt "$LOAD_ROWS"
check "... and says how many rows it printed" contains "$(cat "$WORK/scan.err")" "the scan failed after $rest rows"

# Healthy for 2.5 s in a row: the restarted tablet server may still be registering
# and its replicas catching up, and the servers just resumed from SIGSTOP hold
# elections once their election timers (1-2 election timeouts) fire.
healthy_since=""
for _ in $(seq 1 400); do
  if "$NYALA" cluster ksck "$M" >/dev/null 2>&1; then
    [ -n "$healthy_since" ] || healthy_since=$(date +%s%N)
    [ $((($(date +%s%N) - healthy_since) / 1000000)) -ge 2500 ] && break
  else
    healthy_since=""
  fi
  sleep 0.1
done
out=$("$NYALA" cluster ksck "$M" 2>&1) || echo "$out" | tail -n 30  # why, when it is not
check "ksck is healthy" "$NYALA" cluster ksck "$M"
out=$("$NYALA" cluster ksck "$M" --format=json 2>&1) || true
check "ksck --format=json is one valid JSON document" json_ok "$out"
check "... HEALTHY, exit code 0, no tablet unhealthy" \
  same "HEALTHY 0 0 0" "$(jq -r '"\(.status) \(.exit_code) \(.summary.under_replicated) \(.summary.unavailable)"' <<<"$out")"
# Every replica of every tablet checksummed at the same log index: they agree.
out=$("$NYALA" cluster ksck "$M" --checksum_scan 2>&1) || echo "$out" | tail -n 30
check "ksck --checksum_scan is healthy" "$NYALA" cluster ksck "$M" --checksum_scan
check "... and says no replicas disagree" contains "$out" "checksummed, 0 with replicas that disagree"
out=$("$NYALA" cluster ksck "$M" --checksum_scan --format=json 2>&1) || true
check "... JSON: every tablet checksummed, every one agreeing, at an index" \
  same "true true" "$(jq -r '"\([.checksums[] | .agree] | all) \([.checksums[] | .index > 0] | all)"' <<<"$out")"
check "... with one checksum per tablet" \
  same "$(jq -r '.summary.tablets' <<<"$out")" "$(jq -r '.checksums | length' <<<"$out")"

# One tablet server of three killed: every tablet keeps a majority, and a leader once
# the elections of the tablets it led are over: UNDER_REPLICATED, exit code 3. The
# master declares the server itself dead a moment later (--tserver_unresponsive_timeout_ms).
kill -9 "$(cat "$DATA/pids/tserver-1.pid")"
code=0
out=""
for _ in $(seq 1 150); do
  code=0
  out=$("$NYALA" cluster ksck "$M" 2>&1) || code=$?
  if [ "$code" -eq 3 ] && contains "$out" "is dead"; then break; fi
  sleep 0.2
done
check "ksck exits 3 (under-replicated) after one tablet server of three died (exit $code)" test "$code" -eq 3
contains "$out" "is dead" || echo "$out"
check "ksck names the dead server" contains "$out" "is dead"
check "... and the under-replicated tablets" contains "$out" "is UNDER_REPLICATED: replica on"
code=0
out=$("$NYALA" cluster ksck "$M" --format=json 2>/dev/null) || code=$?
check "ksck --format=json of the degraded cluster is valid JSON (exit $code)" json_ok "$out"
check "... UNDER_REPLICATED with exit_code 3 and one dead server" \
  same "UNDER_REPLICATED 3 1 0" \
  "$(jq -r '"\(.status) \(.exit_code) \(.summary.dead_tablet_servers) \(.summary.unavailable)"' <<<"$out")"
ts1_uuid=$(sed -n 's/^uuid=//p' "$DATA/tserver-1.info" 2>/dev/null || true)
dead_replica=$("$NYALA" tablet list "$M" --table rf3 --format=json 2>/dev/null |
  jq -r --arg u "$ts1_uuid" '.[] | select(.replica_uuid == $u) | "\(.state) \(.source) \(.lag)"' || true)
check "tablet list shows rf3's replica on the dead server DEAD, from the master's report, lag unknown" \
  same "DEAD master null" "$dead_replica"
check "ksck --help documents its exit codes" \
  contains "$("$NYALA" cluster ksck --help)" "3 some tablet under-"

# A second one: no tablet of three replicas has a majority left: UNAVAILABLE, exit 4.
kill -9 "$(cat "$DATA/pids/tserver-2.pid")"
code=0
for _ in $(seq 1 100); do
  code=0
  out=$("$NYALA" cluster ksck "$M" --format=json 2>/dev/null) || code=$?
  [ "$code" -eq 4 ] && break
  sleep 0.2
done
check "ksck exits 4 (unavailable) after two tablet servers of three died (exit $code)" test "$code" -eq 4
check "... and says UNAVAILABLE in valid JSON" same "UNAVAILABLE" "$(jq -r .status <<<"$out" 2>/dev/null)"
check "... with a tablet of only one replica running" \
  contains "$out" "1 of 3 replicas running: a majority (2) is needed"

# Without a majority, rf3's last replica has no leader: linearizable reads fail, reads
# of the closest replica answer from its rows. A leader keeps serving reads until its
# lease runs out and check-quorum makes it step down: wait for that first.
ts0_uuid=$(sed -n 's/^uuid=//p' "$DATA/tserver-0.info" 2>/dev/null || true)
role=""
for _ in $(seq 1 300); do
  role=$("$NYALA" tablet list "$M" --table rf3 --format=json 2>/dev/null |
    jq -r --arg u "$ts0_uuid" '.[] | select(.replica_uuid == $u) | .role' || true)
  [ -n "$role" ] && [ "$role" != "LEADER" ] && break
  sleep 0.1
done
check "rf3's last replica is no leader without a majority (role $role)" \
  test -n "$role" -a "$role" != "LEADER"
check "count --replica_selection=CLOSEST reads rf3's 4 rows from the last replica" \
  same 4 "$("$NYALA" table count "$M" rf3 --replica_selection=CLOSEST 2>&1)"
check "get --replica_selection=CLOSEST finds key -4" \
  contains "$("$NYALA" table get "$M" rf3 -4 --replica_selection=CLOSEST --format=csv 2>&1)" "-4"
out=$("$NYALA" table count "$M" rf3 --timeout_ms=2000 2>&1) && fail "a leader read of rf3 answered without a majority: $out"
check "... while a leader read (the default) times out" contains "$out" "Timed out"
out=$("$NYALA" table scan "$M" rf3 --replica_selection=NEAREST 2>&1) && fail "--replica_selection=NEAREST accepted"
check "a bad --replica_selection names the choices" contains "$out" "must be LEADER or CLOSEST"

# stop-cluster finds the daemons by their data-dir locks when pids/ is gone.
pids=$(cat "$DATA"/pids/*.pid 2>/dev/null || true)
check "the cluster still runs daemons to stop" test -n "$pids"
rm -rf "$DATA/pids"
out=$("$ROOT/scripts/stop-cluster.sh" --data "$DATA" 2>&1) || fail "stop-cluster without pids/ failed: $out"
check "stop-cluster without pids/ stops the master, found by its lock" contains "$out" "stopped master (pid"
left=""
for p in $pids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
check "stop-cluster leaves no process" test -z "$left"

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks passed"
