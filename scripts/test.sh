#!/usr/bin/env bash
# Runs every test suite: installs dependencies, builds, then one CTest run executes the
# GoogleTest suites and the lit suite. With --sanitize, builds into build-asan/ with
# AddressSanitizer + UndefinedBehaviorSanitizer and runs the same tests.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install_deps.sh"

build_dir=$root/build
cmake_args=()
if [[ "${1:-}" == "--sanitize" ]]; then
  build_dir=$root/build-asan
  cmake_args+=(-DLOUPE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug)
  # Generated kernels are plain shared objects; leaks in the sanitizer runtime's view of dlopen
  # are not ours to fix, and a failed check must stop the run.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fi
BUILD_DIR=$build_dir "$root/scripts/build.sh" "${cmake_args[@]}"
ctest --test-dir "$build_dir" --output-on-failure -j "${JOBS:-$(nproc)}"
