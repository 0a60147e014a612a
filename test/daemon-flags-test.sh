#!/usr/bin/env bash
# The daemons' command-line flags (and the CLI's --version), without starting a
# server: every daemon run stops at start-up (an empty --fs_data_dirs makes a good
# parse end in "--fs_data_dirs is required"), so nothing listens and nothing is left
# running.
#
# Unsafe flags: a flag tagged unsafe set away from its default stops nyala-tserver (the
# daemon that links them; nyala-master runs the same check), naming the flag and
# --unlock_unsafe_flags, from the command line or a flagfile; with
# --unlock_unsafe_flags the daemon goes on; such flags (tagged hidden) are not in
# --help.
#
# --help lists the daemon's own flags first (nyala-master's "master" group,
# nyala-tserver's "tserver"), glog's and gflags' last, and marks runtime flags;
# --helpshort lists the daemon's own flags and the shared daemon flags only.
#
# A mistyped flag, on the command line or in a flagfile, is named with the closest
# known flag. --version of nyala, nyala-master and nyala-tserver prints the project's
# version.
#
#   test/daemon-flags-test.sh <bin dir>
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(cd "${1:-$ROOT/build/bin}" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nyala-daemon-flags-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
failures=0
source "$ROOT/test/itest_util.sh"  # fail, check, contains, same
lacks() { ! grep -qF -- "$2" <<<"$1"; }

# run <daemon> <flags...>: the daemon's output (stdout and stderr) and, last, "exit=N".
run() {
  local daemon=$1 st=0 out
  shift
  out=$(cd "$WORK" && timeout 30 "$BIN/$daemon" "$@" 2>&1) || st=$?
  printf '%s\nexit=%s\n' "$out" "$st"
}

# ==== Unsafe flags ====
out=$(run nyala-tserver --get_inject_latency_ms=5 --fs_data_dirs=)
check "tserver: an unsafe flag is refused, naming it" contains "$out" "--get_inject_latency_ms=5"
check "... and --unlock_unsafe_flags" contains "$out" "--unlock_unsafe_flags"
check "... with exit code 1" contains "$out" "exit=1"
check "... before anything else is checked" lacks "$out" "--fs_data_dirs is required"
out=$(run nyala-tserver --unlock_unsafe_flags --get_inject_latency_ms=5 --fs_data_dirs=)
check "tserver: --unlock_unsafe_flags lets it through" contains "$out" "--fs_data_dirs is required"
check "... and it is logged" contains "$out" "unsafe flag --get_inject_latency_ms=5 set"
out=$(run nyala-tserver --get_inject_latency_ms=0 --fs_data_dirs=)
check "tserver: an unsafe flag at its default is no reason to refuse" \
  contains "$out" "--fs_data_dirs is required"
out=$(run nyala-tserver --unsafe_apply_without_rocksdb_wal --fault_injection_no_catch_up_from_log \
  --fs_data_dirs=)
check "tserver: every unsafe flag set is named" \
  contains "$out" "--fault_injection_no_catch_up_from_log=true, --unsafe_apply_without_rocksdb_wal=true"
out=$(run nyala-tserver --fault_injection_log_sync_delay_ms=20 --fs_data_dirs=)
check "tserver: the message says what is wrong" contains "$out" \
  "error: unsafe flag(s) set: --fault_injection_log_sync_delay_ms=20"
printf -- '--fault_injection_consensus_drop_peers=abc\n' >"$WORK/unsafe.gflags"
out=$(run nyala-tserver --flagfile="$WORK/unsafe.gflags" --fs_data_dirs=)
check "tserver: an unsafe flag from a flagfile is refused" \
  contains "$out" "--fault_injection_consensus_drop_peers=abc"
out=$(run nyala-tserver --flagfile="$WORK/unsafe.gflags" --unlock_unsafe_flags --fs_data_dirs=)
check "... and let through with --unlock_unsafe_flags" contains "$out" "--fs_data_dirs is required"

for daemon in nyala-master nyala-tserver; do
  help=$(run "$daemon" --help)
  check "$daemon --help exits 0" contains "$help" "exit=0"
  check "$daemon --help lists --unlock_unsafe_flags" contains "$help" "--unlock_unsafe_flags"
done
help=$(run nyala-tserver --help)
for hidden in fault_injection_log_sync_delay_ms fault_injection_consensus_drop_peers \
  fault_injection_no_catch_up_from_log get_inject_latency_ms unsafe_apply_without_rocksdb_wal \
  fault_injection_tablet_copy_fail_fetch_one_in fault_injection_tablet_copy_corrupt_fetch_one_in; do
  check "nyala-tserver --help leaves out --$hidden" lacks "$help" "--$hidden"
done
check "... which --helpxml still lists" contains "$(run nyala-tserver --helpxml)" \
  "<name>get_inject_latency_ms</name>"

# ==== --help and --helpshort ====
for d in master:nyala-master tserver:nyala-tserver; do
  group=${d%%:*} daemon=${d#*:}
  help=$(run "$daemon" --help)
  check "$daemon --help lists its own flags first" \
    same "Flags of $group:" "$(grep -m1 '^Flags of' <<<"$help")"
  check "... glog's and gflags' last" \
    same "Flags of logging: Flags of command-line parsing:" \
    "$(grep '^Flags of' <<<"$help" | tail -2 | tr '\n' ' ' | sed 's/ $//')"
  short=$(run "$daemon" --helpshort)
  check "$daemon --helpshort exits 0" contains "$short" "exit=0"
  check "... with the usage" contains "$short" "Usage: $daemon"
  check "... the daemon's own flags and the shared ones" \
    same "Flags of $group: Flags of server:" "$(grep '^Flags of' <<<"$short" | tr '\n' ' ' | sed 's/ $//')"
  check "... such as --fs_data_dirs" contains "$short" "--fs_data_dirs"
  check "... and not glog's" lacks "$short" "--logtostderr"
done
help=$(run nyala-tserver --help)
check "a runtime flag is marked [runtime] in --help" \
  contains "$(grep -- '--heartbeat_interval_ms (' <<<"$help")" "[runtime]"
check "... a start-up flag is not" lacks "$(grep -- '--rocksdb_block_size_bytes (' <<<"$help")" "[runtime]"

# ==== A mistyped flag: named, with the closest known flag ====
out=$(run nyala-tserver --fs_data_dir=/x)
check "tserver: an unknown flag is named with the one meant" contains "$out" \
  "error: unknown flag --fs_data_dir; did you mean --fs_data_dirs?"
check "... exit code 1" contains "$out" "exit=1"
out=$(run nyala-master --rpc_bind_addresses 127.0.0.1:0 --webserver_prot=0 --fs_data_dirs=)
check "master: the same after a flag whose value is the next word" contains "$out" \
  "unknown flag --webserver_prot; did you mean --webserver_port?"
out=$(run nyala-master --nologtostderr --fs_data_dirs=)
check "master: --noflag of a boolean is known" contains "$out" "--fs_data_dirs is required"
out=$(run nyala-master --zzzzqqqq=1 --fs_data_dirs=)
check "master: no guess when nothing is close" same "error: unknown flag --zzzzqqqq; see --help for the flags this program takes"$'\n'"exit=1" "$out"
printf -- '--webserver_port=0\n--heartbeat_interval=300\n' >"$WORK/typo.gflags"
out=$(run nyala-tserver --flagfile="$WORK/typo.gflags" --fs_data_dirs=)
check "tserver: a mistyped flag in a flagfile is named with its line and the one meant" \
  contains "$out" "unknown flag --heartbeat_interval in flagfile $WORK/typo.gflags (line 2); did you mean --heartbeat_interval_ms?"

# ==== --version: the version of project() in CMakeLists.txt, exit code 0 ====
version=$(sed -nE 's/^project\(nyala VERSION ([0-9.]+) .*/\1/p' "$ROOT/CMakeLists.txt")
check "CMakeLists.txt gives a version ($version)" test -n "$version"
for prog in nyala nyala-master nyala-tserver; do
  out=$(run "$prog" --version)
  check "$prog --version prints '$prog version $version' and exits 0" \
    same "$prog version $version"$'\n'"exit=0" "$out"
done
check "nyala -version too" same "nyala version $version"$'\n'"exit=0" "$(run nyala -version)"

if [[ "$failures" -ne 0 ]]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "PASS"
