#!/usr/bin/env bash
# Downloads the Debian packages hetrec builds against into .carry/debs, for a GPU
# machine that has the CUDA toolkit, CMake and a compiler but no Debian -dev packages.
# Run from the repository root on a Debian 12 machine with network access to its mirror.
set -euo pipefail
dest=.carry/debs
mkdir -p "$dest"
cd "$dest"
pkgs=(libopenblas-openmp-dev libopenblas0-openmp libgfortran5 libquadmath0
      libtomlplusplus-dev libtomlplusplus3 nlohmann-json3-dev libcli11-dev
      libfmt-dev libfmt9 libgtest-dev liblzma-dev liblzma5 zlib1g-dev zlib1g
      libcurl4-openssl-dev libcurl4 libxgboost-dev libxgboost0
      libssl-dev libssl3)
apt-get download "${pkgs[@]}"
ls -1 | wc -l
