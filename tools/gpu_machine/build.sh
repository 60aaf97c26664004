#!/usr/bin/env bash
# Unpacks .carry/debs into a private prefix and builds the given preset (default: cuda)
# against it. Run from the repository root on the GPU machine. Prints the environment
# line that the built programs need (LD_LIBRARY_PATH) to .carry/env.sh.
set -euo pipefail
preset=${1:-cuda}
prefix=/tmp/hetrec-deps
mkdir -p "$prefix"
for f in .carry/debs/*.deb; do dpkg -x "$f" "$prefix"; done
lib="$prefix/usr/lib/x86_64-linux-gnu"
export PATH=/usr/local/cuda/bin:$PATH
cmake --preset "$preset" \
  -DCMAKE_PREFIX_PATH="$prefix/usr" \
  -DOPENBLAS_INCLUDE_DIR="$prefix/usr/include/x86_64-linux-gnu/openblas-openmp" \
  -DOPENBLAS_LIBRARY="$lib/openblas-openmp/libopenblas.so" \
  -DCMAKE_BUILD_RPATH="$lib;$lib/openblas-openmp"
cmake --build --preset "$preset" -j "$(nproc)"
echo "export LD_LIBRARY_PATH=$lib:$lib/openblas-openmp:\${LD_LIBRARY_PATH:-}" > .carry/env.sh
