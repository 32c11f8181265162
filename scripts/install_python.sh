#!/usr/bin/env bash
# Builds and installs the `loupe` Python package (native module, backend, `loupe` CLI) from
# this checkout: `pip install .` without build isolation, so the build uses the installed
# scikit-build-core and nanobind instead of fetching them, and reuses build-python/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}
echo "install_python: pip install $root"
"$PYTHON" -m pip install -q --no-build-isolation "$root"
