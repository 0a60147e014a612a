#!/usr/bin/env bash
# The Python client's reads against the C++ client's, side by side: YCSB-C-style point
# reads (uniform keys) with $THREADS threads on one cluster.
#
# Starts a master and one tablet server from <build>/bin (conf/*.gflags, ports picked
# by the daemons, data in a temp dir), loads $RECORDS records with the C++ ycsb (4 hash
# tablets, one 100-byte field), then for $ROUNDS rounds runs, each for $SECONDS_RUN s:
#  1. C++: bench/ycsb.cc, workload C (Get API, requestdistribution=uniform), $THREADS
#     threads;
#  2. Python: bench/ycsb_c.py, $THREADS threads, one Table.get per read;
#  3. Python: bench/ycsb_c.py, $THREADS threads, Table.multi_get of $BATCH keys per call.
# Prints each run's reads/s, then per round the ratios Python / C++ and their medians.
# Stops what it started (by PID) and removes the temp dir, also on failure or Ctrl-C.
#
# Usage: bench/python-vs-cpp-reads.sh [build dir, default build]
# Env:   RECORDS (1000000), THREADS (8), SECONDS_RUN (20), ROUNDS (3), BATCH (16),
#        QUICK=1 (RECORDS=100000 SECONDS_RUN=5 ROUNDS=1), KEEP_WORK=1
# Needs the Python client built (build/python/nyala: pybind11-dev, python3-dev).
set -euo pipefail

die() { echo "python-vs-cpp-reads: $*" >&2; exit 1; }

BUILD=build
case ${1:-} in
  -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  -*) die "unknown option $1 (--help)" ;;
  "") ;;
  *) BUILD=$1 ;;
esac
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # ycsb-common.sh's start_daemon reads ROOT
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source=bench/ycsb-common.sh
source "$HERE/ycsb-common.sh"

if [[ -n "${QUICK:-}" && "${QUICK}" != 0 ]]; then
  : "${RECORDS:=100000}" "${SECONDS_RUN:=5}" "${ROUNDS:=1}"
fi
RECORDS=${RECORDS:-1000000}
THREADS=${THREADS:-8}
SECONDS_RUN=${SECONDS_RUN:-20}
ROUNDS=${ROUNDS:-3}
BATCH=${BATCH:-16}
PYTHON=${PYTHON:-/usr/bin/python3}
[[ -x $PYTHON ]] || PYTHON=python3

check_nyala_bins "$BUILD"
PYPATH=$(cd "$BUILD" && pwd)/python
[[ -f "$PYPATH/nyala/__init__.py" ]] || die "no $PYPATH/nyala: build the Python client (cmake --build $BUILD --target nyala_python)"
WORK=$(mktemp -d /tmp/python-vs-cpp-reads.XXXXXX)
cleanup() {
  stop_children
  remove_work
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
start_cluster one 1
COMMON=(-P "$HERE/ycsb/workloadc" -p recordcount="$RECORDS" -p fieldcount=1 -p fieldlength=100)
log "ycsb load, $RECORDS records"
ycsb_load one "$WORK/load.out" "${COMMON[@]}" -threads 4

run_cpp() {
  "$BIN/ycsb" run "${COMMON[@]}" -p master_addresses="${MASTER_ADDR[one]}" \
    -p requestdistribution=uniform -p use_get_api=true -p operationcount=1000000000 \
    -p maxexecutiontime="$SECONDS_RUN" -threads "$THREADS" >"$WORK/cpp.out" 2>&1 ||
    { cat "$WORK/cpp.out" >&2; die "ycsb run failed"; }
  [[ $(ycsb_failed "$WORK/cpp.out") == 0 ]] || die "the C++ run had failed reads"
  ycsb_rate "$WORK/cpp.out"
}
run_py() {  # run_py <batch>
  PYTHONPATH="$PYPATH" "$PYTHON" "$HERE/ycsb_c.py" --master "${MASTER_ADDR[one]}" \
    --records "$RECORDS" --threads "$THREADS" --seconds "$SECONDS_RUN" --batch "$1" \
    >"$WORK/py.out" 2>&1 || { cat "$WORK/py.out" >&2; die "ycsb_c.py failed"; }
  sed -n 's/^python reads\/s: \([0-9]*\).*/\1/p' "$WORK/py.out"
}

declare -a R1 R16
for ((r = 1; r <= ROUNDS; r++)); do
  log "---- round $r of $ROUNDS, $THREADS threads, ${SECONDS_RUN}s each"
  cpp=$(run_cpp)
  py1=$(run_py 1)
  pyb=$(run_py "$BATCH")
  R1+=("$(ratio "$py1" "$cpp")")
  R16+=("$(ratio "$pyb" "$cpp")")
  log "C++ $(rounded "$cpp") reads/s; Python get $py1 reads/s (${R1[-1]}); Python multi_get of $BATCH $pyb reads/s (${R16[-1]})"
done
echo "Python get / C++, median of the rounds: $(median "${R1[@]}")  (target >= 0.5)"
echo "Python multi_get of $BATCH / C++, median of the rounds: $(median "${R16[@]}")"
