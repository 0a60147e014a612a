#!/usr/bin/env bash
# Builds and runs every test (what CI runs); see usage() below.
set -euo pipefail
usage() {
  cat <<'USAGE'
Usage: scripts/test.sh [--help]

Installs dependencies (scripts/setup-deps.sh), configures, builds with -j2 and runs
every unit and integration test (ctest --output-on-failure -j2). Exits non-zero on
any failure. This is what CI runs, before scripts/check.sh.

Environment:
  BUILD_DIR   build directory (default: build)
  CTEST_ARGS  extra arguments for ctest (e.g. "-R rpc")
USAGE
}
for arg in "$@"; do
  case "$arg" in
    -h|--help) usage; exit 0 ;;
    *) echo "test.sh: unknown argument $arg" >&2; usage >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" -j2
cd "$BUILD_DIR"
# shellcheck disable=SC2086
ctest --output-on-failure -j2 ${CTEST_ARGS:-}
