#!/usr/bin/env bash
# The local-cluster scripts around one daemon, as an operator uses them:
# scripts/restart-daemon.sh restarts a tablet server and the master with the command
# line start-cluster.sh recorded (same flags, ports and data dir: the data is still
# there, ksck healthy again), leaving the other daemons alone; kills one that ignores
# SIGTERM, saying so; starts one that was not running; refuses an unknown daemon
# without stopping anything. start-cluster.sh --only refuses a daemon that runs, and a
# port held by a listener or by an outgoing connection (naming the port and the
# process), before starting anything; it warns about ports in the kernel's ephemeral
# range. cluster-status.sh shows a stopped daemon. Ports are picked at run time; every
# process started is stopped by its PID.
#
#   test/cluster-scripts-itest.sh <bin dir>
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export NYALA_BIN_DIR=${1:-$ROOT/build/bin}
NYALA="$NYALA_BIN_DIR/nyala"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nyala-cluster-scripts-XXXXXX")
DATA="$WORK/cluster"
failures=0
helpers=()  # PIDs of the port-holding helpers

cleanup() {
  for pid in "${helpers[@]}"; do kill "$pid" 2>/dev/null || true; done
  for d in "$DATA" "$WORK/eph"; do
    [ -d "$d" ] && "$ROOT/scripts/stop-cluster.sh" --data "$d" --grace 5 >/dev/null 2>&1 || true
  done
  if [ "$failures" -eq 0 ]; then rm -rf "$WORK"; else echo "kept $WORK for inspection"; fi
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
check() {  # check <description> <command...>: the command must succeed
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else fail "$what"; fi
}
contains() { grep -qF -- "$2" <<<"$1" || { printf 'not found: %s\nin: %s\n' "$2" "$1" >&2; return 1; }; }
alive() { kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
pid_of() { cat "$DATA/pids/$1.pid"; }
wait_gone() {  # wait_gone <pid>: up to 20 s
  for _ in $(seq 1 200); do alive "$1" || return 0; sleep 0.1; done
  return 1
}
# hold_port listen <port> | connect <port> <to port>: a helper process holding
# 127.0.0.1:<port>, as a listener or as the local port of a connection; waits until it
# does. Its PID is in HELPER.
hold_port() {
  local ready="$WORK/ready.$1.$2"
  "$PY" - "$1" "$2" "${3:-0}" "$ready" <<'PY' &
import socket, sys, time
mode, port, to, ready = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
s = socket.socket()
if mode == "listen":  # as a daemon does: past the stopped daemon's TIME-WAIT sockets
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
if mode == "listen":
    s.listen()
else:
    s.connect(("127.0.0.1", to))
open(ready, "w").close()
time.sleep(120)
PY
  HELPER=$!
  helpers+=("$HELPER")
  for _ in $(seq 1 100); do [ -e "$ready" ] && return 0; sleep 0.1; done
  fail "the helper holding port $2 did not get it"
  return 1
}
release() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
count_is() { [ "$("$NYALA" table count "$M" t 2>/dev/null | grep -oE '[0-9]+' | tail -1)" = "$1" ]; }
ksck_healthy() {  # up to 30 s
  for _ in $(seq 1 60); do
    "$NYALA" cluster ksck "$M" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  "$NYALA" cluster ksck "$M" >&2 || true
  return 1
}
# same_cmdline <name>: the running process has the recorded command line, byte for byte.
same_cmdline() { cmp "/proc/$(pid_of "$1")/cmdline" "$DATA/cmdlines/$1"; }

source "$ROOT/test/itest_util.sh"
BASE=$(pick_base_port 3)
M="127.0.0.1:$BASE"
NYALA_TSERVER_FLAGS="--heartbeat_interval_ms=300" \
  "$ROOT/scripts/start-cluster.sh" --tservers 3 --data "$DATA" --base-port "$BASE" >/dev/null
check "start-cluster records each daemon's command line" \
  contains "$(tr '\0' ' ' <"$DATA/cmdlines/tserver-1")" "--heartbeat_interval_ms=300"
"$NYALA" table create "$M" '{"name": "t", "columns": [{"name": "k", "type": "INT64", "key": true}],
  "hash_partitions": [{"columns": ["k"], "buckets": 2}]}' >/dev/null
seq 1 100 | (echo k; cat) >"$WORK/rows.csv"
"$NYALA" table insert "$M" t --file="$WORK/rows.csv" >/dev/null
check "100 rows in" count_is 100

# A tablet server: stopped and started again with the same command line; the others stay.
old=$(pid_of tserver-1) master_pid=$(pid_of master) ts0=$(pid_of tserver-0)
out=$("$ROOT/scripts/restart-daemon.sh" --data "$DATA" tserver-1 2>&1) || fail "restart-daemon tserver-1: $out"
check "restart-daemon tserver-1 says what it did" contains "$out" "stopped tserver-1 (pid $old)"
check "... the old process is gone" wait_gone "$old"
check "... a new one runs" alive "$(pid_of tserver-1)"
check "... with the recorded command line" same_cmdline tserver-1
check "... on the same RPC port" contains "$(cat "$DATA/tserver-1.info")" "rpc=127.0.0.1:$((BASE + 11))"
check "... the other daemons kept running" test "$(pid_of master) $(pid_of tserver-0)" = "$master_pid $ts0"
check "... its replicas are back: ksck healthy" ksck_healthy
check "... every row is there" count_is 100

# The master.
old=$(pid_of master)
out=$("$ROOT/scripts/restart-daemon.sh" --data "$DATA" master 2>&1) || fail "restart-daemon master: $out"
check "restart-daemon master" contains "$out" "Started master of the cluster"
check "... the old master is gone" wait_gone "$old"
check "... the new one has the recorded command line" same_cmdline master
check "... every tablet server has heartbeated to it" \
  test "$("$NYALA" tserver list "$M" --format=csv | grep -c ',LIVE,')" -eq 3
check "... ksck healthy" ksck_healthy
check "... every row is there" count_is 100

# A daemon that ignores SIGTERM (stopped with SIGSTOP) is killed after --grace.
old=$(pid_of tserver-2)
kill -STOP "$old"
out=$("$ROOT/scripts/restart-daemon.sh" --data "$DATA" --grace 1 tserver-2 2>&1) ||
  fail "restart-daemon of a stopped process: $out"
check "restart-daemon kills a daemon that ignores SIGTERM, saying so" \
  contains "$out" "tserver-2 (pid $old) ignored SIGTERM for 1s; killing it with SIGKILL"
check "... and starts it again" same_cmdline tserver-2

# Refusals, before anything is stopped or started.
before=$(cat "$DATA"/pids/*.pid | sort)
st=0
out=$("$ROOT/scripts/start-cluster.sh" --data "$DATA" --only tserver-0 2>&1) || st=$?
check "start-cluster --only of a running daemon is refused (exit $st)" test "$st" -eq 1
check "... naming it" contains "$out" "tserver-0 of the cluster in $DATA is already running"
st=0
out=$("$ROOT/scripts/restart-daemon.sh" --data "$DATA" tserver-9 2>&1) || st=$?
check "restart-daemon of a daemon the cluster does not have fails (exit $st)" test "$st" -eq 1
check "... saying nothing was stopped" contains "$out" "no command line recorded for tserver-9"
st=0
"$ROOT/scripts/restart-daemon.sh" --data "$DATA" worker-1 >/dev/null 2>&1 || st=$?
check "restart-daemon of a bad name is a usage error (exit $st)" test "$st" -eq 2
check "... no daemon was touched" test "$(cat "$DATA"/pids/*.pid | sort)" = "$before"

# A daemon that is not running (killed): cluster-status shows it, restart-daemon starts it.
old=$(pid_of tserver-0)
kill -KILL "$old"
check "tserver-0 killed" wait_gone "$old"
status=$("$ROOT/scripts/cluster-status.sh" --data "$DATA" || true)
check "cluster-status shows it stopped" grep -qE "^tserver-0 +$old +stopped " <<<"$status"
out=$("$ROOT/scripts/restart-daemon.sh" --data "$DATA" tserver-0 2>&1) || fail "restart-daemon tserver-0: $out"
check "restart-daemon starts a daemon that was not running" contains "$out" "tserver-0 was not running; starting it"
check "... it runs" alive "$(pid_of tserver-0)"

# Its port held by another program while it is down: refused, naming port and process.
old=$(pid_of tserver-0)
kill -TERM "$old"
check "tserver-0 stopped" wait_gone "$old"
port=$((BASE + 10))
if hold_port listen "$port"; then
  st=0
  out=$("$ROOT/scripts/start-cluster.sh" --data "$DATA" --only tserver-0 2>&1) || st=$?
  check "start-cluster --only on a port held by a listener is refused (exit $st)" test "$st" -eq 1
  check "... naming the port" contains "$out" "port $port on 127.0.0.1 is already in use"
  if command -v ss >/dev/null; then
    check "... and the process" contains "$out" "listened on by python3 (pid $HELPER)"
  fi
  check "... before starting anything" test "$(pid_of tserver-0)" = "$old"
  release "$HELPER"
fi
out=$("$ROOT/scripts/start-cluster.sh" --data "$DATA" --only tserver-0 2>&1) || fail "start-cluster --only tserver-0: $out"
check "start-cluster --only tserver-0 starts it once the port is free" same_cmdline tserver-0
check "the cluster is whole: ksck healthy" ksck_healthy

# A new cluster on ports in the ephemeral range, one of them the local port of an
# outgoing connection: a warning naming the range, then a refusal naming the connection.
read -r lo hi </proc/sys/net/ipv4/ip_local_port_range
eph=""
for _ in $(seq 1 50); do
  p=$((lo + RANDOM % (hi - lo - 1100)))
  port_free "$p" && port_free $((p + 1000)) && port_free $((p + 10)) && port_free $((p + 1010)) &&
    { eph=$p; break; }
done
if [ -n "$eph" ] && command -v ss >/dev/null && hold_port connect $((eph + 10)) "$BASE"; then
  st=0
  out=$("$ROOT/scripts/start-cluster.sh" --tservers 1 --data "$WORK/eph" --base-port "$eph" 2>&1) || st=$?
  check "start-cluster with a port held by a connection is refused (exit $st)" test "$st" -eq 1
  check "... warning that its ports lie in the ephemeral range" \
    contains "$out" "lie in the kernel's ephemeral port range $lo-$hi"
  check "... naming the port and the connection" \
    contains "$out" "port $((eph + 10)) on 127.0.0.1 is already in use (the local port of a connection 127.0.0.1:$((eph + 10)) -> $M (ESTAB) by python3 (pid $HELPER))"
  check "... having started nothing" test ! -e "$WORK/eph/pids"
  release "$HELPER"
else
  echo "skipped: the ephemeral-range check (no free ports in $lo-$hi, or no ss)"
fi

out=$("$ROOT/scripts/stop-cluster.sh" --data "$DATA" 2>&1)
check "stop-cluster stops all four" test "$(grep -c '^stopped ' <<<"$out")" -eq 4
if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks passed"
