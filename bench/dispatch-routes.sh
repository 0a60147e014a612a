#!/usr/bin/env bash
# Every RPC dispatch route that has a flag, flag on vs off side by side in one run:
# interleaved pairs (the order alternates, on-off then off-on, so neither side always
# runs first), then the medians. A route stays only where this shows it pays.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: bench/dispatch-routes.sh [options]

Measures each RPC dispatch route that a flag turns on and off, with rpc-bench in sync
mode (one client thread, one call in flight, the case these routes were built for):

  --rpc_inline_calls                  server and client both on CPU 0; server on CPU 0
                                      and the client on CPU 1; unpinned
  --rpc_sync_calls_on_caller_thread   the same three pinnings
  --rpc_reactor_methods               rpc-bench --mode=async --run_on_reactor (100 calls in
                                      flight to a method declared ON_REACTOR), and the
                                      tablet Get fast path: tablet-bench's server CPU per
                                      one-key Get with 16 in flight
  --rpc_inline_batches                rpc-bench --mode=async (100 calls in flight to a
                                      method that runs on a service thread)

For every pair it prints req/s and CPU per request (user + sys, client and server
together) with the flag on and off, then each route's medians and the median of the
per-pair on/off ratios.

Options:
  --build DIR         build directory holding bin/rpc-bench (build)
  --pairs N           on/off pairs per route and pinning (5)
  --seconds S         measured seconds per run (3)
  --client_threads N  rpc-bench --client_threads (1)
  --help              print this and exit
EOF
}

BUILD=build
PAIRS=5
SECONDS_PER_RUN=3
CLIENT_THREADS=1
while (($#)); do
  case "$1" in
    --help | -h) usage; exit 0 ;;
    --build) BUILD=$2; shift 2 ;;
    --pairs) PAIRS=$2; shift 2 ;;
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    --client_threads) CLIENT_THREADS=$2; shift 2 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
BENCH="$BUILD/bin/rpc-bench"
if [[ ! -x "$BENCH" ]]; then
  echo "no $BENCH: build first (cmake --build $BUILD -j2 --target rpc-bench)" >&2
  exit 1
fi

# One rpc-bench run (sync unless the arguments say --mode=async); prints
# "<req/s> <user+sys CPU us per request>". With RUNNER=tablet_get, one small
# tablet-bench run instead: "<calls/s> <server CPU us per one-key Get>", 16 in flight.
run() {
  if [[ "${RUNNER:-rpc}" == tablet_get ]]; then
    "$BUILD/bin/tablet-bench" --rows=20000 --get_ops=1000 --rounds=1 --rpc_rows=20000 \
      --rpc_get_ops=20000 "$@" 2>/dev/null |
      awk '/in flight: server CPU per one-key Get:/ {
        c = $9; r = $11; sub(/\(/, "", r); printf "%s %.2f\n", r, c }'
    return
  fi
  "$BENCH" --mode=sync --client_threads="$CLIENT_THREADS" --run_seconds="$SECONDS_PER_RUN" \
    "$@" 2>/dev/null | awk '/^Reqs\/sec:/ {r = $2}
      /^User CPU per req:/ {u = $5 + 0}
      /^Sys CPU per req:/ {s = $5 + 0}
      END {if (r != "") printf "%s %.2f\n", r, u + s}'
}

median() {  # median <printf format> <values...>
  local fmt=$1
  shift
  printf '%s\n' "$@" | sort -g | awk -v fmt="$fmt\n" '{a[NR] = $1} END {
    printf fmt, (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

ROW='%-33s %-15s %-6s %10s %10s %7s %9s %9s\n'
summary=()

# measure <flag> <pinning label> <rpc-bench pinning flags...>
measure() {
  local flag=$1 label=$2
  shift 2
  local on_r=() off_r=() on_c=() off_c=() ratios=() i first second on off
  for ((i = 1; i <= PAIRS; i++)); do
    if ((i % 2)); then first=true second=false; else first=false second=true; fi
    local -A got=()
    for v in "$first" "$second"; do
      got[$v]=$(run "--$flag=$v" "$@")
      if [[ -z "${got[$v]}" ]]; then
        echo "rpc-bench --$flag=$v $* printed no figures; run it by hand to see why" >&2
        exit 1
      fi
    done
    read -r on _ <<<"${got[true]}"
    read -r off _ <<<"${got[false]}"
    on_r+=("$on")
    off_r+=("$off")
    on_c+=("$(awk '{print $2}' <<<"${got[true]}")")
    off_c+=("$(awk '{print $2}' <<<"${got[false]}")")
    ratios+=("$(awk -v a="$on" -v b="$off" 'BEGIN {printf "%.3f", a / b}')")
    # shellcheck disable=SC2059
    printf "$ROW" "--$flag" "$label" "$i" "$on" "$off" "${ratios[-1]}" "${on_c[-1]}" "${off_c[-1]}"
    unset got
  done
  # shellcheck disable=SC2059
  summary+=("$(printf "$ROW" "--$flag" "$label" median "$(median %.0f "${on_r[@]}")" \
    "$(median %.0f "${off_r[@]}")" "$(median %.3f "${ratios[@]}")" \
    "$(median %.2f "${on_c[@]}")" "$(median %.2f "${off_c[@]}")")")
}

echo "rpc-bench --mode=sync --client_threads=$CLIENT_THREADS, $PAIRS pairs per row, ${SECONDS_PER_RUN}s per run"
echo "load at start: $(uptime | sed 's/.*load average: //')"
# shellcheck disable=SC2059
printf "$ROW" route pinning pair "on req/s" "off req/s" on/off "on us/req" "off us/req"
measure rpc_inline_calls "one CPU (0)" --server_cpu=0 --client_cpu=0
measure rpc_inline_calls "across (0, 1)" --server_cpu=0 --client_cpu=1
measure rpc_inline_calls unpinned
measure rpc_sync_calls_on_caller_thread "one CPU (0)" --server_cpu=0 --client_cpu=0
measure rpc_sync_calls_on_caller_thread "across (0, 1)" --server_cpu=0 --client_cpu=1
measure rpc_sync_calls_on_caller_thread unpinned
# Methods declared to run on the reactor: rpc-bench's AddInline with 100 async calls in
# flight, and the tablet Get fast path (tablet-bench, server CPU per one-key Get).
measure rpc_reactor_methods "async, unpinned" --mode=async --run_on_reactor
RUNNER=tablet_get measure rpc_reactor_methods "tablet Get, 16 in flight"
# A read's calls run as a batch on the reactor: rpc-bench's Add with 100 async calls in
# flight (each read brings several).
measure rpc_inline_batches "async, unpinned" --mode=async
echo "load at end: $(uptime | sed 's/.*load average: //')"
echo
echo "Medians (on/off: median of the per-pair req/s ratios; us/req: user + sys CPU per request)"
# shellcheck disable=SC2059
printf "$ROW" route pinning "" "on req/s" "off req/s" on/off "on us/req" "off us/req"
printf '%s\n' "${summary[@]}"
echo "(the tablet Get row: calls/s and server CPU per one-key Get from tablet-bench)"
