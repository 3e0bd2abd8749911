#!/usr/bin/env bash
# Multi-node all-reduce sweep under mpirun (Open MPI or MPICH/Hydra): one
# `mpirun ... nccl-bench run` per transport config of a TOML file, every config
# appended to one run directory, then `nccl-bench report`.
#
# Usage:
#   scripts/mpirun-sweep.sh -np N [-H HOST:SLOTS,...|--hostfile FILE] [--config CONFIG.toml]
#                           [--run-dir DIR] [-- RUN_FLAGS...]
#
#   -np N          ranks in all (one per GPU)
#   -H, --hostfile passed to mpirun (Open MPI syntax); the first host is rank 0's
#                  (MASTER_ADDR); with MPICH/Hydra use --hostfile
#   --config       transport configs to sweep (default: configs/shm-decision.toml)
#   --run-dir      the run directory (default: results/<date>-mpirun)
#   RUN_FLAGS      passed to every `nccl-bench run` (default: -b 8 -e 1G)
#
# Environment: NCCL_BENCH (the binary, default: nccl-bench on PATH, else
# target/release/nccl-bench), MPIRUN (the launcher, default: mpirun; it may carry
# flags: "mpirun --allow-run-as-root"), MPIRUN_ARGS (more launcher flags, e.g.
# "--mca btl tcp,self"; both are split at spaces), MASTER_ADDR (default: the first
# host, else this one), MASTER_PORT (default: 29517).
#
# Exit status: 0 every case ok, 1 a case failed, 2 an error.

set -uo pipefail

usage() {
    # The comment block at the top of this file, without its '# '.
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
    exit 2
}

np=""
hosts=()
first_host=""
config=configs/shm-decision.toml
run_dir=results/$(date +%Y%m%d-%H%M%S)-mpirun
while [[ $# -gt 0 ]]; do
    case $1 in
        -np | -n) np=${2:-}; shift 2 || usage ;;
        -H | --host)
            hosts=(-H "${2:-}")
            first_host=${2:-}
            first_host=${first_host%%[:,]*}
            shift 2 || usage
            ;;
        --hostfile)
            hosts=(--hostfile "${2:-}")
            first_host=$(awk '!/^[[:space:]]*(#|$)/ { print $1; exit }' "${2:-/dev/null}")
            first_host=${first_host%%:*}
            shift 2 || usage
            ;;
        --config) config=${2:-}; shift 2 || usage ;;
        --run-dir) run_dir=${2:-}; shift 2 || usage ;;
        --) shift; break ;;
        -h | --help) usage ;;
        *) echo "error: unknown option $1" >&2; usage ;;
    esac
done
[[ $np =~ ^[1-9][0-9]*$ ]] || { echo "error: -np N is required" >&2; usage; }
# Rank 0 may start on another host, in the same directory of a shared file system.
case $run_dir in
    /*) ;;
    *) run_dir=$PWD/$run_dir ;;
esac
run_flags=("$@")
if [[ ${#run_flags[@]} -eq 0 ]]; then
    run_flags=(-b 8 -e 1G)
fi

bench=${NCCL_BENCH:-}
if [[ -z $bench ]]; then
    if command -v nccl-bench >/dev/null 2>&1; then
        bench=$(command -v nccl-bench)
    else
        bench=$PWD/target/release/nccl-bench
    fi
fi
read -r -a mpirun <<<"${MPIRUN:-mpirun}"
read -r -a mpirun_args <<<"${MPIRUN_ARGS:-}"
if [[ ${#mpirun[@]} -eq 0 ]]; then
    mpirun=(mpirun)
fi
export MASTER_ADDR=${MASTER_ADDR:-${first_host:-$(hostname)}}
export MASTER_PORT=${MASTER_PORT:-29517}

# Open MPI exports variables with -x NAME, MPICH/Hydra with -genv NAME VALUE.
if "${mpirun[0]}" --version 2>&1 | grep -qi "open mpi\|open-mpi\|openrte"; then
    export_env=(-x MASTER_ADDR -x MASTER_PORT)
else
    export_env=(-genv MASTER_ADDR "$MASTER_ADDR" -genv MASTER_PORT "$MASTER_PORT")
fi

if ! configs=$("$bench" configs --config "$config" --names); then
    exit 2
fi

worst=0
for name in $configs; do
    echo "== config $name -> $run_dir"
    "${mpirun[@]}" ${mpirun_args[@]+"${mpirun_args[@]}"} -np "$np" ${hosts[@]+"${hosts[@]}"} "${export_env[@]}" \
        "$bench" run --config "$config" --transports "$name" --run-dir "$run_dir" \
        --plain "${run_flags[@]}"
    status=$?
    # Anything but nccl-bench's own 0/1/2 (a launcher killing the job) is an error.
    if [[ $status -gt 2 ]]; then
        status=2
    fi
    if [[ $status -gt $worst ]]; then
        worst=$status
    fi
done
if [[ -d $run_dir ]]; then
    "$bench" report "$run_dir"
fi
exit "$worst"
