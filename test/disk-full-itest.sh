#!/usr/bin/env bash
# A tablet server's disk fills up in the middle of `nyala table insert`: a real full
# disk (a small tmpfs mounted over the tablet server's data dir, in a private mount
# namespace), real daemons. Checks that
#  - the insert's summary accounts for every row: written + rejected + timed out
#    (outcome unknown) = rows in the file, and the errors name the full disk;
#  - the tablet server keeps answering: the master hears of the FAILED replicas, with
#    the error, and reads get that error instead of waiting in silence;
#  - once there is room again and the server restarts, a count of the table lies
#    between the rows the summary said were written and those plus the timed-out ones,
#    and the table takes writes again.
# Needs root (mount) and unshare(1); exits 77 (CTest: skipped) otherwise.
#
#   test/disk-full-itest.sh <bin dir>
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export NYALA_BIN_DIR=${1:-$ROOT/build/bin}
NYALA="$NYALA_BIN_DIR/nyala"

if [ -z "${NYALA_DISK_FULL_NAMESPACE:-}" ]; then
  if [ "$(id -u)" -ne 0 ] || ! unshare --mount --propagation private true 2>/dev/null; then
    echo "SKIPPED: needs root and a private mount namespace (unshare --mount) for a small tmpfs"
    exit 77
  fi
  NYALA_DISK_FULL_NAMESPACE=1 exec unshare --mount --propagation private "$0" "$@"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/nyala-disk-full-XXXXXX")
DATA="$WORK/cluster"
DISK="$DATA/tserver-0"
failures=0
cleanup() {
  "$ROOT/scripts/stop-cluster.sh" --data "$DATA" --grace 5 >/dev/null 2>&1 || true
  umount "$DISK" 2>/dev/null || true
  if [ "$failures" -eq 0 ]; then rm -rf "$WORK"; else echo "kept $WORK (the tmpfs is gone)"; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
check() {  # check <description> <command...>
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else fail "$what"; fi
}
contains() { grep -qF -- "$2" <<<"$1"; }

mkdir -p "$DISK"
# Room for the tablet server's start-up files and a few MiB of rows.
if ! mount -t tmpfs -o size=16m tmpfs "$DISK"; then
  echo "SKIPPED: cannot mount a tmpfs"
  exit 77
fi

source "$ROOT/test/itest_util.sh"
BASE=$(pick_base_port 1)
M="127.0.0.1:$BASE"
# Small memtables: RocksDB flushes (and needs room) during the load too.
export NYALA_TSERVER_FLAGS="--rocksdb_write_buffer_mb=2"
"$ROOT/scripts/start-cluster.sh" --tservers 1 --data "$DATA" --base-port "$BASE" >/dev/null

"$NYALA" table create "$M" '{"name": "t", "num_replicas": 1,
  "columns": [{"name": "k", "type": "INT64", "key": true}, {"name": "v", "type": "STRING"}],
  "hash_partitions": [{"columns": ["k"], "buckets": 2}]}' >/dev/null

ROWS=200000
{
  echo "k,v"
  seq 0 $((ROWS - 1)) | sed 's/$/,a value of forty bytes to fill the disk..../'
} >"$WORK/rows.csv"

code=0
"$NYALA" table insert "$M" t --file "$WORK/rows.csv" --timeout_ms=5000 \
  >"$WORK/insert.out" 2>&1 || code=$?
summary=$(grep -E '^[0-9]+ rows? written' "$WORK/insert.out" || true)
echo "insert (exit $code): $summary"
check "the insert into a filling disk fails (exit $code)" test "$code" -ne 0
read -r written bad rejected timed_out < <(
  sed -nE 's/^([0-9]+) rows? written.*; ([0-9]+) bad input lines?, ([0-9]+) rows? rejected, ([0-9]+) rows? timed out.*/\1 \2 \3 \4/p' \
    <<<"$summary")
written=${written:-0} bad=${bad:-0} rejected=${rejected:-0} timed_out=${timed_out:-0}
check "the summary accounts for every row ($written + $rejected + $timed_out + $bad bad = $ROWS)" \
  test $((written + rejected + timed_out + bad)) -eq "$ROWS"
check "some rows landed before the disk filled ($written)" test "$written" -gt 0
check "some rows did not ($((rejected + timed_out)))" test $((rejected + timed_out)) -gt 0
check "the failed rows' errors name the full disk" \
  grep -q "No space left on device" "$WORK/insert.out"
check "the tablet server logged the full disk" \
  grep -q "No space left on device" "$DATA/logs/tserver-0/nyala-tserver.ERROR"

# The server still answers: the master learns of the failed replicas with the reason.
listed=""
for _ in $(seq 1 100); do
  listed=$("$NYALA" tablet list "$M" --table t --format=json 2>/dev/null || true)
  contains "$listed" "FAILED" && break
  sleep 0.1
done
check "tablet list shows a FAILED replica" contains "$listed" "FAILED"
code=0
out=$("$NYALA" cluster ksck "$M" 2>&1) || code=$?
check "ksck reports the failed replica with the full disk (exit $code)" \
  contains "$out" "No space left on device"
check "... and exits non-zero" test "$code" -ne 0
code=0
out=$("$NYALA" table count "$M" t --timeout_ms=2000 2>&1) || code=$?
echo "count: ${out:0:400}"
check "a count of the failed tablets fails (exit $code)" test "$code" -ne 0
check "... naming the failed tablet" contains "$out" "TABLET_FAILED: tablet"
check "... and the full disk" contains "$out" "No space left on device"

# Room again; the failed tablets come back with a restart of their server.
mount -o remount,size=256m "$DISK"
"$ROOT/scripts/stop-cluster.sh" --data "$DATA" --grace 10 >/dev/null
"$ROOT/scripts/start-cluster.sh" --tservers 1 --data "$DATA" --base-port "$BASE" >/dev/null
count=""
for _ in $(seq 1 100); do
  count=$("$NYALA" table count "$M" t 2>/dev/null) && break
  sleep 0.2
done
echo "after the restart: $count rows (written $written, timed out $timed_out)"
check "after a restart with room, the table has every acknowledged row ($count >= $written)" \
  test "${count:-0}" -ge "$written"
check "... and no row that was rejected ($count <= $written + $timed_out)" \
  test "${count:-0}" -le $((written + timed_out))
printf 'k,v\n%s,again\n' $((ROWS + 1)) >"$WORK/more.csv"
check "the table takes writes again" "$NYALA" table insert "$M" t --file "$WORK/more.csv"

if [ "$failures" -gt 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all checks passed"
