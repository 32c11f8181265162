#!/usr/bin/env bash
# Fails when a C++ file of the project is not clang-formatted (.clang-format at the root), or a
# Python file does not pass ruff's lint rules or is not ruff-formatted ([tool.ruff] in
# pyproject.toml). PYTHON names the interpreter that has ruff (scripts/install_deps.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
status=0

bad=$(git ls-files '*.cpp' '*.h' | while read -r f; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || echo "$f"
done)
if [[ -n "$bad" ]]; then
  echo "clang-format would change these files (run: clang-format -i <file>):"
  echo "$bad"
  status=1
fi

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -m ruff --version >/dev/null 2>&1; then
  echo "ruff is not installed for $PYTHON (run scripts/install_deps.sh)"
  exit 1
fi
mapfile -t python_files < <(git ls-files '*.py')
if ! "$PYTHON" -m ruff check --quiet "${python_files[@]}"; then
  echo "ruff check failed (run: ruff check --fix <file>, and fix what it cannot)"
  status=1
fi
if ! "$PYTHON" -m ruff format --check --quiet "${python_files[@]}"; then
  echo "ruff format would change these files (run: ruff format <file>)"
  status=1
fi

if ((status)); then
  exit 1
fi
echo "format ok"
