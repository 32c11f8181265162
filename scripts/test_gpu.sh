#!/usr/bin/env bash
# The GPU suite, in one command, on a machine with an NVIDIA GPU: CUDA 13 (driver, NVRTC,
# cuBLASLt), a CUDA build of torch, CMake, ninja, nanobind, scikit-build-core, pytest and
# transformers. What such a machine may lack and has no registry to fetch (the headers of
# sqlite3, nlohmann-json, CLI11, CBLAS; GoogleTest) comes in gpu-deps/, which
# scripts/gpu_deps.sh gathers on a Debian machine: carry it with the working tree.
#
# Builds the C++ with -Werror (the lit suite and the viewer left out), runs every CTest suite
# (the CUDA ones run on the GPU here), installs the Python package and runs the GPU tests of
# unit_tests/python. With --memcheck the GPU tests run once more under compute-sanitizer.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
deps=$root/gpu-deps
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  echo "test_gpu: torch sees no CUDA device here" >&2
  exit 2
fi
if [[ -d $deps ]]; then
  export CPATH=$deps/include${CPATH:+:$CPATH}
  export CMAKE_PREFIX_PATH=$deps${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
fi
sqlite_args=()
if [[ ! -f /usr/include/sqlite3.h && -f $deps/include/sqlite3.h ]]; then
  sqlite_lib=$(ls /usr/lib/x86_64-linux-gnu/libsqlite3.so* 2>/dev/null | head -1)
  sqlite_args=(-DSQLite3_INCLUDE_DIR="$deps/include" -DSQLite3_LIBRARY="$sqlite_lib")
fi
LOUPE_CUDA_LIBRARY_PATH=${LOUPE_CUDA_LIBRARY_PATH:-$("$PYTHON" python/loupe/cuda_libraries.py)}
export LOUPE_CUDA_LIBRARY_PATH LOUPE_REQUIRE_NVRTC=1
jobs=$(nproc)

echo "== build ($(${CXX:-c++} --version | head -1))"
start=$SECONDS
# Quiet unless it fails; then the end of the tool's own output says why.
quietly() {
  local log
  log=$(mktemp)
  if ! "$@" >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    echo "test_gpu: failed: $*" >&2
    exit 1
  fi
  rm -f "$log"
}
quietly cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DLOUPE_BUILD_LIT_TESTS=OFF -DLOUPE_ENABLE_GUI=OFF -DPython3_EXECUTABLE="$(command -v "$PYTHON")" \
  "${sqlite_args[@]}"
quietly ninja -C build-gpu -j "$jobs"
echo "built in $((SECONDS - start)) s"

echo "== C++ tests"
ctest --test-dir build-gpu -j "$jobs" --output-on-failure | tail -n 3

echo "== Python package"
CMAKE_ARGS="${sqlite_args[*]}" "$PYTHON" -m pip install -q --no-build-isolation --no-deps \
  --no-cache-dir . 2>&1 | grep -v "as the 'root' user" || true

echo "== GPU tests (unit_tests/python, marked cuda)"
gpu_tests=(unit_tests/python/cuda)
HF_HUB_OFFLINE=1 "$PYTHON" -m pytest "${gpu_tests[@]}" -q -p no:cacheprovider
if [[ "${1:-}" == "--memcheck" ]]; then
  echo "== GPU tests under compute-sanitizer (memcheck)"
  # LOUPE_UNDER_MEMCHECK: the CUDA-graph tests skip their counts of captures (see there).
  HF_HUB_OFFLINE=1 LOUPE_UNDER_MEMCHECK=1 compute-sanitizer --tool memcheck --error-exitcode 1 \
    "$PYTHON" -m pytest "${gpu_tests[@]}" -q -p no:cacheprovider -x
fi
echo "== GPU suite passed"
