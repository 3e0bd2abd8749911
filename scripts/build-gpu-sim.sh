#!/usr/bin/env bash
# Builds the simulated-GPU test stand-in (tests/gpu-sim: libcuda, libnccl and NVML
# in one library) and prints the directory holding its libcuda.so, libcuda.so.1,
# libnccl.so.2 and libnvidia-ml.so.1. Nothing is installed: tests put this
# directory first on LD_LIBRARY_PATH (where NVML is found too) and pass its
# libnccl.so.2 with --nccl-lib. Runs on it are simulated, never measurements.
# Usage: scripts/build-gpu-sim.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet -p gpu-sim
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
dir="$target_dir/gpu-sim"
mkdir -p "$dir"
for name in libcuda.so libcuda.so.1 libnccl.so.2 libnvidia-ml.so.1; do
  ln -sf ../debug/libgpu_sim.so "$dir/$name"
done
echo "$dir"
