#!/usr/bin/env bash
# The README's second command: install dependencies, build, run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install_deps.sh
build=$(tools/build.sh)
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 600
