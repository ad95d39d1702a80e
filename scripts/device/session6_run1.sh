#!/usr/bin/env bash
# Session 6, device run 1 (one H200): (1) cuBLASLt variants of the TF32 and FP8 8192^3 GEMMs beside
# the heuristics' picks (scripts/device/probes/gemm_variants.cu); (2) launch.throughput beside the
# lone launch loop and ROUNDS (default 0) matched TF32/FP8 rounds (launch_and_gemm_check.sh). Results in $OUT/r1.tgz.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r1; mkdir -p $R/variants
nvidia-smi --query-gpu=name,driver_version,temperature.gpu,power.draw,clocks.sm --format=csv > $R/env.txt
for c in fp8_tn tf32_nn tf32_tn; do
  timeout 140 .device/bin/gemm_variants $c 3 0.25 1.0 3 > $R/variants/$c.json 2> $R/variants/$c.err
  echo "$c rc=$?"
done
python3 - $R/variants <<'PY' | tee $R/variants_summary.txt
import json, os, sys, statistics as st
d = sys.argv[1]
for n in sorted(os.listdir(d)):
    if not n.endswith(".json"): continue
    try: doc = json.load(open(os.path.join(d, n)))
    except Exception as e: print(n, "unreadable", e); continue
    print(f"== {doc['case']}: {doc['variants']} variants of {doc['heuristics_returned']} heuristic picks")
    for v in doc["screen"][:8]: print(f"  screen {v['tflops']:7.1f}  #{v['base']} {v['what']:14s} {v['config']}")
    base = st.mean(doc["final"][0]["tflops"])
    for v in doc["final"]:
        m = st.mean(v["tflops"])
        print(f"  final  {m:7.1f} ({100*m/base:6.2f} %) {v['tflops']}  #{v['base']} {v['what']} | {v['config']}")
PY
ROUNDS=${ROUNDS:-0} timeout 170 scripts/device/launch_and_gemm_check.sh $R/check > $R/check.log 2>&1; echo "check rc=$?"
cat $R/check.log | tail -30
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
