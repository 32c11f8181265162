#!/usr/bin/env bash
# Installs what Loupe needs to build and test on Debian 12 (root): Debian packages and PyPI
# packages. Idempotent: anything already installed is skipped, so it is cheap to re-run.
set -euo pipefail

APT_PACKAGES=(
  g++ pkg-config
  libsqlite3-dev          # trace store
  nlohmann-json3-dev      # JSON in traces and CLI output
  libcli11-dev            # CLI parsing
  libopenblas-dev         # matmul / convolution kernels
  libdnnl-dev             # convolution kernels (oneDNN; optional: without it, im2col + BLAS)
  libgtest-dev            # unit tests
  llvm-14-tools           # FileCheck for lit tests
  clang-format            # formatting check
  libimgui-dev libglfw3-dev libgraphviz-dev libstb-dev libgl-dev  # loupe-view
  libgl1-mesa-dri xvfb fonts-dejavu-core                          # loupe-view's screenshot tests
)
# torch is pinned and installed first: an unpinned torch (or a package that depends on it,
# installed before it) would make pip resolve the newest CUDA build, several GB.
TORCH_SPEC=${LOUPE_TORCH_SPEC:-torch==2.13.0}
PIP_PACKAGES=(lit cmake ninja numpy pytest nanobind scikit-build-core transformers ruff)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install_deps: apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c "import torch" >/dev/null 2>&1; then
  echo "install_deps: pip install $TORCH_SPEC"
  "$PYTHON" -m pip install -q "$TORCH_SPEC"
fi
pip_missing=()
for p in "${PIP_PACKAGES[@]}"; do
  "$PYTHON" -m pip show -q "$p" >/dev/null 2>&1 || pip_missing+=("$p")
done
if ((${#pip_missing[@]})); then
  echo "install_deps: pip install ${pip_missing[*]}"
  "$PYTHON" -m pip install -q "${pip_missing[@]}"
fi
# NVRTC (90 MB, no GPU needed): the tests compile every generated CUDA kernel to a cubin with it.
# The wheel's version must match the CUDA 13 kernels Loupe targets; torch's CUDA builds bring it.
if ! "$PYTHON" -m pip show -q nvidia-cuda-nvrtc >/dev/null 2>&1; then
  echo "install_deps: pip install nvidia-cuda-nvrtc==13.0.*"
  "$PYTHON" -m pip install -q "nvidia-cuda-nvrtc==13.0.*"
fi
