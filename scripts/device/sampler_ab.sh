#!/usr/bin/env bash
# The sampler's CPU, A/B: two gpudoc builds side by side with nvidia-smi (11 fields, 100 ms), in
# one run so that they share the machine's conditions. Writes sampler_ab_LABEL.{json,md} to OUTDIR.
#   scripts/device/sampler_ab.sh OUTDIR LABEL SECONDS OLD_GPUDOC NEW_GPUDOC
set -u
out=$1 label=$2 secs=$3 old=$4 new=$5
ngpu=$(nvidia-smi -L | wc -l)
SMI11="nvidia-smi --query-gpu=timestamp,index,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,temperature.gpu,clocks.sm,clocks.max.sm,clocks_event_reasons.active --format=csv -lms 100"
dur=$((secs + 20))
python3 scripts/device/sampler_cpu.py --seconds "$secs" --gpus "$ngpu" --out "$out/sampler_ab_$label.json" \
  --sampler "gpudoc-previous=$old record -q -o /tmp/ab_old_$label.jsonl --duration $dur" \
  --sampler "gpudoc-new=$new record -q -o /tmp/ab_new_$label.jsonl --duration $dur" \
  --sampler "nvidia-smi-11-fields=$SMI11" >"$out/sampler_ab_$label.md" 2>&1
cat "$out/sampler_ab_$label.md"
