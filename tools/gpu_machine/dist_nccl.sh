#!/usr/bin/env bash
# Builds and runs the NCCL process-group test on a GPU machine, world size 1 (no MPI
# needed there: the group is bootstrapped from the single-process group; with MPI built
# in, also under `mpirun -np 1`). Run from the repository root with .carry/debs present
# (tools/gpu_machine/fetch_deps.sh). Writes OUT_DIR/nccl_process_group.json (GoogleTest
# JSON report) and OUT_DIR/nccl_process_group.log.
# Usage: tools/gpu_machine/dist_nccl.sh OUT_DIR
set -euo pipefail
out=$1
mkdir -p "$out"
prefix=/tmp/hetrec-deps
mkdir -p "$prefix"
for f in .carry/debs/*.deb; do dpkg -x "$f" "$prefix"; done
lib="$prefix/usr/lib/x86_64-linux-gnu"
export PATH=/usr/local/cuda/bin:$PATH
cmake --preset cuda -DCMAKE_PREFIX_PATH="$prefix/usr" \
  -DOPENBLAS_INCLUDE_DIR="$prefix/usr/include/x86_64-linux-gnu/openblas-openmp" \
  -DOPENBLAS_LIBRARY="$lib/openblas-openmp/libopenblas.so" \
  -DCMAKE_BUILD_RPATH="$lib;$lib/openblas-openmp" > "$out/configure.log" 2>&1
cmake --build build/cuda --target dist_test_nccl_process_group -j "$(nproc)" > "$out/build.log" 2>&1
export LD_LIBRARY_PATH=$lib:$lib/openblas-openmp:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/gpu.txt"
rc=0
NCCL_DEBUG=WARN build/cuda/tests/dist/dist_test_nccl_process_group \
  --gtest_output=json:"$out/nccl_process_group.json" > "$out/nccl_process_group.log" 2>&1 || rc=$?
# Under mpirun too when this build has MPI (its CTest registers the mpirun variant).
if command -v mpirun > /dev/null && ctest --test-dir build/cuda -N -R 'dist_test_nccl_process_group\.mpirun_np1' | grep -q "Total Tests: 1"; then
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 1 build/cuda/tests/dist/dist_test_nccl_process_group \
    --gtest_output=json:"$out/nccl_process_group_mpirun.json" > "$out/nccl_process_group_mpirun.log" 2>&1 || rc=$?
fi
tail -5 "$out/nccl_process_group.log"
exit $rc
