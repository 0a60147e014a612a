#!/usr/bin/env bash
# The main job: install dependencies, build, and run a demo. Until the daemons land
# this runs the RPC benchmark (bench/rpc-bench); see README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD_DIR" -j2 --target rpc-bench
echo "== rpc-bench --mode=async (2 client messengers, 100 calls in flight)"
"$BUILD_DIR/bin/rpc-bench" --mode=async --client_threads=2 --async_call_concurrency=100 --run_seconds=5
echo "== rpc-bench --mode=sync (1 thread, one call in flight)"
"$BUILD_DIR/bin/rpc-bench" --mode=sync --client_threads=1 --run_seconds=5
