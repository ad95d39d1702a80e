#!/usr/bin/env bash
# Multi-GPU check after the GPM lock: `watch --once` 5 times (count crashes), the sampler's CPU on
# every GPU beside nvidia-smi, and the two straggler fixtures, all in one call.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
B=${B:-.device/bin}; FINAL=${OUT:-/tmp/out}; W=$FINAL/work; mkdir -p "$W/traces"
crashes=0
for i in 1 2 3 4 5; do
  "$B/gpudoc" watch --once --json >"$W/watch_$i.json" 2>>"$W/watch.err"; [[ $? -ge 128 ]] && crashes=$((crashes + 1))
done
echo "watch --once: $crashes of 5 crashed" | tee "$W/probe.txt"
ngpu=$(nvidia-smi -L | wc -l)
python3 scripts/device/sampler_cpu.py --seconds 40 --gpus "$ngpu" --out "$W/sampler_cpu_idle.json" \
  --sampler "gpudoc=$B/gpudoc record -q -o /tmp/cpu_idle.jsonl --duration 60" \
  --sampler "nvidia-smi-11-fields=nvidia-smi --query-gpu=timestamp,index,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,temperature.gpu,clocks.sm,clocks.max.sm,clocks_event_reasons.active --format=csv -lms 100" | tee "$W/sampler_cpu_idle.md" &
GPUDOC=$B/gpudoc OUT_DIR=$W/traces scripts/device/record_fixtures.sh --multi-gpu --only 'slow1|slow0'
wait
"$B/gpudoc" trace info /tmp/cpu_idle.jsonl >"$W/cpu_idle_trace_info.txt" 2>&1
tar czf "$FINAL/probe.tgz" -C "$FINAL" work && rm -rf "$W"
