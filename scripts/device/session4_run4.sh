#!/usr/bin/env bash
# Session 4, device run 4 (one H200): the baseline demo (issue 5) with history pages, the GEMM GPU
# test again, then the sampler's CPU on the idle GPU: the new defaults beside the previous build and
# nvidia-smi. Results in $OUT/r4a.tgz (demo + test) and $OUT/r4b.tgz (sampler).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
A=$OUT/r4a; B=$OUT/r4b; mkdir -p $A $B
G=.device/bin/gpudoc
BENCH_KEYS=hbm.copy,gemm.bf16 WORKLOAD_S=12 bash scripts/device/baseline_demo.sh $A/demo > $A/demo.log 2>&1; echo "demo rc=$?"
cat $A/demo/summary.txt
{ .device/bin/test_bench_live --gtest_filter='BenchLive.GemmHeadlineTypes:BenchLive.Hbm*'; echo "rc=$?"; } > $A/test_bench_live_gemm.log 2>&1
grep -E "median|OK|FAILED|rc=" $A/test_bench_live_gemm.log
(cd $OUT && tar czf r4a.tgz r4a)
sleep 10
SMI11="nvidia-smi --query-gpu=timestamp,index,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,temperature.gpu,clocks.sm,clocks.max.sm,clocks_event_reasons.active --format=csv -lms 100"
python3 scripts/device/sampler_cpu.py --seconds 150 --gpus 1 --out $B/sampler_idle.json \
  --sampler "new-a=$G record -q -o /tmp/i_a.jsonl --duration 170" \
  --sampler "new-b=$G record -q -o /tmp/i_b.jsonl --duration 170" \
  --sampler "previous=.device/bin/gpudoc_prev record -q -o /tmp/i_p.jsonl --duration 170" \
  --sampler "nvidia-smi-11-fields=$SMI11" > $B/sampler_idle.md 2>&1
cat $B/sampler_idle.md
(cd $OUT && tar czf r4b.tgz r4b)
rm -rf $A $B
