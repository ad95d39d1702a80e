#!/usr/bin/env bash
# Session 5, device run 2 (one H200): gpudoc bench beside PyTorch (--quick, --full, the GPU tests,
# PyTorch's figures, 3 interleaved GEMM rounds) with the GEMM final that also takes each layout's
# first heuristic pick; then launch.throughput alone, twice --full and twice default, to see whether
# its drift repeats. Results in $OUT/r2.tgz.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export GPUDOC_COMMIT=${GPUDOC_COMMIT:-unknown}
R=$OUT/r2; mkdir -p $R/launch
G=.device/bin/gpudoc
timeout 500 python3 scripts/device/bench_compare.py $R/cmp --gemm-rounds 3 > $R/compare.log 2>&1; echo "compare rc=$?"
mkdir -p $R/rounds
for r in 0 1 2; do
  cp $R/cmp/gemm_round${r}_gpudoc.json $R/rounds/r${r}_gpudoc.json 2>/dev/null
  cp $R/cmp/gemm_round${r}_torch.json $R/rounds/r${r}_torch.json 2>/dev/null
done
python3 scripts/device/gemm_rounds_summary.py $R/rounds > $R/rounds_summary.md 2>&1
for i in 1 2; do
  $G bench --full --only launch.throughput --json > $R/launch/full$i.json 2>/dev/null
  $G bench --only launch.throughput --json > $R/launch/default$i.json 2>/dev/null
done
python3 - $R/launch <<'PY'
import json, os, sys
d = sys.argv[1]
for n in sorted(os.listdir(d)):
    r = json.load(open(os.path.join(d, n)))["results"][0]["result"]
    s = r["samples"]
    print(f"{n}: median {r['median']:.3f} us, CV {100 * r['cv']:.2f} %, first {s[0]:.3f}, last {s[-1]:.3f}, min {min(s):.3f}, max {max(s):.3f}")
PY
sed -n 1,50p $R/cmp/compare.md
cat $R/rounds_summary.md
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
