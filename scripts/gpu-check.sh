#!/usr/bin/env bash
# The NCCL backend on a real GPU machine, end to end, on every GPU: doctor, a sweep
# of 2, 4, ... N ranks 8 B..MAXBYTES with `default`, `shm-off`, `p2p-off` (SHM and
# the network between GPUs) and `nvls-off` (NVLink SHARP where the GPUs have it;
# with one GPU, `default` and `shm-off`), the same with CUDA graphs, every collective
# nccl-tests measures (`--coll all`, `default`), and (when an nccl-tests
# all_reduce_perf is given) nccl-tests with the same sizes on N GPUs imported and
# compared case by case, our time next to its time: all_reduce_perf against the
# first sweep, and each other *_perf binary found beside it against the sweep of
# every collective. docs/guide/gpu-check.md says what to
# send back.
#
# Usage:
#   scripts/gpu-check.sh [--all-reduce-perf PATH] [--gpus N] [--maxbytes SIZE]
#                        [--out DIR] [--rounds N] [--simulated DIR]
#
# --gpus N: ranks of the largest case (default: every GPU nvidia-smi lists; 1 on
# the simulated GPUs).
# --rounds N: process groups per config (nccl-bench's --rounds; default its own).
#
# --simulated DIR runs the same checks on the simulated GPUs of nccl-bench's test
# stand-in (DIR from scripts/build-gpu-sim.sh): a test of nccl-bench, not of the
# machine; its rows must say nccl-sim. nccl-tests cannot run there.
#
# Environment: NCCL_BENCH (the binary, default target/release/nccl-bench, else
# nccl-bench on PATH); libnccl is found as by the sweep (--nccl-lib is not needed
# when NCCL_BENCH_NCCL_LIB is set).
#
# Exit status: 0 every check passed, 1 a check failed (the reason is printed), 2 usage.

set -uo pipefail

usage() {
    sed -n '2,29s/^# \{0,1\}//p' "$0" >&2
    exit 2
}

perf=""
sim=""
gpus=""
rounds=()
maxbytes=1G
out=results/gpu-check
while [[ $# -gt 0 ]]; do
    case $1 in
        --all-reduce-perf) perf=${2:-}; shift 2 || usage ;;
        --gpus) gpus=${2:-}; shift 2 || usage ;;
        --maxbytes) maxbytes=${2:-}; shift 2 || usage ;;
        --out) out=${2:-}; shift 2 || usage ;;
        --rounds) rounds=(--rounds "${2:-}"); shift 2 || usage ;;
        --simulated) sim=${2:-}; shift 2 || usage ;;
        -h | --help) usage ;;
        *) echo "error: unknown option $1" >&2; usage ;;
    esac
done

bin=${NCCL_BENCH:-}
if [[ -z $bin ]]; then
    if [[ -x target/release/nccl-bench ]]; then
        bin=target/release/nccl-bench
    else
        bin=$(command -v nccl-bench) || { echo "error: no nccl-bench binary (cargo build --release)" >&2; exit 2; }
    fi
fi
mkdir -p "$out" || exit 2

backend=nccl
if [[ -n $sim ]]; then
    [[ -f $sim/libnccl.so.2 ]] || { echo "error: $sim/libnccl.so.2 missing (scripts/build-gpu-sim.sh)" >&2; exit 2; }
    [[ -z $perf ]] || { echo "error: nccl-tests cannot run on the simulated GPUs" >&2; exit 2; }
    export LD_LIBRARY_PATH="$sim${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export NCCL_BENCH_NCCL_LIB=$sim/libnccl.so.2
    backend=nccl-sim
    echo "== simulated GPUs (test stand-in in $sim): this checks nccl-bench, it measures nothing"
fi

if [[ -z $gpus ]]; then
    gpus=1
    if [[ -z $sim ]] && command -v nvidia-smi >/dev/null; then
        gpus=$(nvidia-smi -L | grep -c '^GPU ') || gpus=1
    fi
fi
[[ $gpus =~ ^[1-9][0-9]*$ ]] || { echo "error: --gpus takes a number of GPUs, not '$gpus'" >&2; exit 2; }
if ((gpus >= 2)); then
    configs=default,shm-off,p2p-off,nvls-off
else
    configs=default,shm-off
fi

failures=0
fail() {
    echo "FAILED: $*" >&2
    failures=$((failures + 1))
}

# The newest run directory under $out whose name ends in $1.
run_dir() {
    find "$out" -mindepth 1 -maxdepth 1 -type d -name "*-$1" | sort | tail -n 1
}

# Every row of a run's results.csv is ok with no wrong element and the expected backend.
check_rows() {
    local csv=$1/results.csv
    [[ -f $csv ]] || { fail "$csv missing"; return; }
    awk -F, -v backend="$backend" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        $col["backend"] != backend || $col["status"] != "ok" || $col["wrong"] != 0 { bad++; print "  " $0 }
        END { exit bad > 0 }' "$csv" || fail "$csv has rows that are not ok (above)"
    local rows
    rows=$(($(wc -l <"$csv") - 1))
    echo "$csv: $rows cases"
}

echo "== doctor"
"$bin" doctor --gpus "$gpus" || echo "(doctor reported problems; going on)"

echo "== sweep: up to $gpus GPU(s), $configs, 8 B..$maxbytes, 20 iterations"
if "$bin" sweep --backend nccl --gpus "$gpus" -b 8 -e "$maxbytes" -n 20 -w 5 "${rounds[@]}" \
    --transports "$configs" --out "$out" --label plain --plain; then
    check_rows "$(run_dir plain)"
else
    fail "the sweep exited with $?"
fi

echo "== sweep: CUDA graphs of 20 all-reduces, 5 launches per size"
if "$bin" sweep --backend nccl --gpus "$gpus" -b 8 -e "$maxbytes" -n 100 -w 5 --graph 20 "${rounds[@]}" \
    --transports default --out "$out" --label graph --plain; then
    check_rows "$(run_dir graph)"
    "$bin" compare "$(run_dir plain)" "$(run_dir graph)" --threshold 5% || true
else
    fail "the graph sweep exited with $?"
fi

echo "== sweep: every collective (--coll all), default"
if "$bin" sweep --backend nccl --gpus "$gpus" --coll all -b 8 -e "$maxbytes" -n 20 -w 5 "${rounds[@]}" \
    --transports default --out "$out" --label coll --plain; then
    check_rows "$(run_dir coll)"
else
    fail "the sweep of every collective exited with $?"
fi

if [[ -n $perf ]]; then
    echo "== nccl-tests: $perf -g $gpus with the same sizes"
    text=$out/all_reduce_perf.txt
    if "$perf" -g "$gpus" -b 8 -e "$maxbytes" -f 2 -n 20 -w 5 -c 1 >"$text"; then
        cat "$text"
        imported=$out/nccl-tests-$(date +%Y%m%d-%H%M%S)
        if "$bin" import "$text" -o "$imported" --config default; then
            echo "== ours (candidate) against nccl-tests (base), per size"
            "$bin" compare "$imported" "$(run_dir plain)" --threshold 5% || true
        else
            fail "import of $text"
        fi
    else
        fail "$perf exited with $?"
    fi
fi

if [[ -n $perf ]]; then
    for coll in all_gather reduce_scatter broadcast reduce alltoall sendrecv gather scatter; do
        other=$(dirname "$perf")/${coll}_perf
        [[ -x $other ]] || { echo "(no $other: $coll not compared with nccl-tests)"; continue; }
        echo "== nccl-tests: $other -g $gpus with the same sizes"
        text=$out/${coll}_perf.txt
        if "$other" -g "$gpus" -b 8 -e "$maxbytes" -f 2 -n 20 -w 5 -c 1 >"$text"; then
            imported=$out/nccl-tests-$coll-$(date +%Y%m%d-%H%M%S)
            if "$bin" import "$text" -o "$imported" --config default >/dev/null; then
                echo "== $coll: ours (candidate) against nccl-tests (base), per size"
                "$bin" compare "$imported" "$(run_dir coll)" --threshold 5% || true
            else
                fail "import of $text"
            fi
        else
            fail "$other exited with $?"
        fi
    done
fi

if ((failures > 0)); then
    echo "gpu-check: $failures check(s) failed" >&2
    exit 1
fi
echo "gpu-check: all checks passed"
