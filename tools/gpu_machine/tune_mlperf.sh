#!/usr/bin/env bash
# The kernel tuner on the full MLPerf DLRM-DCNv2 step's shapes (batch 131072, bf16 rows,
# bf16 cross operands, the fp32 narrow MLP layers), one `hetrec tune` per kernel family
# into a copy of tune/winners.json, on whatever GPU the machine has (hetrec tune finds its
# description), then e2e_bench with the built-in kernels and with the new winners on the
# full step at 131072 and the capped one at 16384 (built-in first and last: the spread).
# From prebuilt binaries (.carry/suite/suite.tar.xz, as suite.sh). Writes OUT_DIR/winners.json
# (merge it into tune/winners.json) and OUT_DIR/s/ (the e2e records and logs).
# Usage: tools/gpu_machine/tune_mlperf.sh OUT_DIR COMMIT [BUDGET_SCALE]
#   BUDGET_SCALE multiplies each family's minutes (default 1: about 3.5 minutes in all).
set -uo pipefail
out=$1 commit=$2 scale=${3:-1}
mkdir -p "$out/tune"
. tools/gpu_machine/suite_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
. tools/gpu_machine/tune_families.sh
tune_families "$out" "$scale"
r16='--set,model.cross_residual="16bit"'
variants() {  # TUNED winners file (empty: built-in kernels), VARIANTS
  TUNED=$1 STEP_ARCHIVE=.carry/suite/suite.tar.xz TESTS=none TORCH= WORKLOADS="full capped" VARIANTS="$2" \
    timeout 150 tools/gpu_machine/step_variants.sh "$out/s" "$commit" 2>&1 | grep -v '^NVIDIA'
}
variants "" "builtin:e2e_bench:$r16"
variants "$out/winners.json" "tuned:e2e_bench:$r16"
variants "" "builtin2:e2e_bench:$r16"
