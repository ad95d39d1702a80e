#!/usr/bin/env bash
# Session 4, device run 6 (two H200s, NVLink): gpudoc health after the NVLink-version fix, and a
# hardware baseline whose check under a second process's load prints the GPU snapshot (now with
# ECC). Results in $OUT/r6.tgz.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
R=$OUT/r6; mkdir -p $R
G=.device/bin/gpudoc
export GPUDOC_STORE=$R/gpudoc.db
t0=$(date +%s%N); $G health > $R/health.txt 2>&1; echo "health rc=$? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee $R/summary.txt
t0=$(date +%s%N); $G health --json > $R/health.json 2> $R/health.json.err; echo "health --json rc=$? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a $R/summary.txt
grep -E "nvlink|clocks|ecc" $R/health.txt
$G baseline record hw --bench hbm.copy --quick > $R/record_hw.out 2>&1; echo "record rc=$?" | tee -a $R/summary.txt
python3 workloads/gemm_saturated.py --duration 60 > $R/load.out 2>&1 &
L=$!; sleep 12
$G baseline check hw > $R/loaded_check_hw.out 2>&1; echo "loaded check rc=$? (want 1)" | tee -a $R/summary.txt
$G baseline check hw --json > $R/loaded_check_hw.json 2>&1; echo "loaded check --json rc=$? (want 1)" | tee -a $R/summary.txt
kill -TERM $L; wait $L 2>/dev/null
tail -8 $R/loaded_check_hw.out
cd $OUT && tar czf r6.tgz r6 && rm -rf r6
