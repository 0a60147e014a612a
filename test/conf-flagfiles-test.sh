#!/usr/bin/env bash
# The daemons' flagfiles against the daemons themselves, so they cannot drift:
# conf/master.gflags must list every operator flag nyala-master has, and
# conf/tserver.gflags every one nyala-tserver has, set (`--name=value`) or commented
# out (`# --name=value` at the start of a line).
#
# An operator flag is one the daemon binary links that is defined in this repository's
# src/ (gflags' and glog's own flags are not), except test-only fault injection: a name
# containing `_inject_` or help text saying "for tests". `--helpxml` gives each flag's
# defining file. The test fails naming every operator flag missing from a flagfile,
# every flag a flagfile names that the daemon does not know, and any flagfile the
# daemon itself refuses to load.
#
#   test/conf-flagfiles-test.sh <bin dir> [<conf dir>]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/build/bin}
CONF=${2:-$ROOT/conf}
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# Prints "<name> <file> <meaning>" for every flag of `--helpxml` output on stdin, one a
# line (a help text may span lines in the XML).
flag_table() {
  tr '\n' ' ' | sed 's#<flag>#\n<flag>#g' | sed -n \
    's#^<flag><file>\([^<]*\)</file><name>\([^<]*\)</name><meaning>\([^<]*\)</meaning>.*#\2 \1 \3#p'
}

# Prints the flag names a flagfile lists, set or commented out, one a line.
flagfile_names() {
  sed -n -E 's/^(#[[:space:]]*)?--([A-Za-z0-9_]+)([=[:space:]].*)?$/\2/p' "$1" | sort -u
}

check_daemon() {  # check_daemon <daemon> <flagfile>
  local daemon=$1 flagfile=$2 xml table
  if [[ ! -x "$BIN/$daemon" ]]; then fail "no $BIN/$daemon"; return; fi
  if [[ ! -f "$flagfile" ]]; then fail "no $flagfile"; return; fi
  # --helpxml exits non-zero by design (gflags' help flags do); judge its output.
  xml=$("$BIN/$daemon" --helpxml 2>/dev/null || true)
  table=$(flag_table <<<"$xml")
  if ! grep -q . <<<"$table"; then fail "$daemon --helpxml listed no flags"; return; fi

  local all operator listed n_operator
  all=$(awk '{print $1}' <<<"$table" | sort -u)
  # Ours: the defining file, after its last "src/", exists under this repo's src/.
  operator=$(while read -r name file meaning; do
    local rel=${file##*src/}
    [[ "$file" == *src/* && -f "$ROOT/src/$rel" ]] || continue
    [[ "$name" == *_inject_* ]] && continue
    grep -qi 'for tests' <<<"$meaning" && continue
    echo "$name"
  done <<<"$table" | sort -u)
  n_operator=$(grep -c . <<<"$operator" || true)
  if [[ "$n_operator" -lt 10 ]]; then
    fail "$daemon: only $n_operator flags found defined under src/; is --helpxml's <file> format new?"
  fi
  listed=$(flagfile_names "$flagfile")

  local name missing=0 unknown=0
  for name in $(comm -23 <(echo "$operator") <(echo "$listed")); do
    fail "$daemon: --$name is an operator flag missing from ${flagfile#"$ROOT"/}"
    missing=$((missing + 1))
  done
  for name in $(comm -13 <(echo "$all") <(echo "$listed")); do
    fail "${flagfile#"$ROOT"/} lists --$name, which $daemon does not know"
    unknown=$((unknown + 1))
  done
  # The daemon itself must parse the file: with --fs_data_dirs emptied after it, a good
  # parse reaches main()'s "--fs_data_dirs is required" and stops there; a bad value or
  # an unknown flag stops in gflags with an ERROR line instead. (--helpxml would not
  # tell: gflags handles it before it reports parse errors.)
  local parse
  parse=$(timeout 30 "$BIN/$daemon" --flagfile="$flagfile" --fs_data_dirs= 2>&1 || true)
  if ! grep -q -- '--fs_data_dirs is required' <<<"$parse"; then
    fail "$daemon cannot parse --flagfile=${flagfile#"$ROOT"/}: $parse"
  fi
  echo "$daemon: $n_operator operator flags, $(grep -c . <<<"$listed") in the flagfile," \
    "$missing missing, $unknown unknown"
}

check_daemon nyala-master "$CONF/master.gflags"
check_daemon nyala-tserver "$CONF/tserver.gflags"

# The checks themselves: a flagfile missing one flag, naming an unknown one and giving a
# bad value must fail on all three.
TMP=$(mktemp -d "${TMPDIR:-/tmp}/nyala-flagfiles-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
grep -v -E '^(#[[:space:]]*)?--webserver_port=' "$CONF/master.gflags" >"$TMP/master.gflags"
echo "# --no_such_flag_for_the_check=1" >>"$TMP/master.gflags"
echo "--rpc_num_service_threads=many" >>"$TMP/master.gflags"
# check_daemon runs in the command substitution's subshell: its failures count there, and
# only its messages come back.
out=$(check_daemon nyala-master "$TMP/master.gflags" 2>&1 >/dev/null)
grep -q -- '--webserver_port is an operator flag missing' <<<"$out" ||
  fail "a flagfile without --webserver_port passed: $out"
grep -q -- '--no_such_flag_for_the_check, which nyala-master does not know' <<<"$out" ||
  fail "a flagfile naming --no_such_flag_for_the_check passed: $out"
grep -q -- "nyala-master cannot parse .*illegal value 'many'" <<<"$out" ||
  fail "a flagfile setting --rpc_num_service_threads=many passed: $out"

if [[ "$failures" -ne 0 ]]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "PASS"
