#!/usr/bin/env bash
# The statistics on things that are the same, and on a known difference, side by
# side for each --rounds setting (default: 1 and the sweep's own): A/A configs and
# consecutive identical runs (cases flagged, compares exiting 1, history steps and
# one-offs), a config 10 % slower (found at 64 KiB and above), a config 1 % slower
# (equivalent within 2 %) and, on the simulated GPUs, the SHM verdict on an A/A pair,
# each rate with its exact 95 % bounds, against the goals.
# Usage: scripts/bench-aa.sh [--backend host|sim] [--repeats N] [--rounds 1,default]
#                            [--jitter S] [--largest 128M] [--keep DIR]
# --backend sim builds the simulated GPUs (scripts/build-gpu-sim.sh) and gives each
# process group its own speed (NCCL_BENCH_SIM_GROUP_JITTER, --jitter, default 0.03).
set -euo pipefail
cd "$(dirname "$0")/.."
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    if [[ ${args[i]} == --backend && ${args[i + 1]:-} == sim ]]; then
        args+=(--sim-dir "$(scripts/build-gpu-sim.sh)")
        break
    fi
done
exec cargo bench --bench aa -- "${args[@]}"
