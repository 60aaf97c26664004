#!/usr/bin/env bash
# Installs the Debian packages hetrec builds against (idempotent).
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config libopenblas-openmp-dev libtomlplusplus-dev
      nlohmann-json3-dev liblzma-dev libcli11-dev libfmt-dev libgtest-dev python3
      # The NumPy forward pass of an exported model (python/hetrec_numpy.py, tests/cli/test_export.cpp).
      python3-numpy
      # zlib: deflated members of .npz archives (the MLPerf multi-hot reader, src/data/npy_array.cpp).
      zlib1g-dev
      # The fuzz targets (fuzz/): clang with libFuzzer and the sanitizer runtimes, clang's
      # OpenMP runtime, and the pthreads OpenBLAS so that libomp is the only OpenMP runtime.
      clang libclang-rt-14-dev libomp-dev libopenblas-pthread-dev
      # The HIP build (tools/hip_build.sh): Debian's hipcc 5.2, the HIP runtime headers
      # and the AMD GPU device libraries; rocPRIM's headers for the library sort
      # (src/kernels/library_sort.cu).
      hipcc libamdhip64-dev rocm-device-libs librocprim-dev
      # Headless Chromium: the pictures' layout test renders the planner's SVG and the run
      # report (tests/report/check_layout.py).
      chromium
      # Distributed training over MPI (src/dist/, mpirun in the tests).
      openmpi-bin libopenmpi-dev
      # The LLM-backed kernel proposer's HTTPS client (src/tune/http_client.cpp).
      libcurl4-openssl-dev
      # The GEMM ranker: trained by tools/train_gemm_ranker.py, loaded through XGBoost's C API
      # (src/gemm_perf/gemm_ranker.cpp).
      python3-xgboost libxgboost-dev
      # The Python module (src/python/, docs/python.md) and its tests (tests/python/).
      pybind11-dev python3-pybind11 python3-dev python3-pytest)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  echo "installing: ${missing[*]}"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
