#!/usr/bin/env bash
# One device call that checks and times the step's kernel variants side by side: the GPU
# tests named in TESTS, then e2e_bench runs of each VARIANT (a binary from the packed
# bin/ folder and extra e2e_bench arguments) on each workload, eager with phase timing
# and graph-captured, then the PyTorch baselines (tools/torch_dlrm_bench.py) on the
# capped config. Inputs: .carry/step/step.tar.xz (bin/, lib/: tools/gpu_machine/pack_step.sh).
# Environment: TESTS (test programs), VARIANTS (name:binary:arg,arg... each), WORKLOADS
# (full-profile full capped capped-profile dlrm-profile), TORCH (empty: no PyTorch runs),
# STEP_ARCHIVE (another archive of the same layout, e.g. .carry/suite/suite.tar.xz),
# TUNED (the winners file; default tune/winners.json, empty for the built-in kernels).
# Usage: tools/gpu_machine/step_variants.sh OUT_DIR COMMIT
set -uo pipefail
out=$1 commit=$2
root=/tmp/hetrec-step
mkdir -p "$root" "$out"
[ -x "$root/bin/e2e_bench" ] || tar -C "$root" -xJf "${STEP_ARCHIVE:-.carry/step/step.tar.xz}"
export HETREC_COMMIT=$commit PYTHONUNBUFFERED=1 HETREC_HW_DIR=$PWD/hw  # the programs run outside their build tree
libs=$root/lib:${LD_LIBRARY_PATH:-}  # for hetrec's programs only (python3 keeps its own)
bin=$root/bin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
for t in ${TESTS:-kernels_test_dense_kernels model_gpu_test_gpu_dlrm}; do
  [ "$t" = none ] && continue
  LD_LIBRARY_PATH=$libs timeout 240 "$bin/$t" --gtest_brief=1 > "$out/$t.log" 2>&1
  echo "$t rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/$t.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED  \]' "$out/$t.log" | head -5
done
bf16='model.dense_dtype="bf16"'
run() {  # tag binary config batch args...
  local tag=$1 b=$2 cfg=$3 batch=$4; shift 4
  LD_LIBRARY_PATH=$libs timeout 200 "$bin/$b" --config "$cfg" --batch "$batch" --commit "$commit" --json-out "$out/e2e-$tag.json" "$@" \
    > "$out/e2e-$tag.log" 2>&1
  echo "$tag rc=$? $(grep -E 'samples/s' "$out/e2e-$tag.log" | tail -1)"
}
full=configs/dlrm_dcnv2_mlperf.toml capped=configs/dlrm_dcnv2_capped.toml
tuned=()  # TUNED: the winners file (default tune/winners.json; empty: the built-in kernels)
[ -n "${TUNED-tune/winners.json}" ] && tuned=(--tuned-kernels "${TUNED-tune/winners.json}")
for v in ${VARIANTS:-base:e2e_bench_base new:e2e_bench new16:e2e_bench:--set,model.cross_residual=\"16bit\"}; do
  IFS=: read -r name b extra <<<"$v"
  IFS=, read -r -a x <<<"$extra"
  for w in ${WORKLOADS:-full-profile full capped capped-profile dlrm-profile}; do
    case $w in
      full-profile) run "full-b128k-$name-profile" "$b" $full 131072 --rows bf16 --set "$bf16" "${tuned[@]}" --profile --steps 5 --warmup 2 "${x[@]}" ;;
      full) run "full-b128k-$name" "$b" $full 131072 --rows bf16 --set "$bf16" "${tuned[@]}" --steps 10 --warmup 3 "${x[@]}" ;;
      capped) run "capped-b16k-$name" "$b" $capped 16384 --set "$bf16" "${tuned[@]}" --steps 30 --warmup 5 "${x[@]}" ;;
      capped-profile) run "capped-b16k-$name-profile" "$b" $capped 16384 --set "$bf16" "${tuned[@]}" --profile --steps 10 --warmup 3 "${x[@]}" ;;
      dlrm-profile) run "dlrm-capped-b64k-$name-profile" "$b" $capped 65536 --set "$bf16" --set 'model.arch="dlrm"' "${tuned[@]}" --profile --steps 5 --warmup 2 "${x[@]}" ;;
    esac
  done
done
if [ -n "${TORCH-1}" ]; then
  timeout 420 python3 tools/torch_dlrm_bench.py --config $capped --batch 16384 --steps 30 --warmup 5 \
    --modes eager,compile,fused > "$out/torch-capped-b16k.json" 2> "$out/torch-capped-b16k.log"
  echo "torch rc=$? $(head -c 1500 "$out/torch-capped-b16k.json")"
  tail -5 "$out/torch-capped-b16k.log"
fi
