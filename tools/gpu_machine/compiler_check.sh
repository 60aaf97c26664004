#!/usr/bin/env bash
# Compiles every object of the tree with the GPU machine's own compiler (g++ 13 on the H200
# build host) and warnings as errors (linking only the programs tests wait for): the check that the tree builds
# warning-free with a compiler this repository's CI machine does not have. Headers come
# from .carry/debs (tools/gpu_machine/fetch_deps.sh), unpacked into a private prefix.
# PRESET cuda-dev (default) compiles the .cu files too, with nvcc over that compiler.
# Writes OUT_DIR/compiler-check.log and prints one summary line.
# Usage: tools/gpu_machine/compiler_check.sh OUT_DIR [PRESET] [JOBS]
set -uo pipefail
out=$1 preset=${2:-cuda-dev} jobs=${3:-$(nproc)}
mkdir -p "$out"
prefix=/tmp/hetrec-deps
mkdir -p "$prefix"
for f in .carry/debs/*.deb; do dpkg -x "$f" "$prefix"; done
lib="$prefix/usr/lib/x86_64-linux-gnu"
# Debian's -dev packages link libfoo.so to an absolute /lib/... path: point each such link
# at the unpacked copy in the prefix.
for f in "$lib"/*.so; do
  [ -L "$f" ] && [ ! -e "$f" ] || continue
  target=$(readlink "$f")
  [ -e "$prefix$target" ] && ln -sfn "$prefix$target" "$f"
done
export PATH=/usr/local/cuda/bin:$PATH
build=/tmp/hetrec-compiler-check
log=$out/compiler-check.log
{ g++ --version | head -1; nvcc --version | tail -2; cmake --version | head -1; } > "$log" 2>&1
cmake -S . -B "$build" -G Ninja --preset "$preset" -DCMAKE_CXX_COMPILER=g++ -DCMAKE_C_COMPILER=gcc \
  -DCMAKE_PREFIX_PATH="$prefix/usr" \
  -DOPENBLAS_INCLUDE_DIR="$prefix/usr/include/x86_64-linux-gnu/openblas-openmp" \
  -DOPENBLAS_LIBRARY="$lib/openblas-openmp/libopenblas.so" \
  -DLIBLZMA_INCLUDE_DIR="$prefix/usr/include" -DLIBLZMA_LIBRARY="$lib/liblzma.so" \
  -DLIBLZMA_HAS_AUTO_DECODER=ON -DLIBLZMA_HAS_EASY_ENCODER=ON -DLIBLZMA_HAS_LZMA_PRESET=ON \
  -DZLIB_INCLUDE_DIR="$prefix/usr/include" -DZLIB_LIBRARY="$lib/libz.so" \
  -DCURL_INCLUDE_DIR="$prefix/usr/include/x86_64-linux-gnu" -DCURL_LIBRARY="$lib/libcurl.so" \
  -DCMAKE_EXE_LINKER_FLAGS="-Wl,--allow-shlib-undefined -Wl,-rpath-link,$lib" \
  >> "$log" 2>&1 || { echo "compiler check: configure failed (tail of $log)"; tail -20 "$log"; exit 1; }
# The host objects first (g++ alone), then the device objects (nvcc over g++): a run cut
# short still has every host object's verdict. The link-time checks of find_package
# (LibLZMA's) are answered in advance.
# A test's objects wait for the programs it runs (hetrec), so a few programs are linked too,
# against the unpacked libraries (their own dependencies left unresolved: nothing runs).
# The layer check's planted upward include (tests/layers/probe/data_includes_plan.cpp)
# must not compile and is left out.
mapfile -t host < <(ninja -C "$build" -t targets all | sed -n 's/^\(.*\.o\): CXX_COMPILER.*/\1/p' | grep -v layer_probe_upward)
mapfile -t device < <(ninja -C "$build" -t targets all | sed -n 's/^\(.*\.o\): CUDA_COMPILER.*/\1/p')
objects=("${host[@]}" "${device[@]}")
start=$(date +%s)
ninja -C "$build" -k 0 -j "$jobs" "${host[@]}" >> "$log" 2>&1
rc=$?
echo "host objects: ${#host[@]}, rc=$rc, $(( $(date +%s) - start )) s" >> "$log"
if [ ${#device[@]} -gt 0 ]; then
  ninja -C "$build" -k 0 -j "$jobs" "${device[@]}" >> "$log" 2>&1
  drc=$?
  echo "device objects: ${#device[@]}, rc=$drc, $(( $(date +%s) - start )) s" >> "$log"
  [ $rc -eq 0 ] && rc=$drc
fi
warnings=$(grep -c 'warning:' "$log")
errors=$(grep -c 'error:' "$log")
echo "compiler check: $(head -1 "$log"); ${#objects[@]} objects, rc=$rc, $warnings warning lines, $errors error lines, $(( $(date +%s) - start )) s"
grep -E 'warning:|error:' "$log" | sort | uniq | head -40
exit $rc
