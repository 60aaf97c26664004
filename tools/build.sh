#!/usr/bin/env bash
# Configures and builds hetrec. Picks the CUDA preset when nvcc is available (the CUDA
# sources then compile even without a GPU; GPU tests skip), else the CPU preset.
# Prints the build directory on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${HETREC_PRESET:-}
if [ -z "$preset" ]; then
  if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then preset=cuda; else preset=cpu; fi
fi
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)" >&2
echo "build/$preset"
