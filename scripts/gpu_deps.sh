#!/usr/bin/env bash
# Gathers, on a development machine (Debian), what scripts/test_gpu.sh needs on a GPU machine
# that has CUDA, torch, CMake, nanobind and scikit-build-core but no package registry: the
# headers of sqlite3, nlohmann-json, CLI11 and CBLAS, and GoogleTest (headers, static libraries,
# CMake package). Writes them under gpu-deps/ (ignored by git) in the layout of a prefix, for
# CMAKE_PREFIX_PATH and CPATH. Carry that folder with the working tree.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/gpu-deps
arch=x86_64-linux-gnu
rm -rf "$out"
mkdir -p "$out/include" "$out/lib/$arch/cmake" "$out/share/cmake"
cp /usr/include/sqlite3.h /usr/include/sqlite3ext.h "$out/include/"
cp -r /usr/include/nlohmann /usr/include/CLI /usr/include/gtest "$out/include/"
cp /usr/include/$arch/openblas-pthread/cblas.h /usr/include/$arch/openblas-pthread/openblas_config.h \
  "$out/include/"
cp -r /usr/share/cmake/nlohmann_json "$out/share/cmake/"
cp -r /usr/lib/$arch/cmake/GTest "$out/lib/$arch/cmake/"
cp /usr/lib/$arch/libgtest.a /usr/lib/$arch/libgtest_main.a "$out/lib/$arch/"
du -sh "$out"
