#!/usr/bin/env bash
# The planner against measurement on one H200 or H100 (HW: its description; default: from
# the GPU's name), full MLPerf DLRM-DCNv2, from prebuilt
# binaries (.carry/suite/suite.tar.xz, as suite.sh):
#   1. bench/plan_recipes.py: the 12 recipes of bench/recipes/mlperf-b{32,64,128,256}k-
#      {bf16,tf32}-{fp32,bf16}rows.toml (those that fit), the 6 of mlperf-b{32,64,128}k-bf16-
#      {fp32,bf16}rows-res16.toml (the cross net's residual stream in 16 bits, as the planner's
#      16-bit recipes keep it; measured first) and the recipes `hetrec plan` chooses
#      for HW and for the other two of the H100, the H200 and the A100 (the direct ports),
#      each predicted and trained for a short run (--warmup + --steps steps, median
#      train_step, device memory); writes OUT_DIR/planner-<date>-<h200|h100>-mlperf-grid.json.
#   2. `hetrec bench port` from each of those two (port: their plan, cuBLASLt's heuristic
#      GEMMs, built-in kernels; hetrec: HW's plan, the GEMM model's choices,
#      tune/winners.json), the first with --components (each component switched alone);
#      equal samples (default 2097152), eval AUC on 262144 samples; writes
#      OUT_DIR/direct-port-<date>-from-<hw>.json.
#   3. the co-design demonstration: `hetrec plan --revise` on configs/dcnv2_hashed_demo.toml
#      and `hetrec bench port --hetrec-config` (the first port source's original model
#      against HW's revised model, one run); writes OUT_DIR/direct-port-<date>-revised-demo.json.
#   4. with FP32_ROWS=1, `hetrec bench port` from the first source (or each of FP32_ROWS_FROM)
#      under the constraints bench/recipes/constraints-fp32-rows.toml (embedding rows stay
#      fp32; tables may move to host memory), --components; writes
#      OUT_DIR/direct-port-<date>-from-<hw>-fp32rows.json.
#   The plans of stage 1 may take any batch from 32768 to 262144, the grid's range, so the
#   planner's choice is compared with recipes under the same constraints (the config's batch
#   is the planner's default bound). RECIPES_BUDGET_S (default 330) bounds the stage.
# GRID_RECIPES and GRID_PORTS=0 narrow stage 1 (see the stage). STAGES (default "recipes port
# revise") picks the stages 1-3 to run, PORT_FROM (default: both sources) the port sources of
# stage 2: with --components a
# port takes about 5 minutes (four runs of the full model), so the stages need separate
# device calls. The A100 port allows host tables (bench/recipes/constraints-host-tables.toml).
# Copy the JSON files into bench/results/; tests/plan/test_planner_replay.cpp checks the
# planner file.
# Usage: tools/gpu_machine/planner_recipes.sh OUT_DIR COMMIT [STEPS] [PORT_SAMPLES]
set -uo pipefail
out=$1 commit=$2 steps=${3:-20} port_samples=${4:-2097152}
case $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1) in
  "NVIDIA H100 80GB HBM3") local_hw=h100_sxm ;;
  *) local_hw=h200_sxm ;;
esac
hw=${HW:-$local_hw}
case $hw in
  h200_sxm) sources=(h100_sxm a100_sxm_40gb) ;;
  h100_sxm) sources=(h200_sxm a100_sxm_40gb) ;;
  *) echo "HW=$hw: expected h200_sxm or h100_sxm" >&2; exit 2 ;;
esac
root=/tmp/hetrec-suite
mkdir -p "$root" "$out"
[ -x "$root/bin/hetrec" ] || tar -C "$root" -xJf .carry/suite/suite.tar.xz
# The data files beside the programs, as in an installed tree: the planner calibrates its step
# model on share/hetrec/bench/results (without them it plans with the generic factors).
mkdir -p "$root/share" && ln -sfn "$PWD" "$root/share/hetrec"
export LD_LIBRARY_PATH=$root/lib:${LD_LIBRARY_PATH:-}
export HETREC_HW_DIR=$PWD/hw HETREC_COMMIT=$commit PYTHONUNBUFFERED=1
bin=$root/bin
date=$(date -u +%Y%m%d)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
start=$(date +%s)
stages=" ${STAGES:-recipes port revise} "
if [[ $stages == *" recipes "* ]]; then
echo "=== recipes ($(date +%T))"
budget=${RECIPES_BUDGET_S:-330}
grid=(bench/recipes/mlperf-b*k-bf16-*rows-res16.toml bench/recipes/mlperf-b32k-*rows.toml bench/recipes/mlperf-b64k-bf16-*rows.toml
      bench/recipes/mlperf-b64k-tf32-bf16rows.toml bench/recipes/mlperf-b64k-tf32-fp32rows.toml
      bench/recipes/mlperf-b128k-*rows.toml bench/recipes/mlperf-b256k-*rows.toml)
# GRID_RECIPES (files) replaces the grid, GRID_PORTS=0 leaves the direct ports' plans out: a
# call too short for the whole stage measures part of it.
[ -n "${GRID_RECIPES:-}" ] && read -ra grid <<< "$GRID_RECIPES"
ports="${sources[0]},${sources[1]}"
[ "${GRID_PORTS:-1}" = 0 ] && ports=""
timeout $((budget + 30)) python3 bench/plan_recipes.py --hetrec "$bin/hetrec" --out-dir "$out" --budget-s "$budget" \
  --steps "$steps" --warmup 5 --hw "$hw" --tag "${hw%%_*}-mlperf-grid" --port-from "$ports" \
  --plan-args "--dense fp32,tf32,bf16 --allow-host-tables --min-batch 32768 --max-batch 262144" \
  --planned configs/dlrm_dcnv2_mlperf.toml --run configs/dlrm_dcnv2_mlperf.toml "${grid[@]}" \
  > "$out/plan_recipes.out" 2>&1
echo "plan_recipes rc=$? ($(( $(date +%s) - start )) s)"; tail -12 "$out/plan_recipes.out"
fi
port_sources=()
[[ $stages == *" port "* ]] && port_sources=(${PORT_FROM:-${sources[@]}})
for from in "${port_sources[@]}"; do
  echo "=== bench port --from $from ($(date +%T))"
  # The first source with each component switched alone (four runs), the A100 with tables
  # allowed in host memory (its 40 GB cannot hold them).
  components="" limit=200 constraints=()
  [ "$from" = "${sources[0]}" ] && components=--components limit=400
  [ "$from" = a100_sxm_40gb ] && constraints=(--constraints bench/recipes/constraints-host-tables.toml)
  timeout $limit "$bin/hetrec" bench port --config configs/dlrm_dcnv2_mlperf.toml --from "$from" --to "$hw" \
    --samples "$port_samples" $components "${constraints[@]}" --tuned-kernels tune/winners.json \
    --set data.synthetic.eval_samples=262144 --set data.reader_threads=15 \
    --out "$out/direct-port-$date-from-$from.json" > "$out/bench-port-$from.log" 2>&1
  echo "bench port rc=$? ($(( $(date +%s) - start )) s)"; grep -E '^(port|recipe_|hetrec) |hetrec / port' "$out/bench-port-$from.log"
done
fp32_sources=()
[ "${FP32_ROWS:-0}" = 1 ] && fp32_sources=(${FP32_ROWS_FROM:-${sources[0]}})
for from in "${fp32_sources[@]}"; do
  echo "=== bench port --from $from, fp32 rows ($(date +%T))"
  timeout 400 "$bin/hetrec" bench port --config configs/dlrm_dcnv2_mlperf.toml --from "$from" --to "$hw" \
    --samples "$port_samples" --components --tuned-kernels tune/winners.json \
    --constraints bench/recipes/constraints-fp32-rows.toml \
    --set data.synthetic.eval_samples=262144 --set data.reader_threads=15 \
    --out "$out/direct-port-$date-from-$from-fp32rows.json" > "$out/bench-port-$from-fp32rows.log" 2>&1
  echo "bench port fp32 rows rc=$? ($(( $(date +%s) - start )) s)"; grep -E '^(port|recipe_|hetrec) |hetrec / port' "$out/bench-port-$from-fp32rows.log"
done
[[ $stages == *" revise "* ]] || exit 0
echo "=== co-design demonstration ($(date +%T))"
"$bin/hetrec" plan --config configs/dcnv2_hashed_demo.toml --hw "$hw" --revise \
  --revised-config "$out/dcnv2_hashed_demo-revised-${hw%%_*}.toml" > "$out/revise.log" 2>&1
echo "plan --revise rc=$?"; grep -A6 '^model revisions' "$out/revise.log"
timeout 120 "$bin/hetrec" bench port --config configs/dcnv2_hashed_demo.toml --from "${sources[0]}" --to "$hw" \
  --hetrec-config "$out/dcnv2_hashed_demo-revised-${hw%%_*}.toml" --samples 4194304 --tuned-kernels tune/winners.json \
  --set data.reader_threads=15 --out "$out/direct-port-$date-revised-demo.json" > "$out/bench-port-revised.log" 2>&1
echo "bench port (revised) rc=$? ($(( $(date +%s) - start )) s)"; grep -E '^(port|hetrec) |hetrec / port' "$out/bench-port-revised.log"
