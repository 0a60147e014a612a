# Sourced by the shell tests: their checks, and for those that start a local cluster
# with scripts/start-cluster.sh, picking its ports at run time.

# Checks. Each failure is counted in $failures (the test sets it to 0 and exits
# non-zero when it is not at the end).
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
check() {  # check <description> <command...>: the command must succeed
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else fail "$what"; fi
}
contains() { grep -qF -- "$2" <<<"$1"; }
same() {  # same <expected> <actual>: equal, or both printed
  [ "$1" = "$2" ] && return 0
  printf 'expected: %s\n     got: %s\n' "$1" "$2" >&2
  return 1
}

# port_free PORT: nothing listens on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# pick_base_port N: prints a --base-port for start-cluster.sh with N tablet servers
# whose ports are all free (master P and P+1000; tablet server i P+10+i and
# P+1010+i). Tries random ones below the ephemeral range (32768 and up), where port-0
# binds and outgoing connections of other tests land. Fails after 50 tries.
pick_base_port() {
  local n=$1 p ok off i
  for _ in $(seq 1 50); do
    p=$((10000 + RANDOM % 20000))
    ok=1
    for off in 0 1000; do
      port_free $((p + off)) || ok=0
      for ((i = 0; i < n; i++)); do port_free $((p + off + 10 + i)) || ok=0; done
    done
    if [ $ok -eq 1 ]; then
      echo "$p"
      return 0
    fi
  done
  echo "no free ports found for a cluster of $n tablet servers" >&2
  return 1
}
