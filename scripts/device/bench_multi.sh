#!/usr/bin/env bash
# gpudoc's p2p.* and nccl.* on a multi-GPU machine (2, 4 or 8 GPUs), beside PyTorch's NCCL
# all-reduce / all-gather / reduce-scatter measured the same way, in one call.
#   scripts/device/bench_multi.sh OUTDIR        (OUTDIR defaults to $OUT)
# Binaries come prebuilt (portable preset) in .device/bin ($B). Writes to OUTDIR (7 files):
#   summary.md        the tables: p2p matrices, nccl curves beside torch's, datasheet figures
#   bench.json        gpudoc bench --only p2p,nccl --json (default mode: every figure, raw samples)
#   bench.txt         the same run's terminal table, matrices and curves (a second run)
#   bench_quick.txt   --quick, with its wall time (issue 7 asks for it)
#   torch_nccl.json   scripts/device/torch_nccl.py, one process per GPU
#   gpu_tests.log     test_bench_multi_gpu_live, when $B has it
#   env.txt           GPUs, topology (nvidia-smi topo -m), NVLink status, NCCL libraries, torch
set -u
# NVLink multicast must stay off on these shared machines (NCCL, PyTorch, NVSHMEM): a program that
# uses it can put the host's GPUs out of service. gpudoc also sets NCCL_NVLS_ENABLE=0 itself.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
B=${B:-.device/bin}
O=${1:-${OUT:-/tmp/out}}
mkdir -p "$O"
ngpu=$(nvidia-smi -L | wc -l)

{
  date -u +%Y-%m-%dT%H:%M:%SZ; git rev-parse --short=12 HEAD 2>/dev/null; uname -r; nvidia-smi -L
  nvidia-smi --query-gpu=index,driver_version,pstate,clocks.max.sm,power.limit --format=csv
  nvidia-smi topo -m
  nvidia-smi nvlink --status -i 0 | head -20
  ldconfig -p | grep -i nccl
  python3 -c 'import torch; print("torch", torch.__version__, "NCCL", torch.cuda.nccl.version(), "GPUs", torch.cuda.device_count())'
  env | grep -E '^(NCCL_|TORCH_SYMM|NVSHMEM_|CUDA_VISIBLE)' | sort
} >"$O/env.txt" 2>&1
cat "$O/env.txt"

echo "== gpudoc bench --only p2p,nccl --json (default mode)"
"$B/gpudoc" bench --only p2p,nccl --json >"$O/bench.json" 2>"$O/bench_json.stderr"; echo "rc=$?"
echo "== gpudoc bench --only p2p,nccl (terminal)"
"$B/gpudoc" bench --only p2p,nccl >"$O/bench.txt" 2>&1; echo "rc=$?"; cat "$O/bench.txt"
echo "== gpudoc bench --only p2p,nccl --quick (wall time)"
start=$(date +%s%N)
"$B/gpudoc" bench --only p2p,nccl --quick >"$O/bench_quick.txt" 2>&1; rc=$?
echo "rc=$rc wall $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$O/bench_quick.txt"

if [[ -x "$B/test_bench_multi_gpu_live" ]]; then
  echo "== test_bench_multi_gpu_live"
  "$B/test_bench_multi_gpu_live" >"$O/gpu_tests.log" 2>&1; echo "rc=$?"; tail -5 "$O/gpu_tests.log"
fi

echo "== PyTorch NCCL, $ngpu processes"
python3 -m torch.distributed.run --standalone --nproc-per-node="$ngpu" scripts/device/torch_nccl.py \
  --out "$O/torch_nccl.json" 2>&1 | grep -v '^\[W' | tail -25

python3 scripts/device/bench_multi_summary.py "$O/bench.json" "$O/torch_nccl.json" "$O/env.txt" >"$O/summary.md" 2>&1
cat "$O/bench_json.stderr" >>"$O/env.txt" 2>/dev/null; rm -f "$O/bench_json.stderr"
cat "$O/summary.md"
ls -la "$O"
