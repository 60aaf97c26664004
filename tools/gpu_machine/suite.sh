#!/usr/bin/env bash
# Runs hetrec's GPU checks and benchmarks on a GPU machine from prebuilt binaries:
# .carry/suite/suite.tar.xz holds bin/ (hetrec, e2e_bench, the GPU test programs) and
# lib/ (the shared libraries they need beyond the CUDA toolkit). Stages, in order:
#   tests    every GPU test program, then compute-sanitizer memcheck and racecheck on a subset
#   demo     `hetrec train --config configs/demo.toml` on the GPU
#   e2e:CONFIG:BATCH:TAG[:ARG,ARG...]   bench/e2e_compare.py (hetrec and the PyTorch baseline;
#                          ARGs go to e2e_bench, comma-separated)
#   gemm:FILTER:SECONDS    `hetrec gemm bench` on the suite shapes matching FILTER (a regular
#                          expression; empty = all) with a time budget, then xz-compressed
#   recipes:SECONDS        bench/plan_recipes.py: planner predictions against hetrec train
#   mpi    the data-parallel GPU checks under mpirun (OpenMPI from .carry/suite/openmpi.tar.xz,
#          tools/gpu_machine/pack_mpi.sh): the GPU tests with 1 rank and with one rank per
#          GPU, and `mpirun hetrec train` of the demo with a checkpoint resumed on 1 rank
#   export    the export round trip in PyTorch against the GPU engine's predictions, per network form
#   e2e1:CONFIG:BATCH:TAG[:ARG,ARG...]        e2e_bench alone (ARGs comma-separated)
#   e2edist:NP:CONFIG:BATCH:TAG[:ARG,ARG...]  `mpirun -np NP e2e_bench` (ARGs comma-separated)
# Usage: tools/gpu_machine/suite.sh OUT_DIR COMMIT STAGE...
set -uo pipefail
out=$1 commit=$2
shift 2
root=/tmp/hetrec-suite
mkdir -p "$root" "$out"
tar -C "$root" -xJf .carry/suite/suite.tar.xz
# The data files (hw/, gemm/rankers/, tune/, configs/) beside the programs, as in an installed tree.
mkdir -p "$root/share" && ln -sfn "$PWD" "$root/share/hetrec"
export LD_LIBRARY_PATH=$root/lib:${LD_LIBRARY_PATH:-}
export HETREC_COMMIT=$commit PYTHONUNBUFFERED=1 HETREC_HW_DIR=$PWD/hw  # the programs run outside their build tree
bin=$root/bin
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader
for stage in "$@"; do
  echo "=== stage $stage ($(date +%T))"
  case $stage in
    tests)
      for t in "$bin"/*_test_*; do  # every test program tools/gpu_machine/pack.sh packed
        timeout 200 "$t" --gtest_brief=1 > "$out/$(basename "$t").log" 2>&1
        rc=$?  # before any expansion: $(basename ...) would reset $?
        echo "$(basename "$t") rc=$rc $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/$(basename "$t").log" | tr '\n' ' ')"
      done
      [ "${SANITIZERS:-1}" = 0 ] && continue  # SANITIZERS=0: the test programs only
      cs=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
      for spec in "kernels_test_embedding_bag:*dim16*" "kernels_test_dense_kernels:*" "kernels_test_sort_scan:*" "model_gpu_test_gpu_dlrm:*GraphReplay*"; do
        t=${spec%%:*}
        timeout 120 "$cs" --tool memcheck --error-exitcode 9 "$bin/$t" --gtest_brief=1 --gtest_filter="${spec#*:}" \
          > "$out/memcheck-$t.log" 2>&1
        echo "memcheck $t rc=$? $(grep -E 'ERROR SUMMARY' "$out/memcheck-$t.log")"
      done
      # racecheck on the kernels that share data through shared memory (the sort, the
      # sort-key build and the update's key cache, the column sums).
      for spec in "kernels_test_sort_scan:*" "kernels_test_embedding_bag:*dim128*" "kernels_test_dense_kernels:*"; do
        t=${spec%%:*}
        timeout 200 "$cs" --tool racecheck --error-exitcode 9 "$bin/$t" --gtest_brief=1 --gtest_filter="${spec#*:}" \
          > "$out/racecheck-$t.log" 2>&1
        echo "racecheck $t rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/racecheck-$t.log" | tail -1)"
      done ;;
    demo)
      "$bin/hetrec" train --config configs/demo.toml --set train.progress=on \
        --set train.metrics_path="'$out/demo-metrics.jsonl'" --set train.checkpoint_dir="'/tmp/demo-ckpt'" \
        > "$out/demo.log" 2> "$out/demo.err"
      echo "demo rc=$?"; tail -12 "$out/demo.log"; tr '\r' '\n' < "$out/demo.err" | tail -4 ;;
    e2e:*)
      IFS=: read -r _ config batch tag args <<< "$stage"
      IFS=, read -r -a extra <<< "${args:-}"
      timeout 400 python3 bench/e2e_compare.py --e2e-bench "$bin/e2e_bench" --config "$config" --batch "$batch" \
        --tag "$tag" --commit "$commit" --out-dir "$out" "${extra[@]/#/--e2e-arg=}" 2>&1 | tail -4 ;;
    gemm:*)
      IFS=: read -r _ filter budget <<< "$stage"
      args=(--out "$out/gemm-oracle.json" --time-budget "${budget:-300}")
      [ -n "$filter" ] && args+=(--filter "$filter")
      timeout 590 "$bin/hetrec" gemm bench "${args[@]}" 2> "$out/gemm-bench.log"
      echo "gemm bench rc=$?"; tail -3 "$out/gemm-bench.log"
      xz -T0 -f "$out/gemm-oracle.json" && ls -la "$out/gemm-oracle.json.xz" ;;
    recipes:*)
      budget=${stage#recipes:}
      timeout 590 python3 bench/plan_recipes.py --hetrec "$bin/hetrec" --out-dir "$out" --budget-s "${budget:-420}" \
        > "$out/plan_recipes.out" 2>&1
      echo "plan_recipes rc=$?"; tail -25 "$out/plan_recipes.out" ;;
    mpi)
      source tools/gpu_machine/mpi_env.sh
      gpus=$(nvidia-smi -L | wc -l)
      for np in 1 $gpus; do
        for t in dist_test_nccl_process_group dist_test_distributed_gpu_dlrm; do
          timeout 300 mpirun -np "$np" "$bin/$t" --gtest_brief=1 --gtest_color=no > "$out/mpirun-np$np-$t.log" 2>&1
          echo "mpirun -np $np $t rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/mpirun-np$np-$t.log" | sort -u | tr '\n' ' ')"
        done
      done
      ck=/tmp/mpi-demo-ckpt
      rm -rf "$ck"
      demo=(--config configs/demo.toml --set train.checkpoint_dir="'$ck'" --set train.checkpoint_every=200
            --set train.progress=off --set train.metrics_path="''")
      timeout 300 mpirun -np "$gpus" "$bin/hetrec" train "${demo[@]}" --set train.steps=400 > "$out/mpirun-demo.log" 2>&1
      echo "mpirun -np $gpus hetrec train demo rc=$?"; tail -14 "$out/mpirun-demo.log"
      timeout 300 mpirun -np 1 "$bin/hetrec" train "${demo[@]}" --set train.steps=600 --set train.resume=true \
        > "$out/mpirun-demo-resume.log" 2>&1
      echo "mpirun -np 1 resume rc=$?"; tail -6 "$out/mpirun-demo-resume.log" ;;
    export)
      # The export round trip in PyTorch against the GPU engine's own predictions
      # (tools/export_parity_torch.py: train 200 steps on the GPU, export, predict, compare),
      # for each network form and row type the exported description carries.
      for v in 'dlrm:' 'dcnv2:model.arch="dcnv2"' 'dcnv2-lowrank:model.arch="dcnv2",model.cross_rank=8' \
               'dlrm-mean:model.pooling="mean"' 'dcnv2-bf16rows:model.arch="dcnv2",model.row_dtype="bf16"' \
               'dlrm-fp16rows:model.row_dtype="fp16"'; do
        name=${v%%:*}
        IFS=, read -r -a kv <<< "${v#*:}"
        sets=(--set train.device=gpu)
        for x in "${kv[@]}"; do [ -n "$x" ] && sets+=(--set "$x"); done
        timeout 150 python3 tools/export_parity_torch.py --hetrec "$bin/hetrec" --config configs/demo.toml "${sets[@]}" \
          --workdir "/tmp/export-$name" --out "$out/export-parity-$name.json" > "$out/export-$name.log" 2>&1
        echo "export $name rc=$? $(grep -E '"(max_rel_diff|hetrec_device)"' "$out/export-parity-$name.json" 2>/dev/null | tr -d '\n ')"
      done ;;
    e2e1:*)
      IFS=: read -r _ config batch tag args <<< "$stage"
      IFS=, read -r -a extra <<< "${args:-}"
      timeout 500 "$bin/e2e_bench" --config "$config" --batch "$batch" --commit "$commit" \
        --json-out "$out/e2e-$tag.json" "${extra[@]}" > "$out/e2e-$tag.log" 2>&1
      echo "e2e $tag rc=$?"; tail -22 "$out/e2e-$tag.log" ;;
    e2edist:*)
      source tools/gpu_machine/mpi_env.sh
      IFS=: read -r _ np config batch tag args <<< "$stage"
      IFS=, read -r -a extra <<< "${args:-}"
      timeout 500 mpirun -np "$np" "$bin/e2e_bench" --config "$config" --batch "$batch" --commit "$commit" \
        --json-out "$out/e2e-$tag.json" "${extra[@]}" > "$out/e2e-$tag.log" 2>&1
      echo "e2e $tag rc=$?"; tail -22 "$out/e2e-$tag.log" ;;
    *) echo "unknown stage $stage" ;;
  esac
done
