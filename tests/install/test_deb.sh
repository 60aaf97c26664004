#!/usr/bin/env bash
# test_deb.sh BUILD_DIR CPACK
# cpack -G DEB into a temporary folder: the package holds the program, its data files, the
# package config and the module under /usr, and its Depends line names the shared
# libraries' packages (dpkg-shlibdeps).
set -euo pipefail
build=$1 cpack=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$work" >"$work/cpack.log" 2>&1 || { cat "$work/cpack.log"; fail "cpack"; }
deb=$(ls "$work"/hetrec_*.deb) || fail "no package in $work: $(ls "$work")"
dpkg-deb -c "$deb" | awk '{print $6}' >"$work/files.txt"
for f in ./usr/bin/hetrec ./usr/share/hetrec/hw/h200_sxm.toml ./usr/share/hetrec/configs/demo.toml \
         ./usr/share/hetrec/tune/winners.json ./usr/lib/cmake/hetrec/hetrecConfig.cmake ./usr/include/hetrec/train/config.h; do
  grep -qxF "$f" "$work/files.txt" || fail "$deb does not hold $f"
done
depends=$(dpkg-deb -f "$deb" Depends)
grep -q "libc6" <<<"$depends" || fail "Depends misses the C library: '$depends'"
echo "package test passed: $(basename "$deb")"
