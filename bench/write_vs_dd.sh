#!/bin/bash
# write_vs_dd.sh — write-bench builds interleaved with dd of the same bytes (issue 20).
# Usage: bench/write_vs_dd.sh DIR ROUNDS BYTES WRITE_BENCH...
# Each round runs every given write-bench binary (DIR emptied first), then
# dd bs=1M with conv=fdatasync and without; prints the load average per round.
# Report medians of the rounds, as ratios within a round (docs/BENCHMARKS.md).
set -u
dir=$1 rounds=$2 bytes=$3
shift 3
mib=$((bytes / 1048576))
mkdir -p "$dir"
for r in $(seq 1 "$rounds"); do
  sed "s/^/round $r load: /" /proc/loadavg
  for b in "$@"; do
    rm -rf "${dir:?}"/*
    "$b" --bytes "$bytes" --dir "$dir" 2>&1 | grep -E "^(none|seal)" | sed "s|^|$b r$r |"
  done
  rm -rf "${dir:?}"/*
  dd if=/dev/zero of="$dir/dd" bs=1M count="$mib" conv=fdatasync 2>&1 | tail -1 | sed "s/^/dd-fdatasync r$r /"
  rm -f "$dir/dd"
  dd if=/dev/zero of="$dir/dd" bs=1M count="$mib" 2>&1 | tail -1 | sed "s/^/dd-nosync r$r /"
  rm -f "$dir/dd"
done
