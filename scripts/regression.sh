#!/usr/bin/env bash
# Regression gate for a nightly job: run a sweep (or take a run made elsewhere, e.g.
# by slurm-sweep.sbatch), compare it against a stored baseline run, and exit
# non-zero when a case got significantly slower or started failing.
#
# Usage:
#   scripts/regression.sh BASELINE_RUN [--candidate RUN_DIR] [--threshold PCT] [-- SWEEP_FLAGS...]
#
#   BASELINE_RUN   the reference run directory (keep one per cluster image)
#   --candidate    compare this existing run instead of sweeping now
#   --threshold    a change counts when its 95% CI lies beyond this (default: 2%)
#   SWEEP_FLAGS    flags for `nccl-bench sweep` (default: --gpus 8 --transports default)
#
# Environment: NCCL_BENCH (the binary, default: nccl-bench on PATH, else
# target/release/nccl-bench), OUT (where the new run goes, default: results).
# The comparison is also written as compare.md into the candidate run.
#
# Exit status: 0 no regression, 1 a regression (or a case failing now that passed
# in the baseline), 2 an error (no baseline, the sweep could not run).

set -uo pipefail

usage() {
    sed -n '2,20s/^# \{0,1\}//p' "$0" >&2
    exit 2
}

[[ $# -ge 1 && $1 != -* ]] || usage
baseline=$1
shift
candidate=""
threshold=2%
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
if [[ ! -f $baseline/manifest.json ]]; then
    echo "error: baseline $baseline is not a run directory (no manifest.json)" >&2
    exit 2
fi

if [[ -n $candidate && ! -f $candidate/manifest.json ]]; then
    echo "error: candidate $candidate is not a run directory (no manifest.json)" >&2
    exit 2
fi

if [[ -z $candidate ]]; then
    candidate=${OUT:-results}/$(date +%Y%m%d-%H%M%S)-regression
    "$bench" sweep --run-dir "$candidate" "${sweep_flags[@]}"
    status=$?
    # 1 means some case failed: still compared (failing now is a regression). 2 or
    # 130: there is nothing trustworthy to compare.
    if [[ $status -ne 0 && $status -ne 1 ]]; then
        echo "error: the sweep exited with status $status" >&2
        exit 2
    fi
fi

comparison=$("$bench" compare "$baseline" "$candidate" --threshold "$threshold" --format markdown)
status=$?
printf '%s\n' "$comparison"
if [[ $status -le 1 ]] && ! printf '%s\n' "$comparison" >"$candidate/compare.md"; then
    echo "error: cannot write $candidate/compare.md" >&2
    exit 2
fi
case $status in
    0) echo "regression.sh: no regression beyond $threshold ($candidate vs $baseline)" ;;
    1) echo "regression.sh: REGRESSION beyond $threshold ($candidate vs $baseline)" >&2 ;;
    *) echo "regression.sh: compare failed (status $status)" >&2 ;;
esac
exit "$status"
