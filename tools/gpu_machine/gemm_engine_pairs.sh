#!/usr/bin/env bash
# model.gemm_selection = "model" with a timed shortlist (model.gemm_timed_shortlist = 5)
# against "library" on the bundled configs, each pair run library / model / model / library
# back to back in this one device call. Writes e2e-<pair>-{library,timed,timed2,library2}
# .json and .log under OUT_DIR, the input of bench/gemm_engine_summary.py.
# A pair is named <arch>-<precision>-b<batch>: arch dlrm or dcnv2 (the capped tables,
# configs/dlrm_dcnv2_capped.toml) or full (configs/dlrm_dcnv2_mlperf.toml with bf16 rows
# and the 16-bit residual stream); precision fp32, tf32 or bf16; batch 16k, 64k or 128k.
# Inputs: .carry/suite/suite.tar.xz (tools/gpu_machine/pack.sh).
# Usage: [PAIRS="dlrm-bf16-b128k ..."] [STEPS=20] [WARMUP=4] \
#          tools/gpu_machine/gemm_engine_pairs.sh OUT_DIR COMMIT
set -uo pipefail
out=$1 commit=$2
source "$(dirname "$0")/suite_env.sh"
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
all="dcnv2-bf16-b16k dcnv2-bf16-b128k dlrm-bf16-b16k dlrm-bf16-b128k full-bf16-b128k dcnv2-tf32-b16k
     dcnv2-tf32-b128k dlrm-tf32-b16k dlrm-tf32-b128k dcnv2-fp32-b16k dcnv2-fp32-b128k dlrm-fp32-b16k dlrm-fp32-b128k"
for pair in ${PAIRS:-$all}; do
  IFS=- read -r arch precision b <<< "$pair"
  case $b in
    b16k) batch=16384 ;; b64k) batch=65536 ;; b128k) batch=131072 ;;
    *) echo "gemm_engine_pairs: $pair: unknown batch '$b' (b16k, b64k, b128k)" >&2; exit 2 ;;
  esac
  case $arch in
    dlrm|dcnv2) model=(--config configs/dlrm_dcnv2_capped.toml --set "model.arch=\"$arch\"") ;;
    full) model=(--config configs/dlrm_dcnv2_mlperf.toml --rows bf16 --set 'model.cross_residual="16bit"') ;;
    *) echo "gemm_engine_pairs: $pair: unknown arch '$arch' (dlrm, dcnv2, full)" >&2; exit 2 ;;
  esac
  case $precision in
    fp32) p=(--precision fp32) ;;
    tf32) p=(--precision tf32) ;;
    bf16) p=(--set 'model.dense_dtype="bf16"') ;;
    *) echo "gemm_engine_pairs: $pair: unknown precision '$precision' (fp32, tf32, bf16)" >&2; exit 2 ;;
  esac
  for side in library timed timed2 library2; do
    case $side in
      library*) sel=(--set 'model.gemm_selection="library"' --set model.gemm_timed_shortlist=0) ;;
      timed*) sel=(--set 'model.gemm_selection="model"' --set model.gemm_timed_shortlist=5) ;;
    esac
    timeout 150 "$bin/e2e_bench" "${model[@]}" --batch "$batch" --commit "$commit" \
      --json-out "$out/e2e-$pair-$side.json" --tuned-kernels tune/winners.json "${sel[@]}" \
      --set 'model.gemm_cache="none"' "${p[@]}" --steps "${STEPS:-20}" --warmup "${WARMUP:-4}" \
      > "$out/e2e-$pair-$side.log" 2>&1
    echo "$pair $side rc=$? $(grep -E 'samples/s' "$out/e2e-$pair-$side.log" | tail -1)"
  done
done
