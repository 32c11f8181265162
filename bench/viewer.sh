#!/usr/bin/env bash
# The viewer's benchmark (docs/viewer.md, "Benchmark"): generates traces of 1k, 10k and 50k
# nodes with loupe-view-gen, opens each twice with `loupe-view --benchmark` (the first open
# lays out cold and fills the trace's layout cache, the second reads it) and prints one
# Markdown table. The frames drawn while the first open reads and lays out the graph on the
# worker thread get a column of their own: the window must keep drawing meanwhile. Needs a
# display; without one it runs itself under xvfb-run.
#
#   bench/viewer.sh [BUILD_DIR] [SIZES...]     default: build, 1000 10000 50000
set -euo pipefail

build=${1:-build}
shift || true
sizes=("$@")
((${#sizes[@]})) || sizes=(1000 10000 50000)
gen=$build/gui/tools/loupe-view-gen
view=$build/gui/app/loupe-view
for tool in "$gen" "$view"; do
  [[ -x $tool ]] || { echo "viewer.sh: $tool is not built (ninja -C $build loupe-view loupe-view-gen)" >&2; exit 2; }
done
if [[ -z ${DISPLAY:-} ]]; then
  exec xvfb-run -a -s "-screen 0 1280x800x24" "$0" "$build" "${sizes[@]}"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# field NAME FILE: the value printed after NAME by --benchmark.
field() { awk -v name="$1" '$1 == name { print $2 }' "$2"; }

# Frame times: "build" is the UI's CPU time, "total" adds rasterisation (Mesa's software
# renderer under Xvfb, which dominates there and which a GPU makes negligible).
echo "| nodes | items shown | first open (ms) | frames during the cold open: count, median / p95 / max (ms) | layout cold (ms) | layout cached (ms) | second open (ms) | first frame (ms) | pan build median / p95 (ms) | pan total median / p95 (ms) |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for n in "${sizes[@]}"; do
  trace=$work/g$n.db
  "$gen" --nodes "$n" --out "$trace" >/dev/null
  "$view" "$trace" --benchmark >"$work/first.txt"
  "$view" "$trace" --benchmark >"$work/second.txt"
  items=$(awk '$1 == "boxes" { print substr($3, 2) " of " $2 }' "$work/second.txt")
  echo "| $n | $items | $(field open_ms "$work/first.txt")" \
    "| $(field open_frames "$work/first.txt"), $(field open_frame_median_ms "$work/first.txt")" \
    "/ $(field open_frame_p95_ms "$work/first.txt") / $(field open_frame_max_ms "$work/first.txt")" \
    "| $(field layout_cold_ms "$work/second.txt")" \
    "| $(field layout_cached_ms "$work/second.txt") | $(field open_ms "$work/second.txt")" \
    "| $(field first_frame_ms "$work/second.txt")" \
    "| $(field pan_build_median_ms "$work/second.txt") / $(field pan_build_p95_ms "$work/second.txt")" \
    "| $(field pan_total_median_ms "$work/second.txt") / $(field pan_total_p95_ms "$work/second.txt") |"
done
