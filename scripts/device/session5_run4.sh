#!/usr/bin/env bash
# Session 5, device run 4 (one H200): gpudoc bench beside PyTorch, the GEMMs compared on the same
# timeline (bench_compare.py: --quick, --full, PyTorch, 2 interleaved GEMM rounds with PyTorch both
# matched to gpudoc's timeline and as in its own run). The GPU tests ran in run 2 on this GEMM
# code. Results in $OUT/r4.tgz.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
export GPUDOC_COMMIT=${GPUDOC_COMMIT:-unknown}
R=$OUT/r4; mkdir -p $R
timeout 480 python3 scripts/device/bench_compare.py $R/cmp --gemm-rounds 2 --skip-live > $R/compare.log 2>&1; echo "compare rc=$?"
sed -n 1,60p $R/cmp/compare.md
cd $OUT && tar czf r4.tgz r4 && rm -rf r4
