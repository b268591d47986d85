#!/bin/sh
# soak.sh — the long versions of the reliability runs in one command (issue 9), run by
# `make soak` from the repository root; never part of `make test` or .ci/run.
#
# Phases, in this order (SOAK_PHASES picks some, comma-separated):
#   crash      tests/check_crash with SOAK_CRASH_ROUNDS SIGKILL rounds
#   powerloss  tests/check_powerloss with SOAK_POWERLOSS_ROUNDS simulated power losses
#              (a third per sync policy) and its chosen crash states
#   model      the model-based API test: tests/check_model (the sequential case) for
#              SOAK_MODEL_ROUNDS seeds of SOAK_MODEL_STEPS steps each, then
#              tests/check_model_threaded (the threaded case) for as many seeds with
#              SOAK_MODEL_STEPS / 4 writer steps
#   fuzz       every libFuzzer target of tests/fuzz/ for SOAK_FUZZ_SECONDS each
#              (FUZZ_JOBS at once), through tests/fuzz/run.sh
#   tsan       the concurrency suites (SOAK_TSAN_SUITES, and check_index_threads)
#              under ThreadSanitizer, SOAK_TSAN_REPEAT times over
# Each phase builds what it needs, writes its whole output to build/soak/<phase>.log
# (the model phase: model.log and model_threaded.log, one per suite),
# prints a progress line as it starts and ends, and the run ends with one summary:
# rounds, executions and runs, and failures. Seeds are in the logs (each suite prints
# its own; VLOG_TEST_SEED replays one). Exit 0 only when every phase ran with 0
# failures. Every phase runs even after one fails, so that one command reports all.
set -u

MAKE=${MAKE:-make}
PHASES=${SOAK_PHASES:-crash,powerloss,model,fuzz,tsan}
MODEL_STEPS=${SOAK_MODEL_STEPS:-100000}
MODEL_ROUNDS=${SOAK_MODEL_ROUNDS:-3}
CRASH_ROUNDS=${SOAK_CRASH_ROUNDS:-10000}
PL_ROUNDS=${SOAK_POWERLOSS_ROUNDS:-6000}
FUZZ_SECS=${SOAK_FUZZ_SECONDS:-300}
TSAN_REPEAT=${SOAK_TSAN_REPEAT:-5}
TSAN_SUITES=${SOAK_TSAN_SUITES:-check_cache,check_concurrency,check_write,check_read,check_mmap_basic,check_mmap_policy,check_gc,check_lifecycle,check_model,check_model_threaded}
LOGS=build/soak

for n in "$CRASH_ROUNDS" "$PL_ROUNDS" "$FUZZ_SECS" "$TSAN_REPEAT" "$MODEL_STEPS" "$MODEL_ROUNDS"; do
    case $n in '' | *[!0-9]*) echo "soak: '$n' is not a whole number (SOAK_*_ROUNDS, SOAK_FUZZ_SECONDS, SOAK_TSAN_REPEAT, SOAK_MODEL_STEPS)" >&2; exit 2 ;; esac
done
for p in $(echo "$PHASES" | tr ',' ' '); do
    case $p in crash | powerloss | model | fuzz | tsan) ;; *) echo "soak: unknown phase '$p' (crash, powerloss, model, fuzz, tsan)" >&2; exit 2 ;; esac
done
mkdir -p "$LOGS"
start=$(date +%s)
failures=0
summary=""

wants() { case ",$PHASES," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
elapsed() { s=$(($(date +%s) - start)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }
say() { echo "soak [$(elapsed)] $*"; }
note() { summary="$summary$*
"; }
# " (see LOG)" after a failed phase's line, nothing after a clean one.
see() { [ "$1" = 0 ] || printf ' (see %s)' "$2"; }
# Builds a Check suite (LOG BINARY), then runs it with the VAR=VALUE arguments that
# follow; sets f to its failed tests (the sum of Check's "Failures: F, Errors: E"), at
# least 1 when the build or the run failed.
run_check() {
    log=$1 bin=$2
    shift 2
    if $MAKE --no-print-directory "$bin" >"$log" 2>&1; then
        env "$@" "$bin" >>"$log" 2>&1
        rc=$?
    else
        rc=1
    fi
    f=$(sed -n 's/.*Failures: \([0-9]*\), Errors: \([0-9]*\).*/\1 \2/p' "$log" | awk '{n += $1 + $2} END {print n + 0}')
    [ "$rc" = 0 ] || [ "$f" -gt 0 ] || f=1
}

if wants crash; then
    log=$LOGS/crash.log
    say "crash: building, then $CRASH_ROUNDS SIGKILL rounds (log: $log)"
    # Check's per-case timeout (3600 s) is scaled to the rounds asked for.
    run_check "$log" build/release/tests/check_crash VLOG_CRASH_ROUNDS="$CRASH_ROUNDS" \
        CK_TIMEOUT_MULTIPLIER=$((CRASH_ROUNDS / 20000 + 1))
    done_rounds=$(sed -n 's/^crash test: \([0-9]*\) rounds.*/\1/p' "$log" | tail -n 1)
    failures=$((failures + f))
    say "crash: ${done_rounds:-0} of $CRASH_ROUNDS rounds, $f failed"
    note "crash test       ${done_rounds:-0} rounds, $f failed$(see "$f" "$log")"
fi

if wants powerloss; then
    log=$LOGS/powerloss.log
    say "powerloss: building, then $PL_ROUNDS rounds over 3 sync policies and the chosen states (log: $log)"
    run_check "$log" build/release/tests/check_powerloss VLOG_POWERLOSS_ROUNDS="$PL_ROUNDS" \
        CK_TIMEOUT_MULTIPLIER=$((PL_ROUNDS / 60000 + 1))
    # One totals line per policy: "power-loss NAME: R rounds, I crash images (...), F failures; ..."
    totals=$(sed -n 's/^power-loss [^:]*: \([0-9]*\) rounds, \([0-9]*\) crash images.*/\1 \2/p' "$log" |
        awk '{r += $1; i += $2} END {print r + 0, i + 0}')
    done_rounds=${totals% *}
    images=${totals#* }
    failures=$((failures + f))
    say "powerloss: $done_rounds rounds, $images crash images, $f failed"
    note "power-loss       $done_rounds rounds, $images crash images, $f failed$(see "$f" "$log")"
fi

if wants model; then
    log=$LOGS/model.log
    tlog=$LOGS/model_threaded.log
    say "model: building, then $MODEL_ROUNDS seeds x $MODEL_STEPS steps, and the threaded case (logs: $log, $tlog)"
    # Check's per-case timeout (600 s) is scaled to the steps asked for (about 2500 a second).
    run_check "$log" build/release/tests/check_model VLOG_MODEL_STEPS="$MODEL_STEPS" \
        VLOG_MODEL_ROUNDS="$MODEL_ROUNDS" CK_TIMEOUT_MULTIPLIER=$((MODEL_STEPS * MODEL_ROUNDS / 300000 + 1))
    mf=$f
    seeds=$(grep -c '^model seed' "$log")
    mlog=$log
    run_check "$tlog" build/release/tests/check_model_threaded VLOG_MODEL_TSTEPS=$((MODEL_STEPS / 4)) \
        VLOG_MODEL_ROUNDS="$MODEL_ROUNDS" CK_TIMEOUT_MULTIPLIER=$((MODEL_STEPS * MODEL_ROUNDS / 300000 + 1))
    f=$((mf + f))
    seeds=$((seeds + $(grep -c '^threaded model seed' "$tlog")))
    failures=$((failures + f))
    say "model: $seeds seed runs done, $f failed"
    note "model test       $seeds seed runs ($MODEL_ROUNDS x $MODEL_STEPS steps, sequential and threaded), $f failed$(see "$f" "$mlog, $tlog")"
fi

if wants fuzz; then
    log=$LOGS/fuzz.log
    say "fuzz: building the targets, then ${FUZZ_SECS}s each, ${FUZZ_JOBS:-2} at once (log: $log)"
    if $MAKE --no-print-directory fuzz-deps >"$log" 2>&1 &&
        $MAKE --no-print-directory -j"${FUZZ_JOBS:-2}" fuzz-build >>"$log" 2>&1; then
        bins=${SOAK_FUZZ_BINS:-$(ls build/fuzz/fuzz_* 2>/dev/null | grep -v '\.o$')}
        FUZZ_JOBS=${FUZZ_JOBS:-2} tests/fuzz/run.sh "$FUZZ_SECS" $bins >>"$log" 2>&1
        rc=$?
    else
        rc=1
        bins=""
    fi
    execs=$(sed -n 's/^fuzz: \([0-9]*\) executions in all.*/\1/p' "$log" | tail -n 1)
    ntargets=$(echo "$bins" | wc -w)
    f=$(grep -c ' FAILED (exit' "$log")
    [ "$rc" = 0 ] || [ "$f" -gt 0 ] || f=1
    failures=$((failures + f))
    grep -E ' executions in |FAILED' "$log" | sed 's/^/soak   /'
    say "fuzz: ${execs:-0} executions over $ntargets targets, $f failed"
    note "fuzz             ${execs:-0} executions over $ntargets targets x ${FUZZ_SECS}s, $f failed$(see "$f" "$log; reproducers in build/fuzz/artifacts/")"
fi

if wants tsan; then
    log=$LOGS/tsan.log
    bins=""
    for s in $(echo "$TSAN_SUITES" | tr ',' ' '); do bins="$bins build/tsan/tests/$s"; done
    say "tsan: building, then $TSAN_REPEAT runs of $(echo "$TSAN_SUITES" | tr ',' ' ') and check_index_threads (log: $log)"
    runs=0
    f=0
    if $MAKE --no-print-directory VARIANT=tsan OPT=-O1 SAN=-fsanitize=thread all $bins build/tsan/tests/check_index_threads \
        >"$log" 2>&1; then
        i=1
        while [ "$i" -le "$TSAN_REPEAT" ]; do
            rf=0
            for b in $bins; do
                echo "== run $i: $b" >>"$log"
                VLOG_TEST_BIN=build/tsan/bin "$b" >>"$log" 2>&1 || rf=$((rf + 1))
                runs=$((runs + 1))
            done
            echo "== run $i: check_index_threads" >>"$log"
            build/tsan/tests/check_index_threads >>"$log" 2>&1 || rf=$((rf + 1))
            runs=$((runs + 1))
            f=$((f + rf))
            say "tsan: run $i of $TSAN_REPEAT, $rf suites failed"
            i=$((i + 1))
        done
    else
        f=1
    fi
    races=$(grep -c 'WARNING: ThreadSanitizer' "$log")
    failures=$((failures + f))
    note "tsan             $runs suite runs ($TSAN_REPEAT rounds), $f failed, $races race reports$(see "$f" "$log")"
fi

echo
echo "soak summary ($(elapsed)):"
printf '%s' "$summary" | sed 's/^/  /'
if [ "$failures" = 0 ]; then
    echo "soak: 0 failures"
    exit 0
fi
echo "soak: $failures FAILURES"
exit 1
