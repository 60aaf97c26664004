#!/usr/bin/env bash
# The README's first command: install dependencies, build, and train the demo model on
# the built-in synthetic dataset (GPU if present, else CPU) with a live progress line.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install_deps.sh
build=$(tools/build.sh)
mkdir -p out
exec "$build/src/cli/hetrec" train --config configs/demo.toml --set train.progress=on "$@"
