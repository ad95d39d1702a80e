#!/usr/bin/env bash
# Session 5, device run 3 (one H200): is gpudoc's TF32 gap to PyTorch (same kernel) the time the
# GPU has spent at its power cap before the samples? Twice, each after 10 s idle: PyTorch as
# before (1 s warm-up, 50 ms samples), PyTorch matched to gpudoc's default timeline (4.5 s of
# matmuls before 100 ms samples), gpudoc default, gpudoc --quick; TF32 and FP8. nvidia-smi logs
# clock, power and temperature every 200 ms beside it. Results in $OUT/r3.tgz.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r3; mkdir -p $R
G=.device/bin/gpudoc
K=gemm.tf32,gemm.fp8
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,temperature.memory,clocks_event_reasons.active --format=csv,noheader -lms 200 > $R/smi.csv &
SMI=$!
step() { local name=$1; shift; sleep 10; echo "$(date +%s.%N) start $name" >> $R/steps.txt
         "$@" > $R/$name.json 2> $R/$name.err; echo "$(date +%s.%N) end $name rc=$?" >> $R/steps.txt; }
for i in 1 2; do
  step torch_default_$i python3 scripts/device/torch_bench.py --only $K
  step torch_matched_$i python3 scripts/device/torch_bench.py --only $K --warmup-seconds 4.5 --sample-seconds 0.1
  step gpudoc_default_$i $G bench --json --only $K
  step gpudoc_quick_$i $G bench --json --quick --only $K
done
kill $SMI
python3 - $R <<'PY'
import json, os, sys
d = sys.argv[1]
for n in sorted(f for f in os.listdir(d) if f.endswith(".json")):
    doc = json.load(open(os.path.join(d, n)))
    res = doc.get("results")
    row = []
    for k in ("gemm.tf32", "gemm.fp8"):
        if isinstance(res, dict):
            v = res.get(k, {}).get("median")
        else:
            v = next((e["result"]["median"] for e in res if e["key"] == k and "result" in e), None)
        row.append(f"{k} {v:.1f}" if v else f"{k} -")
    print(f"{n:28s} " + "   ".join(row))
PY
cd $OUT && tar czf r3.tgz r3 && rm -rf r3
