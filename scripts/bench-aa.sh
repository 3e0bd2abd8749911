#!/usr/bin/env bash
# The decision model judged on things that are the same and on known differences,
# every rate counted per sweep with its exact 95 % bounds (benches/aa.rs): A/A
# configs, a config exactly at the threshold, a config 10 % slower, the SHM verdict
# on an A/A pair (simulated GPUs), and the nightly recipe (a baseline of 3 runs, then
# gate sweeps of identical runs and of slower ones).
# Usage: scripts/bench-aa.sh [--backend host|sim] [--repeats N] [--jitter S]
#                            [--largest 128M] [--nightly-slow PCT] [--keep DIR]
# --backend sim builds the simulated GPUs (scripts/build-gpu-sim.sh) and gives each
# process group its own speed (NCCL_BENCH_SIM_GROUP_JITTER, --jitter, default 0.01).
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
