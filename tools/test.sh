#!/usr/bin/env bash
# The README's second command and CI: install dependencies, build everything with warnings
# as errors and run the whole test suite; the CPU tree compiled with clang (warnings as
# errors); every device source compiled for AMD (gfx90a) with hipcc; and the hardening jobs
# (docs/reliability.md): the CPU suite again under
# AddressSanitizer + UndefinedBehaviorSanitizer, and every fuzz target for a bounded time
# from its seed corpus (HETREC_FUZZ_SECONDS per target, default 60).
set -euo pipefail
cd "$(dirname "$0")/.."
stage() { printf '\n== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)" >&2; }
export HETREC_WERROR=ON  # tools/build.sh, tools/hip_build.sh and the presets below
export HETREC_REQUIRE_TEST_TOOLS=ON  # tools/build.sh: no test left out for a missing tool

stage "dependencies"
tools/install_deps.sh

stage "build and test"
build=$(tools/build.sh)
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 600

# Compile check only (unoptimised; the tests ran above on the g++ build).
stage "clang: the CPU tree compiled with clang, warnings as errors (preset clang, build/clang)"
cmake --preset clang >/dev/null
cmake --build --preset clang -j "$(nproc)"

stage "HIP: every device source compiled for gfx90a (build/hip)"
tools/hip_build.sh >/dev/null

stage "CPU suite under AddressSanitizer + UBSan (preset cpu-sanitize, build/asan)"
cmake --preset cpu-sanitize -DHETREC_WERROR=ON >/dev/null
cmake --build --preset cpu-sanitize -j "$(nproc)"
ctest --preset cpu-sanitize -j "$(nproc)"

stage "fuzz targets, ${HETREC_FUZZ_SECONDS:-60} s each (build/fuzz)"
fuzz/run.sh "${HETREC_FUZZ_SECONDS:-60}"

stage "all passed"
