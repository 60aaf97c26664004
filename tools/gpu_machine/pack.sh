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
for b in e2e_bench host_gather_bench small_gemm_bench sort_bench; do [ -x "$build/bench/$b" ] && cp "$build/bench/$b" "$stage/bin/"; done
# The GPU test programs suite.sh runs (each links every kernel: about 11 MB apiece, so
# only these travel).
for t in "$build"/tests/*/{gpu_test_*,gemm_test_*,dist_test_nccl*,dist_test_distributed_gpu*,tune_test_*gpu,kernels_test_*,model_gpu_test_*}; do
  [ -x "$t" ] && [ -f "$t" ] || continue
  case $t in *.cmake) continue ;; esac
  # The library list is captured first: `ldd | grep -q` under pipefail fails when grep
  # stops reading early, which would drop the program silently.
  libs=$(ldd "$t" 2>/dev/null || true)
  if grep -qE 'libcudart|libcublasLt|libnvrtc|libnccl|libcuda\.so' <<<"$libs"; then cp "$t" "$stage/bin/"; fi
done
strip --strip-all "$stage"/bin/* 2>/dev/null || true
# Libraries that come from Debian packages (not in the CUDA toolkit or the base system).
for lib in $(ldd "$stage"/bin/* 2>/dev/null | awk '/=> \//{print $3}' | sort -u); do
  case $lib in
    */libopenblas*|*/libgomp*|*/libtomlplusplus*|*/libfmt*|*/libgfortran*|*/libquadmath*|*/libmpi*|*/libopen-*|*/libhwloc*|*/libevent*|*/libpmix*|*/libltdl*|*/libudev*|*/liblzma*|*/libxgboost*|*/libdmlc*)
      cp -L "$lib" "$stage/lib/" ;;
  esac
done
# One long dictionary (PACK_XZ_OPT) lets the test programs, which share most of their device
# code, compress against each other: a few hundred MiB of dictionary cuts the archive
# several times, within the device call's 64 MiB.
XZ_OPT="${PACK_XZ_OPT:---lzma2=preset=6,dict=512MiB -T1}" tar -C "$stage" -cJf .carry/suite/suite.tar.xz bin lib
ls -la .carry/suite/suite.tar.xz >&2
tar -tJf .carry/suite/suite.tar.xz | sed 's/^/  /' >&2
