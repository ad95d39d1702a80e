#!/usr/bin/env bash
# Session 5, device run 1 (one H200): (1) which cuBLASLt call PyTorch and gpudoc make for the TF32
# and FP8 GEMMs (cuBLASLt's own API log, level 2: every kernel-launching call with its algorithm
# configuration); (2) three interleaved rounds of the five headline GEMMs: gpudoc with the
# steady-state final, PyTorch, gpudoc before it (.device/bin/gpudoc_prev); (3) issue 5's last item,
# scripts/device/baseline_regression_findings.sh. Results in $OUT/r1.tgz.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r1; mkdir -p $R/lt $R/rounds
G=.device/bin/gpudoc; P=.device/bin/gpudoc_prev
GEMM=gemm.fp32,gemm.tf32,gemm.fp16,gemm.bf16,gemm.fp8
nvidia-smi --query-gpu=name,driver_version,temperature.gpu,power.draw,clocks.sm,power.limit --format=csv > $R/env.txt
t0=$SECONDS
# (1) the calls, logged by cuBLASLt itself (and cuBLAS's own log for PyTorch's path).
CUBLASLT_LOG_LEVEL=2 CUBLASLT_LOG_FILE=$R/lt/torch_%i.log CUBLAS_LOGINFO_DBG=1 CUBLAS_LOGDEST_DBG=$R/lt/cublas_torch.log \
  python3 scripts/device/torch_bench.py --only gemm.tf32,gemm.fp8 --reps 2 --warmup-seconds 0.1 > $R/lt/torch.json 2> $R/lt/torch.err
CUBLASLT_LOG_LEVEL=2 CUBLASLT_LOG_FILE=$R/lt/gpudoc_%i.log $G bench --quick --only gemm.tf32,gemm.fp8 --json > $R/lt/gpudoc.json 2> $R/lt/gpudoc.err
for f in $R/lt/*.log; do
  sed -E 's/0x[0-9a-f]+/P/g; s/^\[[^]]*\]//' "$f" | sort | uniq -c | sort -rn > "${f%.log}.uniq.txt"
done
echo "logs $((SECONDS - t0))s" | tee -a $R/summary.txt
# (2) interleaved rounds
for r in 0 1 2; do
  t1=$SECONDS; $G bench --json --only $GEMM > $R/rounds/r${r}_gpudoc.json 2> $R/rounds/r${r}_gpudoc.err
  echo "round $r gpudoc rc=$? $((SECONDS - t1))s" | tee -a $R/summary.txt
  t1=$SECONDS; python3 scripts/device/torch_bench.py --only $GEMM > $R/rounds/r${r}_torch.json 2> $R/rounds/r${r}_torch.err
  echo "round $r torch rc=$? $((SECONDS - t1))s" | tee -a $R/summary.txt
  t1=$SECONDS; $P bench --json --only $GEMM > $R/rounds/r${r}_prev.json 2> $R/rounds/r${r}_prev.err
  echo "round $r prev rc=$? $((SECONDS - t1))s" | tee -a $R/summary.txt
done
python3 scripts/device/gemm_rounds_summary.py $R/rounds | tee $R/rounds_summary.md
# (3) issue 5
GPUDOC=$G bash scripts/device/baseline_regression_findings.sh $R/findings > $R/findings.log 2>&1
echo "findings rc=$? (want 0)" | tee -a $R/summary.txt
tail -25 $R/findings.log
cat $R/summary.txt
cd $OUT && tar czf r1.tgz r1 && rm -rf r1
