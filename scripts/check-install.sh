#!/usr/bin/env bash
# Checks the ways README gives to install nccl-bench, from this checkout, each into a
# place of its own: `cargo install --path .`, `cargo install --git` (this repository's
# committed HEAD, as from its remote), and a wheel built with maturin installed with pip
# into a fresh virtual environment. Each installed binary must print its version and run
# a small host-backend sweep to the end. Needs cargo, git and python3 with venv; fetches
# maturin from PyPI. The builds share one target directory.
#   scripts/check-install.sh            all three
#   scripts/check-install.sh --cargo    only the two cargo installs
#   scripts/check-install.sh --wheel    only the wheel
set -euo pipefail
cd "$(dirname "$0")/.."

what=${1:-all}
case "$what" in
  all | --cargo | --wheel) ;;
  *) echo "usage: $0 [--cargo | --wheel]" >&2; exit 2 ;;
esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CARGO_TARGET_DIR="$PWD/target/install-check"

# A small host sweep with the installed binary: two configs, 2 ranks, a few sizes.
try() {
  local bin=$1 out=$2
  "$bin" --version
  "$bin" sweep --backend host --gpus 2 -b 8 -e 64K -f 32 -n 5 --rounds 1 \
    --transports default,shm-off --plain --out "$out" > "$out.log"
  grep -q "sweep finished: 6 of 6 cases (6 ok)" "$out.log" || { cat "$out.log"; exit 1; }
  sed -n '/^answer: /,$p' "$out.log" | sed 's/^/  /'
}

if [ "$what" != --wheel ]; then
  echo "== cargo install --path ."
  cargo install --quiet --locked --path . --root "$work/cargo"
  try "$work/cargo/bin/nccl-bench" "$work/runs-cargo"
  echo "== cargo install --git (this repository's HEAD)"
  cargo install --quiet --locked --git "file://$PWD" --rev "$(git rev-parse HEAD)" \
    --root "$work/git" nccl-bench
  try "$work/git/bin/nccl-bench" "$work/runs-git"
fi

if [ "$what" != --cargo ]; then
  echo "== a wheel (maturin), pip-installed into a fresh virtual environment"
  python3 -m venv "$work/build"
  "$work/build/bin/pip" install --quiet --disable-pip-version-check 'maturin>=1.5,<2'
  "$work/build/bin/maturin" build --quiet --release --locked --out "$work/wheels"
  python3 -m venv "$work/env"
  "$work/env/bin/pip" install --quiet --disable-pip-version-check "$work"/wheels/nccl_bench-*.whl
  # Not activated: the binary is where pip puts scripts.
  try "$work/env/bin/nccl-bench" "$work/runs-wheel"
  # NCCL where `pip install nvidia-nccl-cu12` puts it in that environment (the real
  # library scripts/fetch-nccl.sh unpacked from that wheel, when it is here): the
  # binary finds it on its own, the environment still not activated.
  nccl=$(find "$HOME/.cache/nccl-bench" -path '*nvidia/nccl/lib/libnccl.so.2' 2>/dev/null | head -n 1)
  if [ -n "$nccl" ]; then
    site=$(echo "$work"/env/lib/python3*/site-packages)
    cp -r "${nccl%/nccl/lib/libnccl.so.2}" "$site/"
    env -u NCCL_BENCH_NCCL_LIB "$work/env/bin/nccl-bench" doctor > "$work/doctor.txt" || true
    # The report wraps at 100 columns: its lines joined again, a check per line.
    joined=$(sed -e ':a' -e 'N' -e '$!ba' -e 's/\n        / /g' "$work/doctor.txt")
    grep -q "OK    libnccl .* at $site/nvidia/nccl/lib/libnccl.so.2" <<<"$joined" ||
      { cat "$work/doctor.txt"; exit 1; }
    echo "  $(grep "libnccl" <<<"$joined" | head -n 1)"
  else
    echo "  (no libnccl in ~/.cache/nccl-bench from scripts/fetch-nccl.sh: finding NCCL beside the wheel not checked)"
  fi
fi
echo "install check passed"
