#!/usr/bin/env bash
# Packs this machine's OpenMPI runtime (mpirun, its plugins, PMIx, help files and the
# libraries they load) into .carry/suite/openmpi.tar.xz, so a GPU machine without
# OpenMPI can start `mpirun -np N` jobs of the packed programs: tools/gpu_machine/mpi_env.sh
# unpacks it and points OPAL_PREFIX, PATH and LD_LIBRARY_PATH at it.
set -euo pipefail
cd "$(dirname "$0")/../.."
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/usr
mkdir -p "$root/bin" "$root/lib/x86_64-linux-gnu" "$root/share" "$root/etc" .carry/suite
cp -L /usr/bin/orterun "$root/bin/mpirun"
cp -L /usr/bin/orted "$root/bin/" 2>/dev/null || true
cp -a /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 "$root/lib/x86_64-linux-gnu/"
cp -a /usr/share/openmpi "$root/share/"
cp -a /etc/openmpi/. "$root/etc/"
libs=$(ldd /usr/bin/orterun /usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/*.so \
         2>/dev/null | awk '/=> \//{print $3}' | sort -u)
for lib in $libs; do
  case $lib in */libc.so*|*/libm.so*|*/libpthread*|*/libdl.so*|*/librt.so*|*/ld-linux*) continue ;; esac
  cp -L "$lib" "$root/lib/x86_64-linux-gnu/"
done
tar -C "$stage" -cJf .carry/suite/openmpi.tar.xz usr
ls -la .carry/suite/openmpi.tar.xz >&2
