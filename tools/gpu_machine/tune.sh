#!/usr/bin/env bash
# The kernel tuner on a GPU machine from prebuilt binaries (.carry/suite/suite.tar.xz, as
# suite.sh), then the end-to-end benchmark with and without its winners.
# Usage: tools/gpu_machine/tune.sh OUT_DIR COMMIT BUDGET_MINUTES [E2E_STEPS]
set -uo pipefail
out=$1 commit=$2 budget=$3 steps=${4:-30}
mkdir -p "$out/tune"
. tools/gpu_machine/suite_env.sh
echo "=== tune ($(date +%T))"
"$bin/hetrec" tune --kernel all --budget "$budget" --out-dir "$out/tune" --winners "$out/tune/winners.json" \
  --config configs/dlrm_dcnv2_capped.toml --rows fp32 bf16 > "$out/tune/tune.log" 2>&1
echo "tune rc=$?"; tr '\r' '\n' < "$out/tune/tune.log" | grep -v '^\s*$' | tail -8
e2e() {
  local tag=$1; shift
  timeout 150 "$bin/e2e_bench" --config configs/dlrm_dcnv2_capped.toml --batch 65536 --precision tf32 --steps "$steps" \
    --commit "$commit" --tag "$tag" --json-out "$out/tune/e2e-$tag.json" "$@" > "$out/tune/e2e-$tag.log" 2>&1
  echo "e2e $tag rc=$? $(grep -E 'samples/s' "$out/tune/e2e-$tag.log" | tail -1)"
}
echo "=== e2e ($(date +%T))"
if [ -f "$out/tune/winners.json" ]; then
  e2e tune-builtin-fp32
  e2e tune-tuned-fp32 --tuned-kernels "$out/tune/winners.json"
  e2e tune-builtin-dlrm --set 'model.arch="dlrm"'
  e2e tune-tuned-dlrm --set 'model.arch="dlrm"' --tuned-kernels "$out/tune/winners.json"
fi
