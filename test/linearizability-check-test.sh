#!/usr/bin/env bash
# linearizability-check end to end: exit status 0/1/2/3 and what it prints, on small
# histories written here. Usage: linearizability-check-test.sh <path to linearizability-check>
set -euo pipefail
check=${1:?usage: $0 <linearizability-check binary>}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect <exit status> <text the output must contain> <check args...>
expect() {
  local want=$1 text=$2
  shift 2
  local rc=0
  "$check" "$@" >"$dir/out" 2>&1 || rc=$?
  [[ $rc == "$want" ]] || { cat "$dir/out" >&2; fail "$* exited $rc, wanted $want"; }
  grep -qF -- "$text" "$dir/out" || { cat "$dir/out" >&2; fail "$*: no '$text' in the output"; }
}

cat >"$dir/ok.jsonl" <<'H'
{"client":1,"op":"upsert","key":1,"value":1,"result":"ok","start_ns":0,"end_ns":10}
{"client":2,"op":"upsert","key":1,"value":2,"result":"unknown","start_ns":20}
{"client":3,"op":"get","key":1,"value":2,"result":"ok","start_ns":100,"end_ns":110}
{"client":1,"op":"insert","key":2,"value":5,"result":"ok","start_ns":0,"end_ns":10}
{"client":2,"op":"delete","key":2,"result":"failed","start_ns":11}
H
expect 0 "linearizable: 5 operations on 2 keys" "$dir/ok.jsonl"
expect 0 "linearizable: 5 operations on 2 keys" - <"$dir/ok.jsonl"

cp "$dir/ok.jsonl" "$dir/bad.jsonl"
echo '{"client":3,"op":"get","key":1,"value":1,"result":"ok","start_ns":200,"end_ns":210}' \
  >>"$dir/bad.jsonl"
expect 1 "key 1 is not linearizable." "$dir/bad.jsonl"
expect 1 "client 3  get(1) -> 1  [200, 210] (line 6)" "$dir/bad.jsonl"
expect 1 "not linearizable: 6 operations on 2 keys" "$dir/bad.jsonl" --minimize=false

# 20 concurrent writes, then a value nobody wrote: far more than 1000 steps to refute.
for i in $(seq 1 20); do
  echo "{\"client\":$i,\"op\":\"upsert\",\"key\":1,\"value\":$i,\"result\":\"ok\",\"start_ns\":0,\"end_ns\":100}"
done >"$dir/hard.jsonl"
echo '{"client":0,"op":"get","key":1,"value":99,"result":"ok","start_ns":200,"end_ns":210}' \
  >>"$dir/hard.jsonl"
expect 2 "unknown (search budget exhausted)" "$dir/hard.jsonl" --max_steps_per_key=1000

printf '%s\n' '{"client":1,"op":"get","key":1,"result":"absent","start_ns":0,"end_ns":1}' \
  '{"client":1,"op":"get","key":1,"result":"absent","start_ns":0' >"$dir/malformed.jsonl"
expect 3 "line 2: not valid JSON" "$dir/malformed.jsonl"
expect 3 "cannot open" "$dir/does-not-exist.jsonl"
expect 3 "Exit status" 
echo "PASS"
