#!/usr/bin/env bash
# Packs what tools/gpu_machine/step_variants.sh runs: e2e_bench, hetrec, the GPU test
# programs named in TESTS, any extra binaries given (e.g. a saved e2e_bench of another
# commit), and the Debian libraries they need, into .carry/step/step.tar.xz.
# Usage: tools/gpu_machine/pack_step.sh [BUILD_DIR] [EXTRA_BINARY...]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/cuda}
shift || true
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" .carry/step
cp "$build/bench/e2e_bench" "$build/src/cli/hetrec" "$stage/bin/"
for t in ${TESTS:-kernels_test_dense_kernels model_gpu_test_gpu_dlrm}; do cp "$(find "$build/tests" -name "$t" -type f | head -1)" "$stage/bin/"; done
for x in "$@"; do cp "$x" "$stage/bin/"; done
strip --strip-all "$stage"/bin/* 2>/dev/null || true
for lib in $(ldd "$stage"/bin/* 2>/dev/null | awk '/=> \//{print $3}' | sort -u); do
  case $lib in
    */libopenblas*|*/libgomp*|*/libtomlplusplus*|*/libfmt*|*/libgfortran*|*/libquadmath*|*/libmpi*|*/libopen-*|*/libhwloc*|*/libevent*|*/libpmix*|*/libltdl*|*/libudev*|*/liblzma*|*/libxgboost*|*/libdmlc*)
      cp -L "$lib" "$stage/lib/" ;;
  esac
done
XZ_OPT="-9 -T2" tar -C "$stage" -cJf .carry/step/step.tar.xz bin lib
ls -la .carry/step/step.tar.xz >&2
