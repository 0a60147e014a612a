#!/usr/bin/env bash
# README.md's tour, run as written: every fenced shell block that follows a line
# starting with `<!-- tour` in README.md, in order, as one bash script with `set -e`,
# so the test fails at the first command that fails (and names it). The tour runs on
# a cluster of its own: ports picked at run time instead of 7051 and up (every
# 127.0.0.1:<port> of the cluster's ports in the block is moved by the same offset,
# and `scripts/start-cluster.sh` gets `--base-port`), a temporary data dir
# (NYALA_CLUSTER_DIR, which every script reads), `build/bin/` and `scripts/` of this
# tree, and a temporary working directory. Whatever the outcome, the cluster is
# stopped by its PIDs (scripts/stop-cluster.sh) on exit.
#
#   test/readme-tour-itest.sh <bin dir> [README]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(cd "${1:-$ROOT/build/bin}" && pwd)
README=${2:-$ROOT/README.md}
export NYALA_BIN_DIR=$BIN
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nyala-readme-tour-XXXXXX")
export NYALA_CLUSTER_DIR="$WORK/cluster"
status=1
cleanup() {
  if [ -d "$NYALA_CLUSTER_DIR" ]; then
    "$ROOT/scripts/stop-cluster.sh" --data "$NYALA_CLUSTER_DIR" --grace 5 >/dev/null 2>&1 || true
  fi
  if [ "$status" -eq 0 ]; then rm -rf "$WORK"; else echo "kept $WORK for inspection"; fi
}
trap cleanup EXIT

# The tour's blocks.
awk '
  /^<!-- tour/ { marked = 1; next }
  marked && /^```(sh|bash)[[:space:]]*$/ { inblock = 1; marked = 0; blocks++; next }
  inblock && /^```[[:space:]]*$/ { inblock = 0; next }
  inblock { print }
  END { if (blocks == 0) exit 1 }
' "$README" >"$WORK/tour.txt" || { echo "FAIL: no fenced sh block after a '<!-- tour' line in $README" >&2; exit 1; }
grep -q 'scripts/start-cluster.sh' "$WORK/tour.txt" ||
  { echo "FAIL: the tour does not start a cluster with scripts/start-cluster.sh" >&2; exit 1; }
tservers=$(sed -n 's/.*scripts\/start-cluster.sh.*--tservers[ =]\([0-9][0-9]*\).*/\1/p' "$WORK/tour.txt" | head -1)
tservers=${tservers:-3}

source "$ROOT/test/itest_util.sh"
BASE=$(pick_base_port "$tservers")
# The ports start-cluster.sh uses by default (master 7051 and 8051, tablet server i
# 7061+i and 8061+i) move to BASE and up; any other 127.0.0.1 port is left alone.
BASE="$BASE" ROOT="$ROOT" BIN="$BIN" N="$tservers" perl -pe '
  BEGIN { $b = $ENV{BASE}; $n = $ENV{N}; }
  s{127\.0\.0\.1:(\d+)}{
    my $p = $1; my $o = $p - 7051;
    ($o == 0 || $o == 1000 || ($o >= 10 && $o < 10 + $n) || ($o >= 1010 && $o < 1010 + $n))
      ? "127.0.0.1:" . ($b + $o) : "127.0.0.1:$p"
  }ge;
  s{(^|[\s;(|&`])scripts/start-cluster\.sh}{$1$ENV{ROOT}/scripts/start-cluster.sh --base-port $b}g;
  s{(^|[\s;(|&`])scripts/}{$1$ENV{ROOT}/scripts/}g;
  s{(^|[\s;(|&`])build/bin/}{$1$ENV{BIN}/}g;
' "$WORK/tour.txt" >"$WORK/tour-body.sh"
if grep -nE '127\.0\.0\.1:(70[5-9][0-9]|80[5-9][0-9])\b' "$WORK/tour-body.sh" | grep -v "127.0.0.1:$BASE"; then
  echo "note: the lines above still name a default port after the substitution" >&2
fi
{
  echo 'set -euo pipefail'
  # shellcheck disable=SC2016
  echo 'trap '\''echo "FAIL: README tour command failed (exit $?): $BASH_COMMAND" >&2'\'' ERR'
  echo 'set -x'
  cat "$WORK/tour-body.sh"
} >"$WORK/tour.sh"
echo "== README tour: $(grep -cvE '^[[:space:]]*(#|$)' "$WORK/tour.txt") lines on base port $BASE, data in $NYALA_CLUSTER_DIR"

start=$(date +%s)
st=0
(cd "$WORK" && timeout 240 bash "$WORK/tour.sh") || st=$?
echo "== the tour took $(($(date +%s) - start)) s"
if [ "$st" -ne 0 ]; then
  [ "$st" -eq 124 ] && echo "FAIL: the README tour did not finish within 240 s" >&2
  echo "FAIL: the README tour failed (exit $st); the script run is $WORK/tour.sh" >&2
  exit 1
fi
status=0
echo "all checks passed"
