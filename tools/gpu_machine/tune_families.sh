# Sourced by the GPU machine scripts that re-tune the kernels (tune_mlperf.sh,
# tune_before_after.sh): tune_families OUT_DIR SCALE runs one `hetrec tune` per kernel family
# on the full MLPerf DLRM-DCNv2 step's shapes (batch 131072, bf16 rows, bf16 cross
# operands, the fp32 narrow MLP layers) into a copy of tune/winners.json at
# OUT_DIR/winners.json, each family's minutes times SCALE (about 3.5 minutes in all at 1).
# Needs `bin` (tools/gpu_machine/suite_env.sh).
tune_families() {
  local out=$1 scale=$2 family kernel minutes
  mkdir -p "$out/tune"
  cp tune/winners.json "$out/winners.json"
  local common=(--out-dir "$out/tune" --winners "$out/winners.json" --config configs/dlrm_dcnv2_mlperf.toml
                --batch 131072 --rows bf16 --cross-operands bf16 --gemm-operands fp32)
  for family in cross_forward:0.4 cross_backward:0.7 dot_interaction_forward:0.25 dot_interaction_backward:0.3 \
                small_gemm:0.6 embedding_sparse_update:0.8 embedding_bag_forward:0.3; do
    kernel=${family%%:*}
    minutes=$(awk -v m="${family##*:}" -v s="$scale" 'BEGIN { print m * s }')
    timeout "$(awk -v m="$minutes" 'BEGIN { print int(m * 60 + 90) }')" \
      "$bin/hetrec" tune --kernel "$kernel" --budget "$minutes" "${common[@]}" > "$out/tune/tune-$kernel.log" 2>&1
    echo "tune $kernel rc=$? $(tr '\r' '\n' < "$out/tune/tune-$kernel.log" | grep -E '\[.*\]: built-in' | tr '\n' ' ' | cut -c1-400)"
  done
}
