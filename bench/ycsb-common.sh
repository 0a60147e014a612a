# shellcheck shell=bash disable=SC2034  # sourced: the caller reads the variables set here
# Shell functions shared by bench/ycsb-vs-postgres.sh and bench/ycsb-replicas.sh: start
# Nyala clusters from <build>/bin and conf/*.gflags on ports picked at run time, load
# and run ycsb against them, and measure CPU over a run. Sourced, not run.
#
# The caller sets BIN (the binaries), ROOT (the repository), WORK (a temp dir it
# removes) and a `die` function, and calls stop_children from its EXIT trap. Every
# daemon started here is recorded in CHILD_PIDS and stopped by PID.

CHILD_PIDS=()

log() { echo "[$(date +%T)] $*"; }

# Checks that nyala-master, nyala-tserver and ycsb are built in $1/bin; sets BIN.
check_nyala_bins() {
  [[ -d "$1/bin" ]] || die "no $1/bin: build first (cmake --build $1 -j2)"
  BIN=$(cd "$1/bin" && pwd)
  local b
  for b in nyala-master nyala-tserver ycsb; do
    [[ -x "$BIN/$b" ]] || die "$BIN/$b is missing: build it (cmake --build $1 -j2 --target $b)"
  done
}

# Stops `pid` with SIGTERM (or signal $2), SIGKILL after 20 s.
stop_pid() {
  local pid=$1 sig=${2:-TERM}
  kill -0 "$pid" 2>/dev/null || return 0
  kill -"$sig" "$pid" 2>/dev/null || true
  for _ in $(seq 1 200); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "$(basename "$0"): pid $pid did not stop; killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
}

stop_children() {
  local pid
  for pid in "${CHILD_PIDS[@]}"; do stop_pid "$pid"; done
  CHILD_PIDS=()
}

# Removes $WORK, or with KEEP_WORK=1 says where it is.
remove_work() {
  if [[ "${KEEP_WORK:-0}" != 0 ]]; then
    echo "$(basename "$0"): kept $WORK" >&2
  else
    rm -rf "$WORK"
  fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_daemon <name> <binary> <flagfile> [flags...]: starts it with its data in
# $WORK/<name> and prints its RPC address once it is up. Call it with stdout
# redirected to a file, not in $(...): the PID must reach CHILD_PIDS.
start_daemon() {
  local name=$1 binary=$2 flagfile=$3
  shift 3
  mkdir -p "$WORK/$name" "$WORK/logs"
  # In a session of its own, like the postmaster (pg_ctl calls setsid): with the
  # scheduler's autogroups each server then competes for CPU the same way. Not a group
  # leader here, so setsid execs in place and $! is the daemon's PID.
  setsid "$BIN/$binary" --flagfile="$ROOT/conf/$flagfile" --fs_data_dirs="$WORK/$name" \
    --log_dir="$WORK/logs" --rpc_bind_addresses=127.0.0.1:0 --webserver_port=0 \
    --webserver_interface=127.0.0.1 --server_dump_info_path="$WORK/$name.info" "$@" \
    >"$WORK/logs/$name.out" 2>&1 &
  local pid=$!
  CHILD_PIDS+=("$pid")
  echo "$pid" >"$WORK/$name.pid"
  for _ in $(seq 1 300); do
    if [[ -s "$WORK/$name.info" ]]; then
      awk -F= '/^rpc=/ {print $2; exit}' "$WORK/$name.info"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || { tail -20 "$WORK/logs/$name.out" >&2; die "$name exited during start-up"; }
    sleep 0.1
  done
  die "$name did not start within 30 s"
}

# start_cluster <tag> <tablet servers> [tserver flags...]: a master and that many
# tablet servers, named <tag>-master, <tag>-ts0, <tag>-ts1, ... Sets
# MASTER_ADDR[<tag>] and TSERVER_PIDS[<tag>] (space-separated).
declare -A MASTER_ADDR TSERVER_PIDS
start_cluster() {
  local tag=$1 n=$2 i
  shift 2
  start_daemon "$tag-master" nyala-master master.gflags >"$WORK/$tag-master.addr"
  MASTER_ADDR[$tag]=$(cat "$WORK/$tag-master.addr")
  TSERVER_PIDS[$tag]=""
  for ((i = 0; i < n; i++)); do
    start_daemon "$tag-ts$i" nyala-tserver tserver.gflags \
      --tserver_master_addrs="${MASTER_ADDR[$tag]}" "$@" >"$WORK/$tag-ts$i.addr"
    TSERVER_PIDS[$tag]+="${TSERVER_PIDS[$tag]:+ }$(cat "$WORK/$tag-ts$i.pid")"
  done
  log "Nyala $tag: master ${MASTER_ADDR[$tag]} (pid $(cat "$WORK/$tag-master.pid")), $n tablet" \
    "server(s), pids ${TSERVER_PIDS[$tag]}"
}

# ycsb_load <tag> <out file> [ycsb args...]: ycsb load against cluster <tag>, retried
# while the tablet servers register (the table needs its replicas' servers alive).
# Batches get 120 s instead of the client's 10 s: each of the load's 4 threads keeps
# up to two 7 MiB buffers in flight (AUTO_FLUSH_BACKGROUND), and on a machine busy
# with other work a batch to an RF=3 table waited more than 10 s behind the others
# (2026-12-03: 10-20k rows of 1M timed out in 3 RF=3 loads of 4).
ycsb_load() {
  local tag=$1 out=$2
  shift 2
  for _ in $(seq 1 100); do
    if "$BIN/ycsb" load -p master_addresses="${MASTER_ADDR[$tag]}" -p write_timeout_ms=120000 \
      "$@" >"$out" 2>&1; then
      grep -E "OVERALL|INSERT\], Return" "$out"
      if grep -q "INSERT\], Return=-1" "$out"; then
        grep -v '^\[' "$out" | tail -20 >&2
        die "ycsb load into $tag failed for some rows"
      fi
      return 0
    fi
    sleep 0.2
  done
  cat "$out" >&2
  die "ycsb load into $tag failed"
}

# Prints the value of "[OVERALL], Throughput(ops/sec), X" in ycsb output file $1.
ycsb_rate() { awk -F', ' '/^\[OVERALL\], Throughput/ {print $3}' "$1"; }
# Prints the failed operations (Return=-1) of ycsb output file $1.
ycsb_failed() { awk -F', ' '/Return=-1/ {n += $3} END {print n + 0}' "$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "n/a" }'; }
# The median of the numbers given as arguments.
median() {
  [[ $# -gt 0 ]] || { echo "n/a"; return 0; }
  printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {
    if (NR == 0) print "n/a"; else if (NR % 2) print v[(NR + 1) / 2];
    else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# $1 rounded to an integer ("n/a" stays).
rounded() { awk -v v="$1" 'BEGIN { if (v == "n/a") print v; else printf "%.0f", v }'; }

# CPU ticks (user + system, 1/100 s) used so far by each PID given, summed.
cpu_ticks() {
  local pid t=0 f
  for pid in "$@"; do
    # Fields 14 and 15 of /proc/<pid>/stat, counted after the ")" that ends the name.
    f=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | awk '{print $12 + $13}') || f=0
    t=$((t + ${f:-0}))
  done
  echo "$t"
}
# CPU ticks used so far by process $1 and its descendants: its own, its reaped
# children's (cutime + cstime) and its live children's own. For the postmaster: the
# backends of a pgbench run are reaped by the time the run ends, and the background
# processes live on.
tree_ticks() {
  local t c
  t=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{print $12 + $13 + $14 + $15}') || t=0
  for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    t=$((t + $(cpu_ticks "$c")))
  done
  echo "${t:-0}"
}

# Busy and total ticks of the whole machine so far ("busy total"), from /proc/stat.
machine_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat; }

# Ticks of this shell's reaped children: the commands it ran and waited for.
children_ticks() { sed 's/.*) //' "/proc/$$/stat" | awk '{print $14 + $15}'; }

# measure <pid>... -- <command> [args...]: runs the command and sets, over its run,
# RUN_CPU_S (CPU seconds of each PID, space-separated), RUN_CPU_TOTAL_S (their sum),
# RUN_CLIENT_S (CPU seconds of the command itself, e.g. ycsb or pgbench) and RUN_BUSY
# (the whole machine's CPU use in percent of all its CPUs: other work on the machine
# shows here). Call it in this shell, not in $(...). Returns the command's status.
measure() {
  local pids=() before=() i rc=0 mb0 mt0 mb1 mt1 now c0
  while [[ $1 != -- ]]; do pids+=("$1"); shift; done
  shift
  for i in "${pids[@]}"; do before+=("$(cpu_ticks "$i")"); done
  read -r mb0 mt0 < <(machine_ticks)
  c0=$(children_ticks)
  "$@" || rc=$?
  RUN_CLIENT_S=$(awk -v t=$(($(children_ticks) - c0)) 'BEGIN {printf "%.2f", t / 100}')
  read -r mb1 mt1 < <(machine_ticks)
  RUN_CPU_S=""
  local total=0
  for i in "${!pids[@]}"; do
    now=$(cpu_ticks "${pids[$i]}")
    RUN_CPU_S+="${RUN_CPU_S:+ }$(awk -v t=$((now - before[i])) 'BEGIN {printf "%.2f", t / 100}')"
    total=$((total + now - before[i]))
  done
  RUN_CPU_TOTAL_S=$(awk -v t=$total 'BEGIN {printf "%.2f", t / 100}')
  RUN_BUSY=$(awk -v b=$((mb1 - mb0)) -v t=$((mt1 - mt0)) 'BEGIN {printf "%.0f", (t > 0 ? 100 * b / t : 0)}')
  return $rc
}
