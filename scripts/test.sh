#!/usr/bin/env bash
# Installs dependencies, configures, builds with -j2 and runs every unit and
# integration test. Exits non-zero on any failure. This is what CI runs.
#   BUILD_DIR   build directory (default: build)
#   CTEST_ARGS  extra arguments for ctest (e.g. "-R rpc")
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" -j2
cd "$BUILD_DIR"
# shellcheck disable=SC2086
ctest --output-on-failure -j2 ${CTEST_ARGS:-}
