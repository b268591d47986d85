#!/bin/bash
# write_vs_dd.sh — write-bench builds interleaved with dd of the same bytes (issue 20).
# Usage: bench/write_vs_dd.sh DIR ROUNDS BYTES WRITE_BENCH...
# Each round runs every given write-bench binary (in a fresh subdirectory), then
# dd bs=1M with conv=fdatasync and without; prints the load average per round.
# Report medians of the rounds, as ratios within a round (docs/BENCHMARKS.md).
# The runs go into a new subdirectory of DIR, removed at the end: DIR's own files
# are never touched.
set -u
usage() {
  echo "usage: $0 DIR ROUNDS BYTES WRITE_BENCH..." >&2
  echo "  ROUNDS >= 1, BYTES a multiple of 1 MiB in decimal digits (1073741824 is 1 GiB)," >&2
  echo "  WRITE_BENCH one or more write-bench binaries, e.g. bin/write-bench" >&2
  exit 2
}
[ $# -ge 4 ] || usage
dir=$1 rounds=$2 bytes=$3
shift 3
[[ $rounds =~ ^[1-9][0-9]*$ && $bytes =~ ^[1-9][0-9]*$ ]] || usage
[ $((bytes % 1048576)) -eq 0 ] || usage
for b in "$@"; do [ -x "$b" ] || { echo "$0: $b is not an executable" >&2; exit 2; }; done
mib=$((bytes / 1048576))
mkdir -p "$dir" && dir=$(mktemp -d "$dir/write_vs_dd.XXXXXX") || exit 3
trap 'rm -rf "$dir"' EXIT
for r in $(seq 1 "$rounds"); do
  sed "s/^/round $r load: /" /proc/loadavg
  for b in "$@"; do
    rm -rf "${dir:?}"/*
    "$b" --bytes "$bytes" --dir "$dir" 2>&1 | grep -E "^(policy|none|seal)" | sed "s|^|$b r$r |"
  done
  rm -rf "${dir:?}"/*
  dd if=/dev/zero of="$dir/dd" bs=1M count="$mib" conv=fdatasync 2>&1 | tail -1 | sed "s/^/dd-fdatasync r$r /"
  rm -f "$dir/dd"
  dd if=/dev/zero of="$dir/dd" bs=1M count="$mib" 2>&1 | tail -1 | sed "s/^/dd-nosync r$r /"
  rm -f "$dir/dd"
done
