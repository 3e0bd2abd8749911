#!/usr/bin/env bash
# Measures the host backend's speed goals side by side in one run (release build):
# SHM busbw at 64 MiB vs single-core memcpy, TCP beside it, 8-byte p50 latency,
# harness bookkeeping per iteration, and orchestrator memory over 2,048 cases.
# Usage: scripts/bench-host.sh
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo bench --bench host_backend
