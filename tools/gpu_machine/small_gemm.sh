#!/usr/bin/env bash
# The small-GEMM kernels on a GPU machine from prebuilt binaries (.carry/suite/suite.tar.xz
# as suite.sh, or SUITE): their GPU tests, `hetrec tune --kernel small_gemm` on the MLPerf
# DLRM-DCNv2 config's narrow layers, and small_gemm_bench against cuBLASLt with the
# winners just found. Run from the repository root (or a copy holding hw/ and configs/).
# Usage: tools/gpu_machine/small_gemm.sh OUT_DIR COMMIT [BUDGET_MINUTES]
set -uo pipefail
out=$1 commit=$2 budget=${3:-1}
suite=${SUITE:-.carry/suite/suite.tar.xz}
root=/tmp/hetrec-suite
mkdir -p "$root" "$out/tune"
[ -x "$root/bin/small_gemm_bench" ] || tar -C "$root" -xJf "$suite"
cuda_lib=$(dirname "$(ls /usr/local/cuda*/targets/x86_64-linux/lib/libnvrtc-builtins.so* 2>/dev/null | head -1)")
export LD_LIBRARY_PATH=$root/lib:$cuda_lib:${LD_LIBRARY_PATH:-}
export HETREC_HW_DIR=$PWD/hw HETREC_COMMIT=$commit
bin=$root/bin
echo "=== tests ($(date +%T))"
timeout "${TEST_TIMEOUT:-45}" "$bin/tune_test_small_gemm_gpu" > "$out/tests.log" 2>&1
echo "tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$out/tests.log" | tr '\n' ' ')"
echo "=== tune ($(date +%T))"
timeout $((budget * 60 + 40)) "$bin/hetrec" tune --kernel small_gemm --budget "$budget" --out-dir "$out/tune" \
  --winners "$out/winners.json" --hw h200_sxm --config configs/dlrm_dcnv2_mlperf.toml --gemm-operands fp32 bf16 \
  > "$out/tune.log" 2>&1
echo "tune rc=$?"; grep -E 'winner|built-in kept' "$out/tune.log" | tail -14
echo "=== bench ($(date +%T))"
timeout "${BENCH_TIMEOUT:-80}" "$bin/small_gemm_bench" --config configs/dlrm_dcnv2_mlperf.toml \
  --winners "$out/winners.json" --hw h200_sxm --hw-dir hw --out "$out/small-gemm.json" --launches 21 \
  --max-candidates "${MAX_CANDIDATES:-32}" > "$out/bench.log" 2>&1
echo "bench rc=$? ($(date +%T))"
