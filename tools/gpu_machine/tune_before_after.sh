#!/usr/bin/env bash
# An engine change that touches the tuned kernels' sources, measured in one device call:
# the tuner on the full MLPerf step's shapes with the new build (.carry/suite/suite.tar.xz;
# every family, since the embedded sources' hash changed), then e2e_bench of the engine
# before the change (BEFORE_ARCHIVE, the same layout, with tune/winners.json) and after it
# (the new winners) side by side: the full MLPerf DLRM-DCNv2 at batch 131072 graph-captured
# (twice each, interleaved) and with phase timing, both engines with built-in kernels, the
# capped config at 16384, and the full one at 262144 (111 GiB: an H200's batch). Output
# names follow tools/gpu_machine/step_variants.sh (e2e-<workload>-<variant>[-profile].json,
# variants before, after, before_builtin, after_builtin, after2, before2), which
# bench/step_variants_summary.py reads; OUT_DIR/winners.json is the tuned winners file.
# Usage: tools/gpu_machine/tune_before_after.sh OUT_DIR COMMIT BEFORE_ARCHIVE [BUDGET_SCALE]
set -uo pipefail
out=$1 commit=$2 before_archive=$3 scale=${4:-1}
start=$(date +%s)
el() { echo "[$(( $(date +%s) - start )) s] $*"; }
mkdir -p "$out/tune"
. tools/gpu_machine/suite_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
before=/tmp/hetrec-before
mkdir -p "$before" && { [ -x "$before/bin/e2e_bench" ] || tar -C "$before" -xJf "$before_archive"; }
. tools/gpu_machine/tune_families.sh
tune_families "$out" "$scale"
bf16='model.dense_dtype="bf16"' r16='model.cross_residual="16bit"'
full=configs/dlrm_dcnv2_mlperf.toml capped=configs/dlrm_dcnv2_capped.toml
run() {  # tag root winners(none: built-in) config batch args...
  local tag=$1 r=$2 w=$3 cfg=$4 batch=$5; shift 5
  local t=(); [ "$w" != none ] && t=(--tuned-kernels "$w")
  LD_LIBRARY_PATH=$r/lib:$LD_LIBRARY_PATH timeout 150 "$r/bin/e2e_bench" --config "$cfg" --batch "$batch" \
    --commit "$commit" --json-out "$out/e2e-$tag.json" "${t[@]}" "$@" > "$out/e2e-$tag.log" 2>&1
  el "$tag rc=$? $(grep -E 'samples/s' "$out/e2e-$tag.log" | tail -1)"
}
F=(--rows bf16 --set "$bf16" --set "$r16")
new=$out/winners.json old=tune/winners.json
run full-b128k-after "$root" "$new" $full 131072 "${F[@]}" --steps 10 --warmup 3
run full-b128k-before "$before" "$old" $full 131072 "${F[@]}" --steps 10 --warmup 3
run full-b128k-after-profile "$root" "$new" $full 131072 "${F[@]}" --profile --steps 5 --warmup 2
run full-b128k-before-profile "$before" "$old" $full 131072 "${F[@]}" --profile --steps 5 --warmup 2
run full-b128k-after_builtin "$root" none $full 131072 "${F[@]}" --steps 10 --warmup 3
run full-b128k-before_builtin "$before" none $full 131072 "${F[@]}" --steps 10 --warmup 3
run capped-b16k-after "$root" "$new" $capped 16384 --set "$bf16" --set "$r16" --steps 30 --warmup 5
run capped-b16k-before "$before" "$old" $capped 16384 --set "$bf16" --set "$r16" --steps 30 --warmup 5
run capped-b16k-after-profile "$root" "$new" $capped 16384 --set "$bf16" --set "$r16" --profile --steps 10 --warmup 3
run full-b256k-after "$root" "$new" $full 262144 "${F[@]}" --steps 10 --warmup 3
run full-b256k-before "$before" "$old" $full 262144 "${F[@]}" --steps 10 --warmup 3
run full-b128k-after2 "$root" "$new" $full 131072 "${F[@]}" --steps 10 --warmup 3
run full-b128k-before2 "$before" "$old" $full 131072 "${F[@]}" --steps 10 --warmup 3
