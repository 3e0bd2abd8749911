#!/usr/bin/env bash
# Device call 2: every collective on the real NCCL of the image (1 GPU), plain and
# with CUDA graphs, each against nccl-tests' own binary with the same sizes.
set -uo pipefail
exec > >(tee "$OUT/device2.log") 2>&1
start=$SECONDS
site=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])')
export NCCL_BENCH_NCCL_LIB=$site/lib/libnccl.so.2
export LD_LIBRARY_PATH=$site/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
bin=$PWD/.dev/nccl-bench
tar xzf .dev/nt-bin.tgz -C /tmp
out=/tmp/coll; mkdir -p $out
run_dir() { find "$out" -mindepth 1 -maxdepth 1 -type d -name "*-$1" | sort | tail -n 1; }
echo "== sweep --coll all, 1 GPU, 8 B..256M"
timeout 200 $bin sweep --backend nccl --gpus 1 --coll all -b 8 -e 256M -n 20 -w 5 --rounds 1 \
  --transports default --out $out --label plain --plain
echo "== rc=$? at $((SECONDS - start)) s"
echo "== graphs of 20"
timeout 120 $bin sweep --backend nccl --gpus 1 --coll all -b 8 -e 256M -n 100 -w 5 --graph 20 --rounds 1 \
  --transports default --out $out --label graph --plain | tail -40
echo "== rc=$? at $((SECONDS - start)) s"
echo "== events every 20, as nccl-tests times"
NCCL_BENCH_EVENTS_EVERY=20 timeout 90 $bin sweep --backend nccl --gpus 1 --coll all_reduce,alltoall -b 8 -e 256M -n 20 -w 5 --rounds 1 \
  --transports default --out $out --label every20 --plain | tail -5
echo "== rc=$? at $((SECONDS - start)) s"
for c in all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv gather scatter; do
  timeout 25 /tmp/nt/${c}_perf -g 1 -b 8 -e 256M -f 2 -n 20 -w 5 -c 1 > $out/${c}_perf.txt 2>&1 || echo "$c rc=$?"
  rm -rf $out/nt-$c; $bin import $out/${c}_perf.txt -o $out/nt-$c --config default > /dev/null || echo "import $c failed"
  echo "== $c: ours (candidate) against nccl-tests (base)"
  $bin compare $out/nt-$c "$(run_dir plain)" --threshold 5% | grep -v "^unmatched\|only in"
  [[ $c == all_reduce || $c == alltoall ]] && { echo "== $c, events every 20"; $bin compare $out/nt-$c "$(run_dir every20)" --threshold 5% | tail -4; }
done
echo "== done at $((SECONDS - start)) s"
tar czf "$OUT/coll.tgz" -C /tmp coll
