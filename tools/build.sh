#!/usr/bin/env bash
# Configures and builds hetrec. Picks the CUDA preset when nvcc is available (the CUDA
# sources then compile even without a GPU; GPU tests skip), else the CPU preset.
# Prints the build directory on its last line.
#   HETREC_PRESET=<preset>   use that configure/build preset instead
#   HETREC_TARGETS="a b"     build only these targets (default: everything, tests included)
#   HETREC_WERROR=ON|OFF     warnings as errors (CI and tools/test.sh: ON; default: as configured, OFF)
#   HETREC_REQUIRE_TEST_TOOLS=ON|OFF  a missing test tool fails instead of skipping (tools/test.sh: ON)
#   HETREC_QUIET_BUILD=1     one status line instead of the build tool's progress (tools/demo.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${HETREC_PRESET:-}
if [ -z "$preset" ]; then
  if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then preset=cuda; else preset=cpu; fi
fi
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"
configure=()
[ -n "${HETREC_WERROR:-}" ] && configure+=("-DHETREC_WERROR=${HETREC_WERROR}")
[ -n "${HETREC_REQUIRE_TEST_TOOLS:-}" ] && configure+=("-DHETREC_REQUIRE_TEST_TOOLS=${HETREC_REQUIRE_TEST_TOOLS}")
build=(-j "$(nproc)")
[ -n "${HETREC_TARGETS:-}" ] && build+=(--target ${HETREC_TARGETS})
cmake --preset "$preset" "${configure[@]}" >/dev/null
if [ -n "${HETREC_QUIET_BUILD:-}" ]; then
  start=$(date +%s)
  echo "building ${HETREC_TARGETS:-everything} (preset $preset, build/$preset) ..." >&2
  # ninja --quiet: no progress lines; a failing command still prints its output.
  cmake --build --preset "$preset" "${build[@]}" -- --quiet >&2
  echo "built in $(( $(date +%s) - start )) s" >&2
else
  cmake --build --preset "$preset" "${build[@]}" >&2
fi
echo "build/$preset"
