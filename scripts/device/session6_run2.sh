#!/usr/bin/env bash
# Session 6, device run 2 (one H200): the cluster-shape variants in gpudoc's GEMM candidates.
#  (1) the GEMM GPU tests (test_bench_live --gtest_filter=*Gemm*);
#  (2) 3 interleaved rounds of TF32 and FP8: gpudoc (this build), PyTorch on its timeline, gpudoc
#      before the change (.device/bin/gpudoc_prev);
#  (3) the FP8 variants probe (custom options, swizzling, clusters; the run-1 attempt stopped on a
#      variant the check accepted but cublasLtMatmul refused);
#  (4) bench --quick, timed.  Results in $OUT/NAME.tgz (NAME: the first argument, default r2; run 3
#      was this script again, `session6_run2.sh r3`, after the probe's turns got their settling half).
set -u
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
N=${1:-r2}; R=$OUT/$N; mkdir -p $R/rounds
G=.device/bin/gpudoc; P=.device/bin/gpudoc_prev; K=gemm.tf32,gemm.fp8
timeout 150 .device/bin/test_bench_live --gtest_filter='*Gemm*' > $R/test_gemm_live.txt 2>&1; echo "gemm live tests rc=$?"
tail -5 $R/test_gemm_live.txt
for r in 0 1 2; do
  $G bench --json --only $K > $R/rounds/r${r}_gpudoc.json 2>/dev/null
  python3 scripts/device/torch_bench.py --only $K --match $R/rounds/r${r}_gpudoc.json > $R/rounds/r${r}_torch.json 2>/dev/null
  $P bench --json --only $K > $R/rounds/r${r}_prev.json 2>/dev/null
done
python3 scripts/device/gemm_rounds_summary.py $R/rounds | tee $R/rounds_summary.md
timeout 110 .device/bin/gemm_variants fp8_tn 3 0.25 1.0 3 > $R/fp8_variants.json 2> $R/fp8_variants.err; echo "fp8 variants rc=$?"
/usr/bin/time -f "quick wall %e s" $G bench --quick --json > $R/quick.json 2> $R/quick.err; echo "quick rc=$?"; tail -1 $R/quick.err
cd $OUT && tar czf $N.tgz $N && rm -rf $N
