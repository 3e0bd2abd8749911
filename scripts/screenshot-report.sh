#!/usr/bin/env bash
# The first screen of a run's report.html as headless Chromium draws it, as a PNG.
# Usage: scripts/screenshot-report.sh RUN_DIR OUT.png [WIDTH,HEIGHT]   (default 1280,900)
# Needs Debian's chromium (apt-get install chromium). The page loads nothing from the
# network; Chromium's own background connections are switched off.
set -euo pipefail
if [[ $# -lt 2 ]]; then
    echo "usage: $0 RUN_DIR OUT.png [WIDTH,HEIGHT]" >&2
    exit 2
fi
page="$(cd "$1" && pwd)/report.html"
if [[ ! -f $page ]]; then
    echo "$page: no such file (nccl-bench report $1 writes it)" >&2
    exit 2
fi
out="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
size="${3:-1280,900}"
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --hide-scrollbars --user-data-dir="$profile" --window-size="$size" \
    --screenshot="$out" "file://$page" >/dev/null 2>&1
test -s "$out"
echo "$out"
