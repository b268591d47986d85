#!/bin/sh
# run.sh SECONDS TARGET_BINARY... — runs each libFuzzer target for SECONDS over a
# temporary copy of its seed corpus (tests/fuzz/corpus/<target>/), so that the inputs
# a run finds never land in the repository. FUZZ_JOBS targets run at once (default 1).
# Crash reproducers go to build/fuzz/artifacts/<target>/ (replay one with
# `build/fuzz/<target> FILE`). Prints the executions per target; exits 1 if any
# target crashed, leaked, timed out or failed a check. Extra libFuzzer flags:
# FUZZ_ARGS="-max_len=65536 ...". Used by `make fuzz` and `make fuzz-ci`; run from
# the repository root.
set -u
art=build/fuzz/artifacts

if [ "${1:-}" = "--one" ]; then
    # One target: run.sh --one SECONDS WORKDIR BINARY; writes WORKDIR/<target>.{log,line,rc}.
    secs=$2 work=$3 bin=$4
    t=$(basename "$bin")
    mkdir -p "$work/$t" "$art/$t"
    if [ -d "tests/fuzz/corpus/$t" ]; then cp tests/fuzz/corpus/"$t"/* "$work/$t/" 2>/dev/null; fi
    seeds=$(ls "$work/$t" | wc -l)
    log="$work/$t.log"
    # A slow target (a trace_open costs milliseconds of ASan page faults) would take
    # minutes to grow its inputs past the seeds' length: allow the full length at once.
    case $t in fuzz_trace) grow=-len_control=0 ;; *) grow= ;; esac
    # shellcheck disable=SC2086
    "$bin" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 $grow \
        -artifact_prefix="$art/$t/" ${FUZZ_ARGS:-} "$work/$t" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
    corpus=$(ls "$work/$t" | wc -l)
    echo "${execs:-0}" >"$work/$t.execs"
    echo "$rc" >"$work/$t.rc"
    if [ "$rc" -eq 0 ]; then
        printf '%-14s %10s executions in %ss (%s/s), %s, corpus %s -> %s inputs: ok\n' \
            "$t" "${execs:-?}" "$secs" "${rate:-?}" "${cov:-cov: ?}" "$seeds" "$corpus" >"$work/$t.line"
    else
        {
            printf '%-14s FAILED (exit %d) after %s executions; the report:\n' "$t" "$rc" "${execs:-?}"
            grep -v '^#[0-9]' "$log" | tail -n 60 | sed 's/^/    /'
            crash=$(ls -t "$art/$t" 2>/dev/null | head -n 1)
            [ -n "$crash" ] && printf '    reproducer: %s/%s (replay: %s %s/%s)\n' "$art/$t" "$crash" "$bin" "$art/$t" "$crash"
        } >"$work/$t.line"
    fi
    exit 0
fi

secs=$1
shift
work=$(mktemp -d "${TMPDIR:-/tmp}/vlog-fuzz-run.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
printf '%s\n' "$@" | xargs -P "${FUZZ_JOBS:-1}" -n 1 "$0" --one "$secs" "$work"
fail=0
total=0
for bin in "$@"; do
    t=$(basename "$bin")
    cat "$work/$t.line" 2>/dev/null || { echo "$t: did not run"; fail=1; continue; }
    [ "$(cat "$work/$t.rc")" = 0 ] || fail=1
    total=$((total + $(cat "$work/$t.execs")))
done
printf 'fuzz: %s executions in all, %s\n' "$total" "$([ $fail = 0 ] && echo 'no crash' || echo 'CRASHES FOUND')"
exit $fail
