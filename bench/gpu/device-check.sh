#!/bin/bash
# The GPU checks of one device session, in one call: the CUDA tests plain and under
# compute-sanitizer (memcheck, racecheck, synccheck), the scorer benchmarks with the CPU twin on
# all cores as the same-run baseline, and `kvoracle score` on SmolLM2-shaped synthetic traces
# (30 layers, 9 heads, 3 KV heads, d = 64) at n = 1 024 and 8 192, CUDA against the twin.
# Usage: bench/gpu/device-check.sh BIN_DIR OUT_DIR, where BIN_DIR holds gpu_tests, kvo_bench and
# kvoracle built here with nvcc (and lib.tar.xz with the shared libraries they need, if the
# device machine lacks them). Results: OUT_DIR/gpu_tests.json, OUT_DIR/scorer.json (bench/bench_tables.py).
set -u
bin=${1:?binary folder}
out=${2:?output folder}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
if [ -f "$bin/lib.tar.xz" ]; then
  tar xJf "$bin/lib.tar.xz" -C "$bin" && export LD_LIBRARY_PATH=$PWD/$bin/lib
fi
echo "== gpu_tests"
timeout 120 "$bin/gpu_tests" --gtest_output=json:"$out/gpu_tests.json" | grep -E "OK|FAILED|PASSED|SKIPPED"
for tool in memcheck racecheck synccheck; do
  filter='Scorer.CudaBackEndMatchesTheTwin'
  [ "$tool" = memcheck ] && filter='Scorer.Cuda*'
  timeout 150 compute-sanitizer --tool "$tool" --error-exitcode 9 "$bin/gpu_tests" --gtest_filter="$filter" | tail -1
  echo "$tool rc=${PIPESTATUS[0]}"
done
echo "== benchmarks"
timeout 200 "$bin/kvo_bench" --benchmark_filter='scorer/(cpu-all-cores|cuda)/' --benchmark_repetitions=3 \
  --benchmark_out="$out/scorer.json" --benchmark_out_format=json | grep "median\|ERROR"
echo "== kvoracle score"
k=$bin/kvoracle
for n in 1024 8192; do
  "$k" synth -o "/tmp/t$n.safetensors" --layers 30 --heads 9 --kv-heads 3 -n "$n" --head-dim 64 --prompt-len 0 >/dev/null
done
"$k" score /tmp/t1024.safetensors --device cpu --budgets 5%,10%,20%,50% -o /tmp/s-cpu.jsonl | tail -2
"$k" score /tmp/t1024.safetensors --device cuda --budgets 5%,10%,20%,50% -o /tmp/s-cuda.jsonl | tail -2
cmp /tmp/s-cpu.jsonl /tmp/s-cuda.jsonl && echo "per-step records identical: $(wc -l </tmp/s-cpu.jsonl) lines"
for dev in cuda cpu; do timeout 150 "$k" score /tmp/t8192.safetensors --device "$dev" --budgets 20% | tail -2; done
