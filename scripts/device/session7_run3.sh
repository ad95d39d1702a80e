#!/usr/bin/env bash
# Session 7, device run 3 (one H200): the issue-4 comparison at this commit (GEMM final in 1 s turns):
# bench --quick (timed), --full, PyTorch's figures, one interleaved GEMM round (gpudoc default, PyTorch
# on its timeline, PyTorch as is). Results in $OUT/s7r3.tgz.
set -u
R=$OUT/s7r3; mkdir -p $R
GPUDOC_COMMIT=${1:?commit} timeout 580 python3 scripts/device/bench_compare.py $R/cmp --gemm-rounds 1 --skip-live > $R/compare.out 2>&1
echo "compare rc=$?"; grep -E "quick|must|FAIL|❌" $R/cmp/compare.md | head -20
cd $OUT && tar czf s7r3.tgz s7r3 && rm -rf s7r3
