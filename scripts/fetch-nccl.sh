#!/usr/bin/env bash
# Fetches a real libnccl.so.2 from the nvidia-nccl-cu12 wheel (PyPI) into a cache and
# prints its path. The library loads without a GPU or CUDA, which makes nccl-bench's
# FFI testable anywhere. Downloads once per version (about 350 MB), then reuses it.
# Usage: scripts/fetch-nccl.sh [VERSION]      (default: the version the tests pin)
set -euo pipefail
version="${1:-2.32.3}"
cache="${NCCL_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nccl-bench}/nccl-${version}"
lib="$cache/nvidia/nccl/lib/libnccl.so.2"
if [ ! -f "$lib" ]; then
  mkdir -p "$cache"
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --python-version 3.11 -d "$tmp" "nvidia-nccl-cu12==${version}" >&2
  wheel="$(ls "$tmp"/nvidia_nccl_cu12-*.whl)"
  python3 - "$wheel" "$cache" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    z.extract("nvidia/nccl/lib/libnccl.so.2", sys.argv[2])
PY
fi
echo "$lib"
