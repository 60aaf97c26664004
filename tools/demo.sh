#!/usr/bin/env bash
# The README's first command: install dependencies, build the hetrec program, and train the
# demo model on the built-in synthetic dataset with a live progress line. It builds the
# CUDA backend only where it can run (a GPU is visible and nvcc is installed) and trains on
# the GPU there, else it builds the CPU backend and trains on the CPU. Only the program is
# built; tools/test.sh builds everything (tests and benchmarks).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install_deps.sh
if [ -z "${HETREC_PRESET:-}" ]; then
  HETREC_PRESET=cpu
  if nvidia-smi -L >/dev/null 2>&1 && { command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; }; then
    HETREC_PRESET=cuda
  fi
fi
build=$(HETREC_PRESET=$HETREC_PRESET HETREC_TARGETS=hetrec HETREC_QUIET_BUILD=1 tools/build.sh)
mkdir -p out
# A metrics file holds one run (a new run into it is refused), so a fresh demo run keeps
# the previous one's outputs under a new name instead of mixing into them or deleting
# them; a resume (--set train.resume=true) continues in place.
if [ -e out/demo ] && [[ " $* " != *"train.resume=true"* ]]; then
  previous="out/demo.$(date -u +%Y%m%dT%H%M%SZ)"
  mv out/demo "$previous"
  echo "demo: the previous demo run's outputs are kept in $previous"
fi
exec "$build/src/cli/hetrec" train --config configs/demo.toml --set train.progress=on "$@"
