#!/usr/bin/env bash
# What RocksDB's WAL costs the apply of replicated writes: insert-bench with applies
# through RocksDB's WAL (the default) against applies that skip it
# (--unsafe_apply_without_rocksdb_wal, NOT crash-safe: a measuring flag only), in
# alternating order round after round (a b, b a, ...), each run on a cluster of its own.
# Prints each run's rows/s and tablet-server CPU per row, then the medians and the
# median of the per-round ratios (without WAL / with WAL).
#
# Usage: bench/apply-wal.sh [build dir, default build]
# Env:   ROUNDS (5), ROWS (400000), REPLICAS (1: one tablet server; 3: three),
#        TABLETS (4)
set -euo pipefail

BUILD=${1:-build}
ROUNDS=${ROUNDS:-5}
ROWS=${ROWS:-400000}
REPLICAS=${REPLICAS:-1}
TABLETS=${TABLETS:-4}
BENCH="$BUILD/bin/insert-bench"
[[ -x "$BENCH" ]] || { echo "apply-wal: no $BENCH: build it (cmake --build $BUILD --target insert-bench nyala-master nyala-tserver)" >&2; exit 1; }

# One run: prints "rows_per_s tserver_us_per_row".
run() {
  local out
  out=$("$BENCH" --rows="$ROWS" --num_tablets="$TABLETS" --replicas="$REPLICAS" --skip_rocksdb \
          --tserver_flags="$1" 2>&1) || { echo "$out" | tail -20 >&2; return 1; }
  local rate cpu
  rate=$(echo "$out" | sed -n 's/^client rows\/s: \([0-9.]*\).*/\1/p')
  cpu=$(echo "$out" | sed -n 's/.*tablet server \([0-9.]*\) us.*/\1/p')
  [[ -n "$rate" && -n "$cpu" ]] || { echo "$out" | tail -20 >&2; return 1; }
  echo "$rate $cpu"
}

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

echo "insert-bench: $ROWS rows, $TABLETS tablets, $REPLICAS replica(s); $ROUNDS rounds; $(date -u '+%F %T UTC')"
printf '%-6s %-24s %-24s %s\n' round "with WAL rows/s, us/row" "without rows/s, us/row" "ratio rows/s, us/row"
on_rates=() off_rates=() on_cpu=() off_cpu=() r_rate=() r_cpu=()
for ((i = 1; i <= ROUNDS; i++)); do
  if ((i % 2)); then
    read -r a_rate a_cpu < <(run "")
    read -r b_rate b_cpu < <(run "--unlock_unsafe_flags --unsafe_apply_without_rocksdb_wal")
  else
    read -r b_rate b_cpu < <(run "--unlock_unsafe_flags --unsafe_apply_without_rocksdb_wal")
    read -r a_rate a_cpu < <(run "")
  fi
  on_rates+=("$a_rate") off_rates+=("$b_rate") on_cpu+=("$a_cpu") off_cpu+=("$b_cpu")
  rr=$(awk -v a="$a_rate" -v b="$b_rate" 'BEGIN {printf "%.3f", b / a}')
  rc=$(awk -v a="$a_cpu" -v b="$b_cpu" 'BEGIN {printf "%.3f", b / a}')
  r_rate+=("$rr") r_cpu+=("$rc")
  printf '%-6s %-24s %-24s %s\n' "$i" "$a_rate, $a_cpu" "$b_rate, $b_cpu" "$rr, $rc"
done
echo "median with WAL:    $(printf '%s\n' "${on_rates[@]}" | median) rows/s, $(printf '%s\n' "${on_cpu[@]}" | median) us tserver CPU per row"
echo "median without WAL: $(printf '%s\n' "${off_rates[@]}" | median) rows/s, $(printf '%s\n' "${off_cpu[@]}" | median) us tserver CPU per row"
echo "median ratio without/with: rows/s $(printf '%s\n' "${r_rate[@]}" | median), tserver CPU per row $(printf '%s\n' "${r_cpu[@]}" | median)"
