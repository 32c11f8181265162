#!/usr/bin/env bash
# Fails when a C++ file of the project is not clang-formatted (.clang-format at the root).
set -euo pipefail
cd "$(dirname "$0")/.."
bad=$(git ls-files '*.cpp' '*.h' | while read -r f; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || echo "$f"
done)
if [[ -n "$bad" ]]; then
  echo "clang-format would change these files (run: clang-format -i <file>):"
  echo "$bad"
  exit 1
fi
echo "format ok"
