#!/usr/bin/env bash
# Device call: scripts/gpu-check.sh on every GPU of the lent machine, with nccl-tests
# built there from source (2.19.6) against the image's pip NCCL.
set -uo pipefail
exec > >(tee "$OUT/device.log") 2>&1
start=$SECONDS
nvidia-smi; nvidia-smi topo -m
site=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])')
ls "$site" "$site/lib" "$site/include" 2>&1 | head -20
export NCCL_BENCH_NCCL_LIB=$site/lib/libnccl.so.2
export LD_LIBRARY_PATH=$site/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p /tmp/ncclhome/lib
ln -sf "$site/include" /tmp/ncclhome/include
ln -sf "$site/lib/libnccl.so.2" /tmp/ncclhome/lib/libnccl.so
echo "== building nccl-tests"
make -s -C .dev/nccl-tests/src -j16 NCCL_HOME=/tmp/ncclhome BUILDDIR=/tmp/nt \
  NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >/tmp/nt-build.log 2>&1 || { tail -30 /tmp/nt-build.log; }
ls /tmp/nt
echo "== built at $((SECONDS - start)) s"
mkdir -p results/gpu-check
nvidia-smi topo -m > results/gpu-check/topo.txt
NCCL_BENCH=$PWD/.dev/nccl-bench timeout 420 scripts/gpu-check.sh --all-reduce-perf /tmp/nt/all_reduce_perf \
  --out results/gpu-check 2>&1 | tee results/gpu-check/gpu-check.log
echo "== gpu-check rc=${PIPESTATUS[0]} at $((SECONDS - start)) s"
echo "== an init log of this NCCL (all subsystems), for the SHM/cuMem facts"
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ALL NCCL_DEBUG_FILE=results/gpu-check/nccl-init-all.%h.%p.log \
  timeout 30 /tmp/nt/all_reduce_perf -g 1 -b 8 -e 1M -f 8 -n 5 -w 1 > results/gpu-check/init-all-stdout.txt 2>&1
echo "== done at $((SECONDS - start)) s"
find results/gpu-check -name '*.png' -delete
tar czf "$OUT/gpu-check.tgz" -C results gpu-check
ls -la "$OUT"
