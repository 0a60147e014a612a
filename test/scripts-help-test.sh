#!/usr/bin/env bash
# Every script in scripts/ answers --help with its usage text (not lines of its source)
# and exit code 0, without doing any of its work: cmake, ctest and apt-get are replaced
# by stubs that record being called. An unknown argument exits 2. Starts no daemon.
#
#   test/scripts-help-test.sh
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nyala-scripts-help-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

mkdir "$WORK/stubs"
for tool in cmake ctest apt-get; do
  printf '#!/bin/sh\necho "%s $*" >>"%s/called"\nexit 1\n' "$tool" "$WORK" >"$WORK/stubs/$tool"
  chmod +x "$WORK/stubs/$tool"
done
export PATH="$WORK/stubs:$PATH"
# Where a script would build or keep a cluster if it did its work.
export BUILD_DIR="$WORK/build" CHECK_DIR="$WORK/build-check" NYALA_CLUSTER_DIR="$WORK/cluster"

for script in "$ROOT"/scripts/*.sh; do
  name=$(basename "$script")
  rm -f "$WORK/called"
  if ! out=$(cd "$WORK" && timeout 60 bash "$script" --help 2>&1); then
    fail "$name --help exited non-zero"
  fi
  first=$(head -n 1 <<<"$out")
  case "$first" in
    "Usage: scripts/$name"*) ;;
    *) fail "$name --help does not start with 'Usage: scripts/$name': $first" ;;
  esac
  # Shell source that a `sed -n 2,14p "$0"` style usage used to leak.
  if grep -qE '^(set -[euo]|[A-Z_]+=|usage\(\)|while |case |  *esac)|\$\(' <<<"$out"; then
    fail "$name --help prints source lines: $(grep -E '^(set -[euo]|[A-Z_]+=|usage\(\)|while |case |  *esac)|\$\(' <<<"$out" | head -n 2 | tr '\n' '|')"
  fi
  if [ -e "$WORK/called" ]; then
    fail "$name --help did work: $(tr '\n' ';' <"$WORK/called")"
  fi
  for dir in build build-check cluster; do
    [ -e "$WORK/$dir" ] && fail "$name --help created $dir/" && rm -rf "${WORK:?}/$dir"
  done
  rm -f "$WORK/called"
  status=0
  (cd "$WORK" && timeout 60 bash "$script" --no-such-argument >/dev/null 2>&1) || status=$?
  [ "$status" -eq 2 ] || fail "$name --no-such-argument exited $status, not 2"
  [ -e "$WORK/called" ] && fail "$name --no-such-argument did work: $(tr '\n' ';' <"$WORK/called")"
  [ "$failures" -eq 0 ] && echo "ok: $name"
done

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks passed"
