#!/usr/bin/env bash
# Next session's first device run (one H200), prepared in session 6:
#  (1) every GPU test of the bench (test_bench_live), the launch host accounting of dec54c7 among them;
#  (2) launch_host_check.sh: launch.throughput --full three times, with params.host_spread (steal,
#      or a slower vCPU) and the slow/fast halves' thread CPU time and steal;
#  (3) does the final's turn length decide TF32's choice? gemm_variants on TF32 TN (the heuristics'
#      pick and its variants, among them clusters 2x1x1 and 2x2x1) with the final in 0.3 s turns
#      (gpudoc's default) x 4 rounds, then 1.0 s turns x 3 rounds.
# Binaries in .device/bin (gpudoc, test_bench_live, gemm_variants from the tree). Results in $OUT/s7r1.tgz.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
R=$OUT/s7r1; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,temperature.gpu,power.draw,clocks.sm --format=csv > $R/env.txt
timeout 240 .device/bin/test_bench_live > $R/test_bench_live.txt 2>&1; echo "test_bench_live rc=$?"
grep -E "^\[  (PASSED|FAILED) |host: cpu" $R/test_bench_live.txt
timeout 150 scripts/device/launch_host_check.sh $R/launch > /dev/null 2>&1; echo "launch check rc=$?"
cat $R/launch/launch_host_summary.txt
for spec in "0.3 4" "1.0 3"; do
  set -- $spec
  timeout 100 .device/bin/gemm_variants tf32_tn 1 0.25 $1 $2 > $R/tf32_turn_$1.json 2> $R/tf32_turn_$1.err
  echo "tf32 final turns $1 s: rc=$?"
  python3 -c "
import json, statistics as st; d = json.load(open('$R/tf32_turn_$1.json')); b = st.mean(d['final'][0]['tflops'])
for v in d['final']: print('  %6.2f %%  %s  %s' % (100 * st.mean(v['tflops']) / b, v['tflops'], v['what']))" 2>&1 | tail -7
done
cd $OUT && tar czf s7r1.tgz s7r1 && rm -rf s7r1
