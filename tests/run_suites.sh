#!/usr/bin/env bash
# Runs Check suites, TEST_JOBS at once (default: the CPUs), for `make test`, `make asan`
# and `make tsan`. Each suite's output goes to LOGDIR/<suite>.log and is printed whole,
# headed by "== suite", when the suite ends, with its wall time; a summary line names
# the suites that failed. The suites make their own directories (mkdtemp), so two never
# share a file. TEST_JOBS=1 runs them one after the other, as before.
# usage: run_suites.sh VARIANT LOGDIR SUITE_BINARY...
set -u
variant=$1 logdir=$2
shift 2
jobs=${TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
case $jobs in '' | *[!0-9]* | 0) echo "run_suites: TEST_JOBS must be a positive number, not '$jobs'" >&2; exit 2 ;; esac
mkdir -p "$logdir" || exit 2
start=$(date +%s)
failed=()
declare -A pid_of_suite=() began=()

finish() { # suite rc
    local t=$1 rc=$2 name
    name=$(basename "$t")
    echo "== $t ($(( $(date +%s) - ${began[$t]} )) s$([ "$rc" = 0 ] || echo ", exit $rc"))"
    cat "$logdir/$name.log"
    [ "$rc" = 0 ] || failed+=("$name")
}

reap_one() { # waits for any running suite to end
    local t rc
    while :; do
        for t in "${!pid_of_suite[@]}"; do
            if ! kill -0 "${pid_of_suite[$t]}" 2>/dev/null; then
                wait "${pid_of_suite[$t]}"; rc=$?
                unset 'pid_of_suite[$t]'
                finish "$t" "$rc"
                return
            fi
        done
        sleep 0.2
    done
}

for t in "$@"; do
    while [ "${#pid_of_suite[@]}" -ge "$jobs" ]; do reap_one; done
    began[$t]=$(date +%s)
    "$t" >"$logdir/$(basename "$t").log" 2>&1 &
    pid_of_suite[$t]=$!
done
while [ "${#pid_of_suite[@]}" -gt 0 ]; do reap_one; done

took=$(( $(date +%s) - start ))
if [ "${#failed[@]}" = 0 ]; then
    echo "ALL SUITES PASSED ($variant, $# suites, $jobs at once, $took s)"
else
    # Again at the end, where a log's tail shows it: each failed suite's failed tests
    # (Check's "file:line:F|E:case:test" lines) and its last lines.
    for name in "${failed[@]}"; do
        echo "-- $name: failed tests"
        grep -E '^[^:]+:[0-9]+:[FE]:' "$logdir/$name.log" || echo "(no Check failure line: it died or hung)"
        echo "-- $name: last lines"
        tail -n 15 "$logdir/$name.log"
    done
    echo "SOME SUITES FAILED ($variant): ${failed[*]} ($took s)"
    exit 1
fi
