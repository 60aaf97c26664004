#!/usr/bin/env bash
# Compiles every device translation unit for AMD GPUs (preset `hip`, build/hip, target
# hetrec_hip_objects): the kernels through hipcc (warnings as errors with HETREC_WERROR=ON), the host side
# of the device layers against the HIP runtime headers. Objects only: no program is
# linked and nothing runs. Needs the Debian packages hipcc, libamdhip64-dev and
# rocm-device-libs. HETREC_HIP_ARCHITECTURES overrides the target list (default gfx90a).
# Prints the build directory on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v hipcc >/dev/null 2>&1; then
  echo "hip_build.sh: hipcc not found (apt-get install hipcc libamdhip64-dev rocm-device-libs)" >&2
  exit 1
fi
args=()
[ -n "${HETREC_HIP_ARCHITECTURES:-}" ] && args+=("-DHETREC_HIP_ARCHITECTURES=${HETREC_HIP_ARCHITECTURES}")
[ -n "${HETREC_WERROR:-}" ] && args+=("-DHETREC_WERROR=${HETREC_WERROR}")
start=$(date +%s)
cmake --preset hip "${args[@]}" >&2
cmake --build --preset hip --target hetrec_hip_objects -j "$(nproc)" >&2
echo "hip_build.sh: HIP objects compiled in $(( $(date +%s) - start )) s" >&2
echo "build/hip"
