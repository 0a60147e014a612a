#!/usr/bin/env bash
# The RPC floor, side by side: rpc-bench --mode=async (its defaults: 2 client
# messengers, 100 calls in flight) and libevent-echo (a raw libevent echo, 4
# connections x 25 frames in flight), run as interleaved pairs (A B A B ...) so both
# see the same machine state. CPU per request is user + sys CPU of the whole process
# (client and server together) over the measured window, divided by the requests done.
# Prints each pair's figures and ratio, then the median ratio as the last line.
# Target: ratio <= 2.5. Beside each pair, host-probe's time (a fixed piece of user-space
# work, bench/host_probe.cc) shows how fast the host ran plain code then: on the
# development VM, pairs whose probe took several times its usual 65-80 ms are the ones
# where rpc-bench's user CPU doubled.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: bench/rpc-vs-libevent-echo.sh [options]

Runs rpc-bench --mode=async and libevent-echo alternately, PAIRS times, each under the
same taskset CPU list and the same --server_cpu/--client_cpu pinning, and compares
their CPU per request (user + sys, client and server together). Prints one line per
pair, then as its last line:
  rpc-bench async CPU per request vs raw libevent echo: R
where R is the median over the pairs of (rpc-bench CPU per request) / (echo CPU per
request). The target is R <= 2.5. Each pair's line ends with host-probe's time, how
fast the host ran plain user-space code after that pair (bench/host_probe.cc).

Options:
  --build DIR        build directory holding bin/rpc-bench and bin/libevent-echo (build)
  --pairs N          interleaved pairs to run (5)
  --seconds S        measured seconds per run (3)
  --cpus LIST        taskset -c LIST for both programs (default: every CPU, 0-(nproc-1))
  --server_cpu N     pass --server_cpu=N to both programs (pins their server threads)
  --client_cpu N     pass --client_cpu=N to both programs (pins their client threads)
  --help             print this and exit
EOF
}

BUILD=build
PAIRS=5
SECONDS_PER_RUN=3
CPUS="0-$(($(nproc) - 1))"
PIN=()
while (($#)); do
  case "$1" in
    --help | -h) usage; exit 0 ;;
    --build) BUILD=$2; shift 2 ;;
    --pairs) PAIRS=$2; shift 2 ;;
    --seconds) SECONDS_PER_RUN=$2; shift 2 ;;
    --cpus) CPUS=$2; shift 2 ;;
    --server_cpu) PIN+=("--server_cpu=$2"); shift 2 ;;
    --client_cpu) PIN+=("--client_cpu=$2"); shift 2 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
RPC="$BUILD/bin/rpc-bench"
ECHO="$BUILD/bin/libevent-echo"
PROBE="$BUILD/bin/host-probe"
for b in "$RPC" "$ECHO" "$PROBE"; do
  if [[ ! -x "$b" ]]; then
    echo "no $b: build first (cmake --build $BUILD -j2 --target rpc-bench libevent-echo host-probe)" >&2
    exit 1
  fi
done

# Prints "<user+sys CPU us per request> <req/s>" from one run's output on stdin.
figures() {
  awk '/^Reqs\/sec:/ {r = $2}
       /^User CPU per req:/ {u = $5 + 0}
       /^Sys CPU per req:/ {s = $5 + 0}
       END {if (r != "") printf "%.3f %s\n", u + s, r}'
}

ratios=()
echo "pairs: $PAIRS, ${SECONDS_PER_RUN}s per run, taskset -c $CPUS, pinning: ${PIN[*]:-none}"
echo "load at start: $(uptime | sed 's/.*load average: //')"
for ((i = 1; i <= PAIRS; i++)); do
  read -r rpc_cpu rpc_reqs < <(taskset -c "$CPUS" "$RPC" --mode=async \
    --run_seconds="$SECONDS_PER_RUN" ${PIN[@]+"${PIN[@]}"} 2>/dev/null | figures) || true
  read -r echo_cpu echo_reqs < <(taskset -c "$CPUS" "$ECHO" \
    --seconds="$SECONDS_PER_RUN" ${PIN[@]+"${PIN[@]}"} 2>/dev/null | figures) || true
  if [[ -z "${rpc_cpu:-}" || -z "${echo_cpu:-}" ]]; then
    echo "pair $i: a program printed no figures; run it by hand to see why" >&2
    exit 1
  fi
  r=$(awk -v a="$rpc_cpu" -v b="$echo_cpu" 'BEGIN {printf "%.2f", a / b}')
  ratios+=("$r")
  probe=$("$PROBE" --runs=1 | awk '{print $3}')
  printf 'pair %d: rpc-bench %s us/req (%s req/s), libevent echo %s us/req (%s req/s), ratio %s (host probe %s ms)\n' \
    "$i" "$rpc_cpu" "$rpc_reqs" "$echo_cpu" "$echo_reqs" "$r" "$probe"
  unset rpc_cpu echo_cpu
done
echo "load at end: $(uptime | sed 's/.*load average: //')"
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR] = $1} END {
  if (NR % 2) print a[(NR + 1) / 2]; else printf "%.2f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
echo "target: ratio <= 2.5, median of $PAIRS pairs below"
echo "rpc-bench async CPU per request vs raw libevent echo: $median"
