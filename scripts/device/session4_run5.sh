#!/usr/bin/env bash
# Session 4, device run 5 (one H200): the hardware baseline of the demo (its --bench list did not
# parse in run 4), checked again, checked under a second process's load, its history page; and the
# GEMM GPU test in the default mode. Results in $OUT/r5.tgz.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r5; mkdir -p $R
G=.device/bin/gpudoc
export GPUDOC_STORE=$R/gpudoc.db
s() { local name=$1 want=$2; shift 2; local t0=$SECONDS; "$@" > $R/$name.out 2> $R/$name.err; local rc=$?
      echo "$name rc=$rc (want $want) $((SECONDS - t0))s" | tee -a $R/summary.txt; }
s record_hw 0 $G baseline record hw --bench hbm.copy,gemm.bf16 --quick
s check_hw 0 $G baseline check hw
python3 workloads/gemm_saturated.py --duration 120 > $R/load.out 2>&1 &
L=$!; sleep 12
s loaded_check_hw 1 $G baseline check hw
kill -TERM $L; wait $L 2>/dev/null; sleep 3
s after_check_hw 0 $G baseline check hw
s history_hw 0 $G baseline history hw
s history_hw_html 0 $G baseline history hw --html $R/history_hw.html
s show_hw_json 0 $G baseline show hw --json
tail -30 $R/loaded_check_hw.out
{ .device/bin/test_bench_live --gtest_filter='BenchLive.GemmHeadlineTypes'; echo "rc=$?"; } > $R/test_gemm_default.log 2>&1
grep -E "median|OK|FAILED|rc=" $R/test_gemm_default.log
cat $R/summary.txt
cd $OUT && tar czf r5.tgz r5 && rm -rf r5
