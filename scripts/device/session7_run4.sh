#!/usr/bin/env bash
# Session 7, device run 4 (one H200, the session's last device minutes):
#  (1) the GEMM and PCIe GPU tests at the 1 s final;
#  (2) pcie pinned (h2d, d2h, bidir) --full three times: run 3's bidir CV was 2.72 % (session 6: 1.40 %);
#  (3) 2 more interleaved TF32/FP8 rounds, gpudoc then PyTorch on its timeline.
# Results in $OUT/s7r4.tgz.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
R=$OUT/s7r4; mkdir -p $R/rounds $R/pcie
G=.device/bin/gpudoc
timeout 170 .device/bin/test_bench_live --gtest_filter='*Gemm*:*Pcie*' > $R/test_live.txt 2>&1; echo "gemm+pcie live tests rc=$?"
grep -E "in the final|^\[  (PASSED|FAILED) " $R/test_live.txt
for i in 1 2 3; do
  $G bench --full --json --only pcie.h2d.pinned,pcie.d2h.pinned,pcie.bidir.pinned > $R/pcie/full_$i.json 2>/dev/null
done
python3 -c "
import json
for i in (1,2,3):
  for r in json.load(open('$R/pcie/full_%d.json' % i))['results']:
    x=r['result']; print(i, r['key'], round(x['median'],1), 'CV %.2f %%' % (100*x['cv']), 'min', round(x['min'],1), 'max', round(x['max'],1))" | tee $R/pcie/summary.txt
K=gemm.tf32,gemm.fp8
for r in 0 1; do
  $G bench --json --only $K > $R/rounds/r${r}_gpudoc.json 2>/dev/null
  python3 scripts/device/torch_bench.py --only $K --match $R/rounds/r${r}_gpudoc.json > $R/rounds/r${r}_torch.json 2>/dev/null
done
python3 scripts/device/pool_rounds.py $R/rounds | tee $R/pooled.md | grep -E "rounds:|\| .* r[0-9]"
cd $OUT && tar czf s7r4.tgz s7r4 && rm -rf s7r4
