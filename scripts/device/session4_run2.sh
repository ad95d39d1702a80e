#!/usr/bin/env bash
# Session 4, device run 2 (one H200): bench beside PyTorch (full + 3 interleaved GEMM rounds) while,
# alongside, the sampler's CPU is measured for the default periods and three candidate changes,
# then the per-group and per-call NVML costs.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export GPUDOC_COMMIT=${GPUDOC_COMMIT:-unknown}
R=$OUT/r2; mkdir -p $R
G=.device/bin/gpudoc
SMI11="nvidia-smi --query-gpu=timestamp,index,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,temperature.gpu,clocks.sm,clocks.max.sm,clocks_event_reasons.active --format=csv -lms 100"
(
  python3 scripts/device/sampler_cpu.py --seconds 240 --gpus 1 --out $R/sampler_variants.json \
    --sampler "default-a=$G record -q -o /tmp/s_a.jsonl --duration 260" \
    --sampler "default-b=$G record -q -o /tmp/s_b.jsonl --duration 260" \
    --sampler "util10s=$G record -q -o /tmp/s_u.jsonl --duration 260 --period utilization=10000" \
    --sampler "fast200=$G record -q -o /tmp/s_f.jsonl --duration 260 --period fast=200" \
    --sampler "util10s-fast200=$G record -q -o /tmp/s_uf.jsonl --duration 260 --period utilization=10000,fast=200" \
    --sampler "nvidia-smi-11-fields=$SMI11" > $R/sampler_variants.md 2>&1
  sleep 25
  for f in a b u f uf; do echo "== $f"; $G trace info /tmp/s_$f.jsonl; done > $R/sampler_traces_info.txt 2>&1
  .device/bin/nvml_read_cost 30 0 > $R/nvml_cost_load.json 2>&1
) &
timeout 560 python3 scripts/device/bench_compare.py $R/cmp --gemm-rounds 3 > $R/compare.log 2>&1; echo "compare rc=$?"
wait
cat $R/sampler_variants.md; cat $R/nvml_cost_load.json | tail -30; grep -i "gap\|lost\|samples" $R/sampler_traces_info.txt | head -20
sed -n 1,60p $R/cmp/compare.md
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
