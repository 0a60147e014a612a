#!/usr/bin/env bash
# Installs the Debian packages Nyala needs; see usage() below.
set -euo pipefail
usage() {
  cat <<'USAGE'
Usage: scripts/setup-deps.sh [--bench]

Installs every Debian package Nyala needs to build and test (as root; uses apt-get).
Idempotent: runs apt-get update only when a package is missing, and prints nothing
when everything is already installed. Chromium, for the web UI browser test, is
installed when it can be; without it that test is skipped.

  --bench  also install what the comparison benchmarks run against (PostgreSQL 15
           for bench/ycsb-vs-postgres.sh). Not needed to build or test.
USAGE
}

WITH_BENCH=0
for arg in "$@"; do
  case "$arg" in
    --bench) WITH_BENCH=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "setup-deps: unknown argument $arg" >&2; usage >&2; exit 2 ;;
  esac
done

PACKAGES=(
  g++ cmake make pkg-config
  libevent-dev
  libprotobuf-dev protobuf-compiler libprotoc-dev
  libgflags-dev libgoogle-glog-dev
  librocksdb-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev
  # tcmalloc for the daemons, the CLI and the benchmarks (NYALA_TCMALLOC in CMakeLists.txt).
  libgoogle-perftools-dev
  # scripts/check.sh: the clang thread-safety compile (ninja and jq drive it).
  clang-14 ninja-build jq
  # test/prometheus-metrics-itest.sh: `promtool check metrics` (the package's
  # service is not needed and not started by the tests).
  prometheus curl
  # The Python client (python/): pybind11 and the Python headers; pandas for to_pandas()
  # and its tests.
  pybind11-dev python3-dev python3-pandas
  # test/client-sdk-itest.sh --deb: cpack's Debian packages (dpkg-shlibdeps) and
  # their check (dpkg-deb, file).
  dpkg-dev file
)

# For the browser test of the web UI (test/web-ui-browser-itest.sh). Best effort: when it
# cannot be installed, that test is skipped with a message, never failed.
OPTIONAL=(chromium)

# Only with --bench: the systems the comparison benchmarks measure against. A failure
# to install them is an error (they were asked for).
BENCH=(postgresql-15)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

missing=()
for p in "${PACKAGES[@]}"; do
  installed "$p" || missing+=("$p")
done
optional_missing=()
for p in "${OPTIONAL[@]}"; do
  installed "$p" || optional_missing+=("$p")
done
bench_missing=()
if [ "$WITH_BENCH" -eq 1 ]; then
  for p in "${BENCH[@]}"; do
    installed "$p" || bench_missing+=("$p")
  done
fi
[ ${#missing[@]} -eq 0 ] && [ ${#optional_missing[@]} -eq 0 ] && [ ${#bench_missing[@]} -eq 0 ] &&
  exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || {
    echo "setup-deps: need root or sudo to install: ${missing[*]} ${bench_missing[*]}" >&2
    exit 1
  }
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup-deps: installing ${missing[*]}"
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ ${#optional_missing[@]} -gt 0 ]; then
  echo "setup-deps: installing ${optional_missing[*]} (for the web UI browser test)"
  $SUDO apt-get install -y -qq --no-install-recommends "${optional_missing[@]}" >/dev/null 2>&1 ||
    echo "setup-deps: could not install ${optional_missing[*]}; the browser test will be skipped"
fi
if [ ${#bench_missing[@]} -gt 0 ]; then
  echo "setup-deps: installing ${bench_missing[*]} (for the comparison benchmarks)"
  $SUDO apt-get install -y -qq --no-install-recommends "${bench_missing[@]}" >/dev/null
  # Debian starts a default cluster on port 5432; the benchmarks run their own.
fi
echo "setup-deps: done"
