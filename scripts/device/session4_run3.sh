#!/usr/bin/env bash
# Session 4, device run 3 (one H200): the sampler's CPU with the new default periods beside the
# previous build and nvidia-smi (in the background, 240 s), while in the foreground: the GPU tests,
# gpudoc health, every reference workload through `gpudoc diagnose --json -- ...`, and doctor.
# Results in $OUT/r3a.tgz (sampler) and $OUT/r3b.tgz (the rest).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
A=$OUT/r3a; B=$OUT/r3b; mkdir -p $A $B
G=.device/bin/gpudoc
SMI11="nvidia-smi --query-gpu=timestamp,index,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,temperature.gpu,clocks.sm,clocks.max.sm,clocks_event_reasons.active --format=csv -lms 100"
(
  python3 scripts/device/sampler_cpu.py --seconds 240 --gpus 1 --out $A/sampler_final.json \
    --sampler "new-a=$G record -q -o /tmp/n_a.jsonl --duration 260" \
    --sampler "new-b=$G record -q -o /tmp/n_b.jsonl --duration 260" \
    --sampler "previous=.device/bin/gpudoc_prev record -q -o /tmp/n_p.jsonl --duration 260" \
    --sampler "nvidia-smi-11-fields=$SMI11" > $A/sampler_final.md 2>&1
  sleep 25
  for f in a b p; do echo "== $f"; $G trace info /tmp/n_$f.jsonl; done > $A/sampler_final_traces.txt 2>&1
  cd $OUT && tar czf r3a.tgz r3a
) &
{ .device/bin/test_nvml_live; echo "rc=$?"; } > $B/test_nvml_live.log 2>&1
{ .device/bin/test_bench_live; echo "rc=$?"; } > $B/test_bench_live.log 2>&1
tail -3 $B/test_nvml_live.log $B/test_bench_live.log
bash scripts/device/health_live.sh $B/health > $B/health_live.log 2>&1; echo "health rc=$?"; cat $B/health/summary.txt
bash scripts/device/diagnose_live.sh $B/diagnose > $B/diagnose_live.log 2>&1; echo "diagnose rc=$?"; cat $B/diagnose/diagnose_live.md
$G doctor > $B/doctor.txt 2>&1; echo "doctor rc=$?"; head -30 $B/doctor.txt
(cd $OUT && tar czf r3b.tgz r3b)
wait
cat $A/sampler_final.md; grep -E "==|gpu_util|memory_used|power_watts" $A/sampler_final_traces.txt
rm -rf $A $B
