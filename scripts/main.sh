#!/usr/bin/env bash
# The main job, end to end on a fresh machine: install dependencies, build, compile the sample
# MLP graph through the full pipeline at two batch sizes with every pass recorded into a
# trace, run it in check mode (each kernel against the reference), and show the trace.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install_deps.sh"
BUILD_DIR=$root/build "$root/scripts/build.sh"

loupe=$root/build/inspector/loupe
trace_dir=${LOUPE_TRACE_DIR:-$root/loupe_traces}
mkdir -p "$trace_dir"
trace=$trace_dir/mlp.db
rm -f "$trace"
for batch in 8 16; do
  echo "== loupe run samples/mlp.lir at batch $batch (check mode, traced)"
  "$loupe" run "$root/samples/mlp.lir" --symbol s0=$batch --check --trace "$trace"
done
echo
echo "== loupe show $trace"
"$loupe" show "$trace"
