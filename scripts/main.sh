#!/usr/bin/env bash
# The main job, end to end on a fresh machine: install dependencies, build and install Loupe,
# run the sample model through torch.compile(backend="loupe") at two batch sizes (forward and
# backward, every pass of every compile recorded into a trace), show the trace, then diff the
# batch-16 compiles against the batch-8 ones (exit 0: they differ only in shapes).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install_deps.sh"
"$root/scripts/install_python.sh"

trace_dir=${LOUPE_TRACE_DIR:-$root/loupe_traces}
mkdir -p "$trace_dir"
trace=$trace_dir/mlp.db
rm -f "$trace"
echo "== python samples/mlp.py $trace"
python3 "$root/samples/mlp.py" "$trace"
echo
echo "== loupe show $trace"
loupe show "$trace"
echo
echo "== loupe diff $trace"
loupe diff "$trace"
