#!/usr/bin/env bash
# Runs every test suite: installs dependencies, builds, then one CTest run executes the
# GoogleTest suites and the lit suite; then installs the Python package and runs pytest.
# With --sanitize, builds into build-asan/ with AddressSanitizer + UndefinedBehaviorSanitizer
# and runs the C++ suites (CTest) there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install_deps.sh"

build_dir=$root/build
cmake_args=()
sanitize=0
if [[ "${1:-}" == "--sanitize" ]]; then
  sanitize=1
  build_dir=$root/build-asan
  cmake_args+=(-DLOUPE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug)
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
fi
BUILD_DIR=$build_dir "$root/scripts/build.sh" "${cmake_args[@]}"
# Where NVRTC and cuBLASLt are: the pip wheels' folders (python/loupe/cuda_libraries.py).
LOUPE_CUDA_LIBRARY_PATH=${LOUPE_CUDA_LIBRARY_PATH:-$(python3 "$root/python/loupe/cuda_libraries.py")}
export LOUPE_CUDA_LIBRARY_PATH
ctest --test-dir "$build_dir" --output-on-failure -j "${JOBS:-$(nproc)}"

if ((sanitize == 0)); then
  "$root/scripts/install_python.sh"
  # Run from the repository root: pytest must import the installed package, not the sources.
  cd "$root"
  HF_HUB_OFFLINE=1 python3 -m pytest unit_tests/python -q -p no:cacheprovider
fi
