#!/usr/bin/env bash
# Installs every Debian package Nyala needs to build, test and benchmark.
# Idempotent: runs `apt-get update` only when a package is missing, and prints
# nothing when everything is already installed.
set -euo pipefail

PACKAGES=(
  g++ cmake make pkg-config
  libevent-dev
  libprotobuf-dev protobuf-compiler
  libgflags-dev libgoogle-glog-dev
  librocksdb-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev
)

# For the browser test of the web UI (test/web-ui-browser-itest.sh). Best effort: when it
# cannot be installed, that test is skipped with a message, never failed.
OPTIONAL=(chromium)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

missing=()
for p in "${PACKAGES[@]}"; do
  installed "$p" || missing+=("$p")
done
optional_missing=()
for p in "${OPTIONAL[@]}"; do
  installed "$p" || optional_missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && [ ${#optional_missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
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
echo "setup-deps: done"
