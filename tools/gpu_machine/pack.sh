#!/usr/bin/env bash
# Packs the programs of a CUDA build and the shared libraries they need beyond the CUDA
# toolkit into .carry/suite/suite.tar.xz, the input of tools/gpu_machine/suite.sh on a GPU
# machine that has the CUDA runtime but none of the Debian -dev packages.
# Usage: tools/gpu_machine/pack.sh [BUILD_DIR]   (default build/cuda)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build/cuda}
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" .carry/suite
cp "$build/src/cli/hetrec" "$stage/bin/"
[ -x "$build/bench/e2e_bench" ] && cp "$build/bench/e2e_bench" "$stage/bin/"
[ -x "$build/bench/small_gemm_bench" ] && cp "$build/bench/small_gemm_bench" "$stage/bin/"
# The GPU test programs suite.sh runs (each links every kernel: about 11 MB apiece, so
# only these travel).
for t in "$build"/tests/*/{gpu_test_*,gemm_test_*,dist_test_nccl*,dist_test_distributed_gpu*,tune_test_gate*,tune_test_small_gemm_gpu,kernels_test_*,model_gpu_test_*}; do
  [ -x "$t" ] && [ -f "$t" ] || continue
  case $t in *.cmake) continue ;; esac
  if ldd "$t" 2>/dev/null | grep -qE 'libcudart|libcublasLt|libnvrtc|libnccl|libcuda\.so'; then cp "$t" "$stage/bin/"; fi
done
strip --strip-all "$stage"/bin/* 2>/dev/null || true
# Libraries that come from Debian packages (not in the CUDA toolkit or the base system).
for lib in $(ldd "$stage"/bin/* 2>/dev/null | awk '/=> \//{print $3}' | sort -u); do
  case $lib in
    */libopenblas*|*/libgomp*|*/libtomlplusplus*|*/libfmt*|*/libgfortran*|*/libquadmath*|*/libmpi*|*/libopen-*|*/libhwloc*|*/libevent*|*/libpmix*|*/libltdl*|*/libudev*|*/liblzma*)
      cp -L "$lib" "$stage/lib/" ;;
  esac
done
XZ_OPT="-9e -T0" tar -C "$stage" -cJf .carry/suite/suite.tar.xz bin lib
ls -la .carry/suite/suite.tar.xz >&2
tar -tJf .carry/suite/suite.tar.xz | sed 's/^/  /' >&2
