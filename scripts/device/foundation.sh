#!/usr/bin/env bash
# The foundation issue's run on a GPU machine, in one call: NVML live tests, smoke checks of
# record/watch, the sampler's CPU cost beside nvidia-smi, and the reference-workload traces.
# Binaries come prebuilt (portable preset) in .device/bin. Everything lands in $OUT.
#   scripts/device/foundation.sh [--multi-gpu] [--skip-checks] [--only REGEX]
# (--only passes REGEX to record_fixtures.sh, so a long set can be split over two calls.)
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
B=${B:-.device/bin}
# Only 8 files come back from the device machine: work in $OUT/work and pack it at the end.
FINAL=${OUT:-/tmp/out}
OUT=$FINAL/work
mkdir -p "$OUT/traces"
multi=0 checks=1 only=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --multi-gpu) multi=1 ;;
    --skip-checks) checks=0 ;;
    --only) shift; only=(--only "$1") ;;
  esac
  shift
done
ngpu=$(nvidia-smi -L | wc -l)
SMI11="nvidia-smi --query-gpu=timestamp,index,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,temperature.gpu,clocks.sm,clocks.max.sm,clocks_event_reasons.active --format=csv -lms 100"
SMI5="nvidia-smi --query-gpu=timestamp,index,utilization.gpu,power.draw,temperature.gpu --format=csv -lms 100"

{
  date -u +%Y-%m-%dT%H:%M:%SZ; uname -a; nvidia-smi -L; nvidia-smi --query-gpu=driver_version,pstate,clocks.max.sm,power.limit --format=csv
  nproc; python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.device_count())'
} >"$OUT/env.txt" 2>&1

if [[ $checks -eq 1 ]]; then
echo "== nvml live tests"; "$B/test_nvml_live" >"$OUT/nvml_live.log" 2>&1; echo "rc=$?"; tail -3 "$OUT/nvml_live.log"
echo "== watch --once"; "$B/gpudoc" watch --once --no-clear >"$OUT/watch_once.txt" 2>&1; echo "rc=$?"; cat "$OUT/watch_once.txt"
"$B/gpudoc" watch --once --json >"$OUT/watch_once.json" 2>&1
echo "== record exit code passthrough"; "$B/gpudoc" record -q -o /tmp/false.jsonl -- sh -c 'sleep 1; exit 7'; echo "rc=$? (want 7)"
echo "== Ctrl-C leaves a valid file"; timeout -s INT 3 "$B/gpudoc" record -q -o /tmp/int.jsonl; echo "rc=$? (want 130)"
"$B/gpudoc" trace info /tmp/int.jsonl >"$OUT/ctrl_c_trace_info.txt" 2>&1; echo "trace info rc=$?"; tail -4 /tmp/int.jsonl | cut -c1-200

echo "== sampler CPU, idle GPU(s), side by side"
python3 scripts/device/sampler_cpu.py --seconds 40 --gpus "$ngpu" --out "$OUT/sampler_cpu_idle.json" \
  --sampler "gpudoc=$B/gpudoc record -q -o /tmp/cpu_idle.jsonl --duration 60" \
  --sampler "gpudoc-gpu0-only=$B/gpudoc record -q -o /tmp/cpu_idle0.jsonl --duration 60 --gpus 0" \
  --sampler "nvidia-smi-11-fields=$SMI11" --sampler "nvidia-smi-5-fields=$SMI5"
"$B/gpudoc" trace info /tmp/cpu_idle.jsonl >"$OUT/cpu_idle_trace_info.txt" 2>&1
fi

echo "== reference workloads (with the sampler's CPU measured under load beside them)"
if [[ $checks -eq 0 ]]; then
  # What each group costs: the same recorder with one group off at a time, all side by side.
  R="$B/gpudoc record -q --duration 100"
  python3 scripts/device/sampler_cpu.py --seconds 80 --gpus "$ngpu" --out "$OUT/sampler_cpu_groups.json" \
    --sampler "default=$R -o /tmp/g0.jsonl" --sampler "no-xid=$R -o /tmp/g1.jsonl --no-xid" \
    --sampler "no-utilization=$R -o /tmp/g2.jsonl --period utilization=0" \
    --sampler "no-processes=$R -o /tmp/g3.jsonl --period processes=0" \
    --sampler "no-gpm=$R -o /tmp/g4.jsonl --period gpm=0" \
    --sampler "no-energy-no-slow=$R -o /tmp/g5.jsonl --period energy=0,slow=0" \
    --sampler "fast-only=$R -o /tmp/g6.jsonl --no-xid --period utilization=0,processes=0,gpm=0,energy=0,slow=0" \
    --sampler "nvidia-smi-11-fields=$SMI11" >"$OUT/sampler_cpu_groups.md" 2>&1 &
fi
[[ $checks -eq 1 ]] && python3 scripts/device/sampler_cpu.py --seconds 100 --gpus "$ngpu" --out "$OUT/sampler_cpu_load.json" \
  --sampler "gpudoc=$B/gpudoc record -q -o /tmp/cpu_load.jsonl --duration 130" \
  --sampler "nvidia-smi-11-fields=$SMI11" >"$OUT/sampler_cpu_load.md" 2>&1 &
cpu_pid=$!
if [[ $multi -eq 1 ]]; then
  GPUDOC=$B/gpudoc OUT_DIR=$OUT/traces scripts/device/record_fixtures.sh --multi-gpu "${only[@]}"
else
  GPUDOC=$B/gpudoc OUT_DIR=$OUT/traces scripts/device/record_fixtures.sh "${only[@]}"
fi
wait $cpu_pid; [[ $checks -eq 1 ]] && cat "$OUT/sampler_cpu_load.md"
for t in "$OUT"/traces/*.jsonl; do "$B/gpudoc" trace info "$t" >"${t%.jsonl}.info.txt" 2>&1 || echo "INVALID $t"; done
if [[ $checks -eq 0 ]]; then wait; fi
tar czf "$FINAL/foundation.tgz" -C "$FINAL" work && rm -rf "$OUT"
ls -la "$FINAL"
