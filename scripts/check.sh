#!/usr/bin/env bash
# The checks CI runs after scripts/test.sh; see usage() below.
set -euo pipefail

usage() {
  cat <<'USAGE'
Usage: scripts/check.sh [--help] [STAGE...]

Runs the checks CI adds after the README's test command (scripts/test.sh). With no
STAGE, runs both, in this order:

  thread-safety  Compiles every .cc under src/ with clang++ -fsyntax-only
                 -Wthread-safety -Werror, using the include directories and defines
                 of a clang configuration of the real build (the generated protobuf
                 and service headers are made first). Fails on any warning.
  sanitizers     Builds the unit tests with assertions on (DCHECKs compiled in, no
                 NDEBUG) under AddressSanitizer and UndefinedBehaviorSanitizer (UB
                 aborts the test), then runs them: ctest -LE integration. The
                 Raft simulator runs 2,000 seeded schedules there, not 10,000.

Each stage configures its own build directory under CHECK_DIR, leaving the normal
build directory alone.

Environment:
  CHECK_DIR   parent of the stage build directories (default: build-check)
  JOBS        parallel compile and test jobs (default: 2)
  CTEST_ARGS  extra ctest arguments for the sanitizers stage (e.g. "-R rpc")

Exits non-zero when a stage fails. Needs clang++ and ninja (scripts/setup-deps.sh
installs them).

Cost from an empty CHECK_DIR, without ccache (2026-12-02, 2-vCPU KVM development VM,
shared with other builds): thread-safety about 250 s of CPU, sanitizers about 820 s of
CPU (most of it the instrumented build; the tests run in under 30 s): about 9 minutes
of wall time on two idle cores.
USAGE
}

stages=()
for arg in "$@"; do
  case "$arg" in
    -h|--help) usage; exit 0 ;;
    thread-safety|sanitizers) stages+=("$arg") ;;
    *) echo "check: unknown argument $arg (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#stages[@]} -eq 0 ] && stages=(thread-safety sanitizers)

cd "$(dirname "$0")/.."
ROOT=$(pwd)
CHECK_DIR=${CHECK_DIR:-build-check}
JOBS=${JOBS:-2}
bash scripts/setup-deps.sh

thread_safety() {
  local dir="$CHECK_DIR/thread-safety"
  local clangxx
  clangxx=$(command -v clang++-14 || command -v clang++)
  echo "check: thread-safety: configuring $dir with $clangxx"
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER="$clangxx" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
  # Every generated source (protobuf, typed services), so that the includes resolve.
  local generated
  generated=$(ninja -C "$dir" -t targets all |
    sed -nE 's/^(src\/[^:]*\.(pb|service|proxy)\.(h|cc)):.*/\1/p')
  # shellcheck disable=SC2086
  [ -z "$generated" ] || ninja -C "$dir" $generated >/dev/null
  # Each compile command of a source under src/, made syntax-only with the analysis
  # on; one shell command per line, run JOBS at a time.
  local cmds="$dir/thread-safety-commands.txt"
  jq -r --arg src "$ROOT/src/" '.[] | select(.file | startswith($src)) |
      "cd \(.directory) && \(.command)"' "$dir/compile_commands.json" |
    sed -E 's/ -o [^ ]+ -c / -fsyntax-only -Wthread-safety -Werror -c /' >"$cmds"
  local n
  n=$(wc -l <"$cmds")
  echo "check: thread-safety: $n files"
  if ! tr '\n' '\0' <"$cmds" | xargs -0 -n1 -P"$JOBS" bash -c; then
    echo "check: thread-safety: FAILED (clang diagnostics above)" >&2
    return 1
  fi
  echo "check: thread-safety: passed"
}

sanitizers() {
  local dir="$CHECK_DIR/sanitizers"
  echo "check: sanitizers: configuring $dir (address,undefined; assertions on)"
  # RelWithDebInfo's flags without -DNDEBUG, so DCHECKs are compiled in.
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DNYALA_SANITIZE=address,undefined >/dev/null
  # Only the unit tests: the gtest binaries outside the integration label. Tests that
  # are scripts over the daemons (no target of their own) are left to scripts/test.sh,
  # so the daemons are not built here.
  local all targets tests="" skipped=""
  all=$(cd "$dir" && ctest -N -LE integration | sed -nE 's/^ *Test +#[0-9]+: (.*)$/\1/p')
  targets=$(ninja -C "$dir" -t targets all | sed -nE 's/^([^:/]+): phony$/\1/p')
  for t in $all; do
    if grep -qxF "$t" <<<"$targets"; then tests+=" $t"; else skipped+="|$t"; fi
  done
  echo "check: sanitizers: building $(echo "$tests" | wc -w) unit tests"
  # shellcheck disable=SC2086
  cmake --build "$dir" -j"$JOBS" --target $tests
  echo "check: sanitizers: running them${skipped:+ (not: ${skipped#|})}"
  local exclude=()
  [ -z "$skipped" ] || exclude=(-E "^(${skipped#|})\$")
  # shellcheck disable=SC2086
  (cd "$dir" &&
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    ctest --output-on-failure -j"$JOBS" -LE integration "${exclude[@]}" ${CTEST_ARGS:-})
  echo "check: sanitizers: passed"
}

for stage in "${stages[@]}"; do
  case "$stage" in
    thread-safety) thread_safety ;;
    sanitizers) sanitizers ;;
  esac
done
echo "check: all passed (${stages[*]})"
