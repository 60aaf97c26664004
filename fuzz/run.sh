#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (into build/fuzz) and runs each one from its
# committed seed corpus for a bounded time, as many at once as there are cores. New
# inputs go to build/fuzz/corpus/<target>/ (the committed seeds are never modified); a
# crash, a sanitizer report, a finding or an escaped exception fails the run and leaves
# the input in build/fuzz/findings/<target>/. To keep a finding fixed, copy that input
# to tests/hardening/regressions/<target>/ (hardening_test_fuzz_replay replays it).
#
#   fuzz/run.sh [seconds per target, default 60] [target ...]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  echo "fuzz/run.sh: seconds per target must be a whole number >= 1, got '$seconds'" >&2  # libFuzzer takes 0 as "forever"
  exit 2
fi
all_targets=(criteo_tsv binary_file run_config checkpoint hardware_file gemm_params gemm_cache
             winners_file probe_cache proposer_reply npy_npz)
targets=("${@:-${all_targets[@]}}")
build=build/fuzz
# Per input: a limit on time and memory well above what any seed needs, so a slow or
# memory-hungry input (a small file that claims a huge size) is a finding too.
per_input_timeout_s=10
rss_limit_mb=2048

cmake -S fuzz -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ >/dev/null
cmake --build "$build" -j "$(nproc)" --target $(printf 'fuzz_%s ' "${targets[@]}") >&2

# Targets given less time than the others (CI's budget), at most this many seconds.
declare -A short_targets=([npy_npz]=30)

run_one() {
  local t=$1
  local s=$seconds
  [ -n "${short_targets[$t]:-}" ] && [ "${short_targets[$t]}" -lt "$s" ] && s=${short_targets[$t]}
  mkdir -p "$build/corpus/$t" "$build/findings/$t" "$build/logs"
  # One OpenMP/BLAS thread by default, and idle OpenMP threads sleep instead of spinning:
  # the fuzzers run side by side on every core already.
  OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=passive KMP_BLOCKTIME=0 \
  ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/fuzz_$t" -max_total_time="$s" -timeout="$per_input_timeout_s" -rss_limit_mb="$rss_limit_mb" \
    -print_final_stats=1 -artifact_prefix="$build/findings/$t/" "$build/corpus/$t" "fuzz/corpus/$t" \
    >"$build/logs/$t.log" 2>&1
}

pids=()
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do sleep 1; done
  run_one "$t" &
  pids+=("$!")
done

failed=0
printf '%-14s %12s %11s %8s  %s\n' target executions new_inputs seconds result
for i in "${!targets[@]}"; do
  t=${targets[$i]}
  status=ok
  wait "${pids[$i]}" || status=FAILED
  log=$build/logs/$t.log
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  corpus=$(find "$build/corpus/$t" -type f | wc -l)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  printf '%-14s %12s %11s %8s  %s\n' "$t" "${execs:-?}" "$corpus" "${secs:-?}" "$status"
  if [ "$status" != ok ]; then
    failed=1
    echo "---- $t: last lines of $log" >&2
    tail -n 40 "$log" >&2
    ls -1 "$build/findings/$t/" >&2
  fi
done
exit $failed
