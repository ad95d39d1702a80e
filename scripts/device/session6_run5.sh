#!/usr/bin/env bash
# Session 6, device run 5 (one H200, the session's last ~6 device minutes): the FP8 variants probe
# (custom options, swizzling, clusters of the heuristics' first 3 picks; runs 2-3 had every FP8
# candidate refused: the probe's scales sat 4 bytes apart) and 2 more matched TF32/FP8 rounds of
# gpudoc (3748bc0) beside PyTorch on its timeline. Results in $OUT/r5.tgz.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r5; mkdir -p $R/rounds
timeout 100 .device/bin/gemm_variants fp8_tn 3 0.25 1.0 2 > $R/fp8_variants.json 2> $R/fp8_variants.err; echo "fp8 variants rc=$?"
K=gemm.tf32,gemm.fp8
for r in 0 1; do
  .device/bin/gpudoc bench --json --only $K > $R/rounds/r${r}_gpudoc.json 2>/dev/null
  python3 scripts/device/torch_bench.py --only $K --match $R/rounds/r${r}_gpudoc.json > $R/rounds/r${r}_torch.json 2>/dev/null
done
python3 scripts/device/gemm_rounds_summary.py $R/rounds > $R/rounds_summary.md; sed -n 1,10p $R/rounds_summary.md
python3 -c "
import json; d=json.load(open('$R/fp8_variants.json'))
print(d['variants'], 'variants'); [print(' screen', v['tflops'], v['what'], v['config']) for v in d['screen'][:6]]
[print(' final', v['tflops'], v['what'], v['config']) for v in d['final']]" 2>&1 | tail -14
cd $OUT && tar czf r5.tgz r5 && rm -rf r5
