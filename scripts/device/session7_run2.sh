#!/usr/bin/env bash
# Session 7, device run 2 (one H200): the GEMM run-off (finalists within 1 % of the final's best
# meet again in 1 s turns; run 1 showed 0.3 s turns too short to separate TF32's 2x1x1 and 2x2x1
# clusters).
#  (1) the GEMM GPU tests (default mode, five dtypes; the winner is the run-off's fastest);
#  (2) 3 interleaved rounds of TF32 and FP8, the contested ones: gpudoc, then PyTorch on its timeline;
#  (3) 1 round of all five headline GEMMs, the same way.
# Binaries in .device/bin. Results in $OUT/s7r2.tgz.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
R=$OUT/s7r2; mkdir -p $R/rounds $R/all5
G=.device/bin/gpudoc
timeout 200 .device/bin/test_bench_live --gtest_filter='*Gemm*' > $R/test_gemm_live.txt 2>&1; echo "gemm live tests rc=$?"
grep -E "in the run-off|^\[  (PASSED|FAILED) " $R/test_gemm_live.txt
K=gemm.tf32,gemm.fp8
for r in 0 1 2; do
  $G bench --json --only $K > $R/rounds/r${r}_gpudoc.json 2>/dev/null
  python3 scripts/device/torch_bench.py --only $K --match $R/rounds/r${r}_gpudoc.json > $R/rounds/r${r}_torch.json 2>/dev/null
done
K=gemm.fp32,gemm.tf32,gemm.fp16,gemm.bf16,gemm.fp8
/usr/bin/time -f "all five, gpudoc default: %e s" $G bench --json --only $K > $R/all5/r0_gpudoc.json 2> $R/all5/r0_gpudoc.err
tail -1 $R/all5/r0_gpudoc.err
python3 scripts/device/torch_bench.py --only $K --match $R/all5/r0_gpudoc.json > $R/all5/r0_torch.json 2>/dev/null
python3 scripts/device/pool_rounds.py $R/rounds $R/all5 | tee $R/pooled.md
python3 -c "
import json,glob
for f in sorted(glob.glob('$R/*/r*_gpudoc.json')):
  for x in json.load(open(f))['results']:
    p=x['result']['params']; ro=[i for i,v in enumerate(p['algo_runoff_seconds']) if v>0]
    print(f.split('/')[-2], x['key'], round(x['wall_seconds'],1), 's;', p['algo_origin'], '; run-off', [(p['algo_candidates'][i].split(':')[0], round(2*8192**3/p['algo_runoff_seconds'][i]/1e12,1)) for i in ro])"
cd $OUT && tar czf s7r2.tgz s7r2 && rm -rf s7r2
