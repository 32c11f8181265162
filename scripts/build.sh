#!/usr/bin/env bash
# Configures and builds Loupe into BUILD_DIR (default build/). Extra arguments go to CMake,
# e.g. scripts/build.sh -DLOUPE_SANITIZE=ON with BUILD_DIR=build-asan.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
jobs=${JOBS:-$(nproc)}
cmake -S "$root" -B "$build_dir" -G Ninja "$@" >/dev/null
cmake --build "$build_dir" -j "$jobs"
