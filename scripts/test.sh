#!/usr/bin/env bash
# The test suite: fetches a real libnccl (cached, see fetch-nccl.sh) so that the FFI
# tests run against NCCL itself, then runs every test.
# Usage: scripts/test.sh [cargo test arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
NCCL_BENCH_TEST_NCCL_LIB="$(scripts/fetch-nccl.sh)"
# The simulated GPUs (tests/gpu-sim): the NCCL backend end to end without a GPU.
NCCL_BENCH_TEST_SIM_DIR="$(scripts/build-gpu-sim.sh)"
export NCCL_BENCH_TEST_SIM_DIR
export NCCL_BENCH_TEST_NCCL_LIB
# Three tests at a time on two cores: most of them wait on their child processes
# (the timing-sensitive ones run alone, tests/it/common's lock). Measured on the 2-core
# machine, one commit, one build: the integration tests in 484 s against 543 s with two.
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-3}"
# The stand-in's own tests: its driver semantics against a real driver's answers.
cargo test --quiet -p gpu-sim
exec cargo test "$@"
