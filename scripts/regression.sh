#!/usr/bin/env bash
# Regression gate for a nightly job: run a sweep (or take a run made elsewhere, e.g.
# by slurm-sweep.sbatch), check it against a stored baseline, and exit non-zero
# when a case got slower, went missing or started failing, or could not be told.
#
# Usage:
#   scripts/regression.sh BASELINE [--candidate RUN_DIR] [--threshold PCT] [-- SWEEP_FLAGS...]
#
#   BASELINE       a baseline file from `nccl-bench baseline` (the per-case gate:
#                  the sweep measures until `check` can decide every case; keep one
#                  baseline per cluster image), or a reference run directory (the
#                  two-run gate, `nccl-bench compare`)
#   --candidate    check this existing run instead of sweeping now
#   --threshold    a case fails when its interval lies wholly beyond this
#                  (default: 5% for a baseline file, 2% for a run)
#   SWEEP_FLAGS    flags for `nccl-bench sweep` (default: --gpus 8 --transports default)
#
# Environment: NCCL_BENCH (the binary, default: nccl-bench on PATH, else
# target/release/nccl-bench), OUT (where the new run goes, default: results).
# Against a baseline file the result is also written into the candidate run as
# check.md and check.xml (JUnit, one test per case, for the CI's test view);
# against a run, as compare.md.
#
# Exit status: 0 no regression, 1 a regression (or a case missing or failing now
# that the baseline has), 3 not settled (against a baseline file: more rounds, or
# a wider threshold, would tell), 2 an error (no baseline, the sweep could not run).

set -uo pipefail

usage() {
    sed -n '2,26s/^# \{0,1\}//p' "$0" >&2
    exit 2
}

[[ $# -ge 1 && $1 != -* ]] || usage
baseline=$1
shift
candidate=""
threshold=
while [[ $# -gt 0 ]]; do
    case $1 in
        --candidate) candidate=${2:-}; shift 2 || usage ;;
        --threshold) threshold=${2:-}; shift 2 || usage ;;
        --) shift; break ;;
        -h | --help) usage ;;
        *) echo "error: unknown option $1" >&2; usage ;;
    esac
done
sweep_flags=("$@")
if [[ ${#sweep_flags[@]} -eq 0 ]]; then
    sweep_flags=(--gpus 8 --transports default)
fi

bench=${NCCL_BENCH:-}
if [[ -z $bench ]]; then
    if command -v nccl-bench >/dev/null 2>&1; then
        bench=nccl-bench
    else
        bench=$PWD/target/release/nccl-bench
    fi
fi
if [[ -f $baseline ]]; then
    gate=check
    threshold=${threshold:-5%}
elif [[ -f $baseline/manifest.json ]]; then
    gate=compare
    threshold=${threshold:-2%}
else
    echo "error: baseline $baseline is neither a baseline file nor a run directory (no manifest.json)" >&2
    exit 2
fi

if [[ -n $candidate && ! -f $candidate/manifest.json ]]; then
    echo "error: candidate $candidate is not a run directory (no manifest.json)" >&2
    exit 2
fi

swept=
if [[ -z $candidate ]]; then
    candidate=${OUT:-results}/$(date +%Y%m%d-%H%M%S)-regression
    gate_flags=()
    if [[ $gate == check ]]; then
        # The sweep measures each group until the gate can decide it, then checks
        # the run itself (check.md, check.xml): its exit status is the gate's.
        gate_flags=(--baseline "$baseline" --baseline-threshold "$threshold")
        swept=yes
    fi
    "$bench" sweep --run-dir "$candidate" "${gate_flags[@]}" "${sweep_flags[@]}"
    status=$?
    # 1 means some case failed (or the gate failed), 3 that the gate could not
    # tell: still compared. 2 or 130: there is nothing trustworthy to compare.
    if [[ $status -ne 0 && $status -ne 1 && $status -ne 3 ]]; then
        echo "error: the sweep exited with status $status" >&2
        exit 2
    fi
fi

if [[ $gate == check ]]; then
    result=$("$bench" check "$candidate" --baseline "$baseline" --threshold "$threshold" --format markdown)
    status=$?
    report=check.md
    if [[ $status -le 1 || $status -eq 3 ]] && [[ -z $swept ]]; then
        "$bench" check "$candidate" --baseline "$baseline" --threshold "$threshold" \
            --format junit -o "$candidate/check.xml" || [[ $? -eq 1 || $? -eq 3 ]] || exit 2
    fi
else
    result=$("$bench" compare "$baseline" "$candidate" --threshold "$threshold" --format markdown)
    status=$?
    report=compare.md
fi
printf '%s\n' "$result"
if [[ $status -le 1 || $status -eq 3 ]] && [[ -z $swept ]] && ! printf '%s\n' "$result" >"$candidate/$report"; then
    echo "error: cannot write $candidate/$report" >&2
    exit 2
fi
case $status in
    0) echo "regression.sh: no regression beyond $threshold ($candidate vs $baseline)" ;;
    1) echo "regression.sh: REGRESSION beyond $threshold ($candidate vs $baseline)" >&2 ;;
    3) echo "regression.sh: NOT SETTLED at $threshold: more rounds, or a wider threshold, would tell ($candidate vs $baseline)" >&2 ;;
    *) echo "regression.sh: $gate failed (status $status)" >&2 ;;
esac
exit "$status"
