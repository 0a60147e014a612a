#!/usr/bin/env bash
# The client SDK as an application developer gets it: installs the build into a
# temporary prefix (cmake --install) and checks that
#  - every public header (include/nyala/*.h) compiles alone with only the installed
#    include directory, and reaches no protobuf, libevent, glog, gflags or source-tree
#    header;
#  - libnyala_client.so has a versioned SONAME and exports Nyala's public API only
#    (its dynamic symbols, listed with nm);
#  - examples/cpp builds against the installed tree through pkg-config and through
#    find_package(NyalaClient), shared and static, and each build runs against a
#    local cluster started with the installed scripts and daemons, given two master
#    addresses of which the first answers nothing; so does examples/python with the
#    installed Python package;
#  - with --deb: the Debian packages (cpack) declare their dependencies, and the
#    example builds against them unpacked (dpkg-deb -x) into a temporary root and
#    runs.
# Stops the cluster it started (by the PIDs its scripts recorded) and removes its
# temp dir unless something failed.
#
# Usage: test/client-sdk-itest.sh <build dir> [--deb]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:?usage: client-sdk-itest.sh <build dir> [--deb]}" && pwd)
DEB=${2:-}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/nyala-sdk-itest-XXXXXX")
PREFIX="$WORK/prefix"
DATA="$WORK/cluster"
failures=0
unset NYALA_BIN_DIR

cleanup() {
  if [ -x "$PREFIX/share/nyala/scripts/stop-cluster.sh" ]; then
    "$PREFIX/share/nyala/scripts/stop-cluster.sh" --data "$DATA" --grace 5 >/dev/null 2>&1 || true
  fi
  if [ "$failures" -eq 0 ]; then rm -rf "$WORK"; else echo "kept $WORK for inspection"; fi
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
check() {  # check <description> <command...>: the command must succeed
  local what=$1; shift
  if "$@" >"$WORK/last.out" 2>&1; then echo "ok: $what"; else cat "$WORK/last.out" >&2; fail "$what"; fi
}

echo "== install into $PREFIX"
cmake --install "$BUILD" --prefix "$PREFIX" >"$WORK/install.out"
for f in bin/nyala-master bin/nyala-tserver bin/nyala include/nyala/client.h \
  lib/libnyala_client.a lib/pkgconfig/nyala_client.pc lib/cmake/NyalaClient/NyalaClientConfig.cmake \
  share/nyala/conf/master.gflags share/nyala/scripts/start-cluster.sh; do
  [ -e "$PREFIX/$f" ] || fail "installed tree lacks $f"
done

echo "== public headers"
# header_alone <header>: compiles <nyala/header> alone; prints every file it reaches.
header_alone() {
  printf '#include <nyala/%s>\nint main() { return 0; }\n' "$1" |
    g++ -std=c++20 -Wall -Wextra -Werror -fsyntax-only -I"$PREFIX/include" -x c++ - -M -MF "$WORK/deps" &&
    printf '#include <nyala/%s>\nint main() { return 0; }\n' "$1" |
    g++ -std=c++20 -Wall -Wextra -Werror -fsyntax-only -I"$PREFIX/include" -x c++ - &&
    tr ' \\' '\n\n' <"$WORK/deps" | grep -v '^$' | grep -v ':$'
}
headers=$(cd "$PREFIX/include/nyala" && ls ./*.h | sed 's#^\./##')
[ -n "$headers" ] || fail "no headers installed"
for h in $headers; do
  if ! reached=$(header_alone "$h" 2>"$WORK/header.err"); then
    cat "$WORK/header.err" >&2
    fail "nyala/$h does not compile alone with only $PREFIX/include"
    continue
  fi
  foreign=$(grep -E "google/|event2/|glog/|gflags/|rocksdb/|$ROOT/|$BUILD/" <<<"$reached" || true)
  if [ -n "$foreign" ]; then fail "nyala/$h reaches $(echo "$foreign" | tr '\n' ' ')"; else echo "ok: nyala/$h alone"; fi
done

echo "== libnyala_client.so"
SO=$(readlink -f "$PREFIX/lib/libnyala_client.so")
soname=$(readelf -d "$SO" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
[[ "$soname" =~ ^libnyala_client\.so\.[0-9]+$ ]] || fail "SONAME is '$soname', not libnyala_client.so.<major>"
[ -e "$PREFIX/lib/$soname" ] || fail "no $soname link installed"
nm -D --defined-only -C "$SO" | sed 's/^[0-9a-f]* [A-Za-z] //' | grep -v '^NYALA_CLIENT_[0-9]*$' >"$WORK/symbols"
count=$(wc -l <"$WORK/symbols")
[ "$count" -gt 50 ] || fail "only $count symbols exported"
outside=$(grep -vE '^(nyala::|typeinfo for nyala::|typeinfo name for nyala::|vtable for nyala::)' "$WORK/symbols" || true)
[ -z "$outside" ] || fail "exports symbols outside Nyala's API: $(head -5 <<<"$outside" | tr '\n' ';')"
inner=$(grep -E '::internal::|nyala::rpc::|nyala::client::(Session|Scanner)::Data::|PB\b|PB[&*,)]|google::|ClientData|Batcher|MetaCache' "$WORK/symbols" || true)
[ -z "$inner" ] || fail "exports internals: $(head -5 <<<"$inner" | tr '\n' ';')"
for s in 'nyala::client::ClientBuilder::Build()' 'nyala::client::Session::Apply(' \
  'nyala::client::Scanner::NextBatch(' 'nyala::client::Table::Get(' 'nyala::Status::ToString[abi:cxx11]() const'; do
  grep -qF -- "$s" "$WORK/symbols" || fail "does not export $s"
done
echo "ok: $count symbols exported, SONAME $soname"

echo "== examples/cpp against the installed tree"
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
# shellcheck disable=SC2046  # pkg-config prints several flags
check "pkg-config build" g++ -std=c++20 -O1 "$ROOT/examples/cpp/example.cc" -o "$WORK/example-pc" \
  $(pkg-config --cflags --libs nyala_client) -Wl,-rpath,"$PREFIX/lib"
check "find_package build (shared)" bash -c "cmake -S '$ROOT/examples/cpp' -B '$WORK/ex-shared' \
  -DCMAKE_PREFIX_PATH='$PREFIX' && cmake --build '$WORK/ex-shared'"
check "find_package build (static)" bash -c "cmake -S '$ROOT/examples/cpp' -B '$WORK/ex-static' \
  -DCMAKE_PREFIX_PATH='$PREFIX' -DNYALA_STATIC=ON && cmake --build '$WORK/ex-static'"
if [ -x "$WORK/example-pc" ]; then
  ldd "$WORK/example-pc" | grep -q "libnyala_client.so.* => $PREFIX/lib/" ||
    fail "the pkg-config build does not use the installed shared library"
fi
if [ -x "$WORK/ex-static/nyala-client-example" ]; then
  ! ldd "$WORK/ex-static/nyala-client-example" | grep -q libnyala_client ||
    fail "the static build links the shared library"
fi

echo "== a local cluster from the installed tree"
# shellcheck source=test/itest_util.sh
source "$ROOT/test/itest_util.sh"
BASE=$(pick_base_port 1)
check "start-cluster.sh (installed)" "$PREFIX/share/nyala/scripts/start-cluster.sh" \
  --data "$DATA" --base-port "$BASE" --tservers 1
pgrep -f "^$PREFIX/bin/nyala-master " >/dev/null && pgrep -f "^$PREFIX/bin/nyala-tserver " >/dev/null ||
  fail "the cluster does not run the installed daemons"
# Two masters for the examples: a port nothing listens on, then the real one.
DEAD=$((BASE + 5))
port_free "$DEAD" || fail "port $DEAD is in use"
MASTERS="127.0.0.1:$DEAD,127.0.0.1:$BASE"
run_example() {  # run_example <name> <program...>
  local name=$1
  shift
  [ -x "$1" ] || { fail "$name: not built"; return; }
  if "$@" "$MASTERS" "sdk_example_$name" >"$WORK/$name.out" 2>&1 && grep -q '^ok$' "$WORK/$name.out"; then
    echo "ok: example ($name) ran: $(grep -c . "$WORK/$name.out") lines, $(grep '^wrote' "$WORK/$name.out")"
  else
    cat "$WORK/$name.out" >&2
    fail "example ($name) failed against the cluster"
  fi
}
run_example pkgconfig "$WORK/example-pc"
run_example shared "$WORK/ex-shared/nyala-client-example"
run_example static "$WORK/ex-static/nyala-client-example"
PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || PYTHON=python3
PYPKG="$PREFIX/lib/python3/dist-packages"
if [ -f "$PYPKG/nyala/__init__.py" ]; then
  export PYTHONPATH="$PYPKG"
  run_example python "$PYTHON" "$ROOT/examples/python/example.py"
  unset PYTHONPATH
else
  fail "the install has no Python package ($PYPKG/nyala): is pybind11-dev installed?"
fi

if [ "$DEB" = "--deb" ]; then
  echo "== Debian packages"
  if ! command -v dpkg-deb >/dev/null || ! command -v dpkg-shlibdeps >/dev/null; then
    fail "--deb needs dpkg-deb and dpkg-shlibdeps (dpkg-dev)"
  elif (cd "$BUILD" && cpack -B "$WORK/debs" >"$WORK/cpack.out" 2>&1); then
    mkdir -p "$WORK/root"
    for p in nyala-server libnyala-client0 libnyala-client-dev; do
      deb=$(ls "$WORK"/debs/"${p}"_*.deb 2>/dev/null | head -1)
      if [ -z "$deb" ]; then fail "no $p package"; continue; fi
      depends=$(dpkg-deb -f "$deb" Depends)
      echo "ok: $p: Depends: $depends"
      case $p in
        nyala-server) grep -q 'libprotobuf' <<<"$depends" || fail "$p does not depend on libprotobuf" ;;
        libnyala-client0) grep -q 'libevent' <<<"$depends" || fail "$p does not depend on libevent" ;;
        libnyala-client-dev) grep -q 'libnyala-client0 (= ' <<<"$depends" || fail "$p does not depend on libnyala-client0" ;;
      esac
      dpkg-deb -x "$deb" "$WORK/root"
    done
    check "find_package build against the unpacked packages" bash -c "cmake -S '$ROOT/examples/cpp' \
      -B '$WORK/ex-deb' -DCMAKE_PREFIX_PATH='$WORK/root/usr' && cmake --build '$WORK/ex-deb'"
    if [ -x "$WORK/ex-deb/nyala-client-example" ]; then
      ldd "$WORK/ex-deb/nyala-client-example" | grep -q "libnyala_client.so.* => $WORK/root/usr/lib/" ||
        fail "the build against the packages does not use their shared library"
    fi
    run_example deb "$WORK/ex-deb/nyala-client-example"
  else
    cat "$WORK/cpack.out" >&2
    fail "cpack"
  fi
fi

if [ "$failures" -ne 0 ]; then
  echo "client-sdk-itest: $failures failure(s)"
  exit 1
fi
echo "client-sdk-itest: all passed"
