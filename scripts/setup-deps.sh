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

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "setup-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup-deps: done"
