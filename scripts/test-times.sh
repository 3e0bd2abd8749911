#!/usr/bin/env bash
# Where the test suite's time goes: builds the tests as scripts/test.sh does (same
# libnccl, same simulated GPUs), then runs every test binary it builds with
# libtest's per-test timer and prints the build time, each binary's wall time and the
# slowest tests. The whole table of tests goes to target/test-times.tsv (seconds, binary,
# test), so two runs can be compared (before and after a change).
#
# Usage: scripts/test-times.sh [--top N] [TESTNAME-FILTER...]
#   --top N   how many of the slowest tests to print (default 15)
#   a filter is passed to every test binary, as `cargo test FILTER` would
# A test's time is its own: libtest's time less its wait for tests/it/common's lock
# (alone or shared; the waits go to target/test-times.waits.tsv, and the table says
# which tests ran alone). Each binary's time is its wall time. Exit status: 0, 1 a
# test failed, 2 usage.
#
# The per-test timer is libtest's `--report-time`, an unstable option: the test binaries
# (not the compiler) are run with RUSTC_BOOTSTRAP=1 to allow it, so nothing is rebuilt.
set -euo pipefail
cd "$(dirname "$0")/.."

top=15
filters=()
while [[ $# -gt 0 ]]; do
    case $1 in
        --top)
            top=${2:-}
            [[ $top =~ ^[1-9][0-9]*$ ]] || { echo "error: --top takes a number of tests, not '$top'" >&2; exit 2; }
            shift 2
            ;;
        -h | --help) sed -n '2,15s/^# \{0,1\}//p' "$0"; exit 0 ;;
        *) filters+=("$1"); shift ;;
    esac
done

NCCL_BENCH_TEST_NCCL_LIB="$(scripts/fetch-nccl.sh)"
NCCL_BENCH_TEST_SIM_DIR="$(scripts/build-gpu-sim.sh)"
export NCCL_BENCH_TEST_NCCL_LIB NCCL_BENCH_TEST_SIM_DIR

# Built as scripts/test.sh builds them (the crate, then the stand-in on its own: a
# --workspace build would unify their features and build everything anew).
start=$SECONDS
mkdir -p target
{
    cargo test --no-run --message-format=json &&
        cargo test -p gpu-sim --no-run --message-format=json
} 2>/dev/null >target/test-times.build.json || { cargo test --no-run; exit 1; }
build_s=$((SECONDS - start))
# Each test executable, a name for it (kind/target: test/it, lib/gpu_sim) and its
# package's folder.
mapfile -t exes < <(python3 -c '
import json, os, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("profile", {}).get("test") and m.get("executable"):
        print("%s\t%s/%s\t%s" % (m["executable"], m["target"]["kind"][0], m["target"]["name"], os.path.dirname(m["manifest_path"])))
' target/test-times.build.json)

tsv=target/test-times.tsv
: >"$tsv"
waits=target/test-times.waits.tsv
: >"$waits"
export NCCL_BENCH_TEST_LOCK_LOG="$PWD/$waits"
binaries=()
failed=0
for line in "${exes[@]}"; do
    IFS=$'\t' read -r exe name dir <<<"$line"
    log=target/test-times.${name//\//.}.log
    t0=$(date +%s.%N)
    # The package's own folder is the working directory, as under cargo test.
    if ! (cd "$dir" && RUSTC_BOOTSTRAP=1 "$exe" -Z unstable-options --report-time "${filters[@]}") >"$log" 2>&1; then
        failed=1
        echo "FAILED: $name (see $log)" >&2
    fi
    t1=$(date +%s.%N)
    binaries+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')	$name")
    # libtest's line: `test NAME ... ok <1.234s>`, less the test's wait for the lock.
    awk -v bin="$name" -F'\t' 'FILENAME == ARGV[1] { wait[$1] = $2; how[$1] = $3; next }
        {
            n = split($0, f, " ")
            if (f[1] != "test" || f[n - 2] != "..." || f[n] !~ /^<[0-9.]+s>$/) next
            t = f[n]; gsub(/[<s>]/, "", t)
            name = $0; sub(/^test /, "", name); sub(/ \.\.\. .*$/, "", name)
            own = t - wait[name]
            printf "%.3f\t%s\t%s%s\n", own, bin, name, how[name] == "alone" ? " (alone)" : ""
        }' "$waits" "$log" >>"$tsv"
done

echo "build (cargo test --no-run): ${build_s} s"
echo
echo "test binaries, slowest first (wall seconds):"
printf '%s\n' "${binaries[@]}" | sort -t$'\t' -k1,1 -rn | awk -F'\t' '{ printf "  %7.1f  %s\n", $1, $2; s += $1 } END { printf "  %7.1f  all\n", s }'
echo
echo "the $top slowest tests (seconds):"
sort -t$'\t' -k1,1 -rn "$tsv" | head -n "$top" | awk -F'\t' '{ printf "  %7.1f  %s  %s\n", $1, $2, $3 }'
echo
echo "every test's time: $tsv ($(wc -l <"$tsv") tests)"
exit $failed
