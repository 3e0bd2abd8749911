#!/usr/bin/env bash
# Measures by repetition whether the host backend falls into millisecond stalls
# (release build): 20 consecutive 2-rank 8-byte cases, and 10 repeats of the 64 MiB
# SHM busbw against single-core memcpy, on a quiet machine and beside a CPU-bound
# thread. Usage: scripts/bench-host-stalls.sh
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo bench --bench host_stalls
