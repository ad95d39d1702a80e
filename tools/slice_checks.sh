#!/usr/bin/env bash
# Checks gpudoc slice on a real GPU (docs/results/slice.md) and leaves the evidence in OUTDIR for
# tools/check_slice.py, which prints PASS/FAIL per item:
#
#   tools/slice_checks.sh OUTDIR
#
# Groups (SLICE_CHECKS, default all: "memory launch compute alone infer copy mps"):
#   memory   PyTorch's default caching allocator and backend:cudaMallocAsync at the cap (a clean
#            torch.OutOfMemoryError, mem_get_info showing the slice), two processes sharing one
#            budget, slice list while a job runs, a bad limit (exit 2)
#   launch   the cost per launch with and without the slice (gpudoc bench --only launch)
#   compute  the interception library's compute caps, 30 % and 60 % side by side for 60 s (pmon's
#            per-process SM % each second, and each job's steps/s against the same job alone)
#   alone    the interception library's --sm 30 with the job alone on the GPU for 60 s
#   infer    an inference loop's p99 alone, beside a training job, beside one in a --sm 30 slice
#   copy     PyTorch's host<->device copies without a cap and under --pcie 4G
#   mps      whether an MPS control daemon can be started (private pipe and log folders; told to
#            quit afterwards: no GPU setting changes); under it the memory limit, the compute caps
#            side by side and the inference p99 again
# Environment: GPUDOC (the binary; default: gpudoc beside this script's build-portable, else on
# PATH), WORKLOADS (folder of slice_memory.py), SLICE_MEM (default 20G), CAP_SECONDS (default 60).
set -u
out=${1:?usage: tools/slice_checks.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
G=${GPUDOC:-$here/../build-portable/src/cli/gpudoc}
[ -x "$G" ] || G=$(command -v gpudoc)
W=${WORKLOADS:-$here/../workloads}
MEM=${SLICE_MEM:-20G}
CAP_S=${CAP_SECONDS:-60}
groups=" ${SLICE_CHECKS:-memory launch compute alone infer copy mps} "
on() { [[ "$groups" == *" $1 "* ]]; }
mkdir -p "$out"
log() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$out/steps.log"; }

nvidia-smi --query-gpu=name,memory.total,driver_version,compute_mode --format=csv >"$out/gpu.csv" 2>&1
"$G" --version >"$out/version.txt" 2>&1
echo "$MEM" >"$out/mem.txt"
echo "$groups" >"$out/groups.txt"

if on memory; then
  log "default caching allocator at --mem $MEM"
  timeout 120 "$G" slice --mem "$MEM" --name native -- python3 "$W/slice_memory.py" >"$out/native.jsonl" 2>"$out/native.err"
  echo $? >"$out/native.rc"
  log "backend:cudaMallocAsync at --mem $MEM"
  PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync timeout 120 "$G" slice --mem "$MEM" --name async -- \
    python3 "$W/slice_memory.py" >"$out/async.jsonl" 2>"$out/async.err"
  echo $? >"$out/async.rc"
  log "two processes, one budget"
  timeout 120 "$G" slice --mem "$MEM" --name shared -- python3 "$W/slice_memory.py" --shared \
    >"$out/shared.jsonl" 2>"$out/shared.err"
  echo $? >"$out/shared.rc"

  log "slice list while a job runs"
  "$G" slice -q --mem 4G --name listed -- python3 -c "import torch,time; x=torch.empty(1<<30,dtype=torch.uint8,device='cuda'); time.sleep(10)" &
  job=$!
  for _ in $(seq 1 30); do
    sleep 1
    "$G" slice list --json >"$out/list.json" 2>&1
    grep -q '"used_bytes": [1-9]' "$out/list.json" && break
  done
  wait $job
  echo $? >"$out/listed.rc"

  log "bad input"
  "$G" slice --mem 100T -- true >"$out/too_big.err" 2>&1
  echo $? >"$out/too_big.rc"
fi

if on launch; then
  log "launch cost without and with the slice"
  for i in 1 2; do
    timeout 60 "$G" bench --only launch --json >"$out/launch_plain_$i.json" 2>"$out/launch_plain_$i.err"
    timeout 60 "$G" slice -q --mem 100G -- "$G" bench --only launch --json >"$out/launch_slice_$i.json" 2>"$out/launch_slice_$i.err"
  done
fi

# side_by_side PREFIX [slice flags for both]: --sm 30 and --sm 60 for CAP_S seconds, pmon beside
side_by_side() {
  local prefix=$1
  shift
  nvidia-smi pmon -s u -d 1 -c $((CAP_S + 8)) >"$out/${prefix}pmon_caps.txt" 2>&1 &
  local pmon=$!
  timeout $((CAP_S + 60)) "$G" slice -q --sm 30 --name ${prefix}sm30 "$@" -- python3 "$W/slice_compute.py" \
    --duration "$CAP_S" --label sm30 >"$out/${prefix}sm30.jsonl" 2>"$out/${prefix}sm30.err" &
  local a=$!
  timeout $((CAP_S + 60)) "$G" slice -q --sm 60 --name ${prefix}sm60 "$@" -- python3 "$W/slice_compute.py" \
    --duration "$CAP_S" --label sm60 >"$out/${prefix}sm60.jsonl" 2>"$out/${prefix}sm60.err" &
  local b=$!
  sleep 5  # both running: where each slice's window starts in the period (interception library)
  "$G" slice list --json >"$out/${prefix}list_caps.json" 2>&1
  wait $a $b
  kill $pmon 2>/dev/null
  wait $pmon 2>/dev/null
}
# p99 PREFIX [slice flags]: the inference loop alone, beside a free training job, beside one in --sm 30
p99() {
  local prefix=$1
  shift
  timeout 60 python3 "$W/slice_compute.py" --infer --duration 12 --label alone >"$out/${prefix}infer_alone.jsonl" 2>&1
  timeout 60 python3 "$W/slice_compute.py" --duration 16 --label train >"$out/${prefix}train_free.jsonl" 2>&1 &
  sleep 3
  timeout 60 python3 "$W/slice_compute.py" --infer --duration 12 --label beside >"$out/${prefix}infer_beside.jsonl" 2>&1
  wait
  timeout 60 "$G" slice -q --sm 30 "$@" -- python3 "$W/slice_compute.py" --duration 16 --label train_sm30 \
    >"$out/${prefix}train_sm30.jsonl" 2>&1 &
  sleep 3
  timeout 60 python3 "$W/slice_compute.py" --infer --duration 12 --label beside_sm30 >"$out/${prefix}infer_sm30.jsonl" 2>&1
  wait
}

if on compute || on alone || on mps; then
  log "the training job alone, uncapped (the reference for steps/s)"
  timeout 60 python3 "$W/slice_compute.py" --duration 10 --label alone >"$out/train_alone.jsonl" 2>&1
fi
if on compute; then
  log "compute caps of 30 % and 60 % side by side for $CAP_S s (pmon: per-process SM %, each second)"
  side_by_side ""
fi
if on alone; then
  log "a --sm 30 slice alone on the GPU for $CAP_S s (nothing to time-slice with: NVML's figure is the job's time)"
  nvidia-smi pmon -s u -d 1 -c $((CAP_S + 8)) >"$out/alone_pmon.txt" 2>&1 &
  pmon=$!
  timeout $((CAP_S + 60)) "$G" slice -q --sm 30 --name alone30 -- python3 "$W/slice_compute.py" \
    --duration "$CAP_S" --label alone30 >"$out/alone30.jsonl" 2>"$out/alone30.err"
  kill $pmon 2>/dev/null
  wait $pmon 2>/dev/null
fi
if on infer; then
  log "inference p99: alone, beside a training job, beside a training job in a --sm 30 slice"
  p99 ""
fi
if on copy; then
  log "PyTorch's host<->device copies without a cap, then under --pcie 4G"
  timeout 120 python3 "$W/slice_copy.py" --seconds 3 >"$out/copy_free.jsonl" 2>"$out/copy_free.err"
  timeout 120 "$G" slice --pcie 4G --name copy -- python3 "$W/slice_copy.py" --seconds 3 \
    >"$out/copy_capped.jsonl" 2>"$out/copy_capped.err"
  echo $? >"$out/copy_capped.rc"
fi

if on mps; then
  log "MPS"
  mps_pipe=$(mktemp -d) && mps_log=$(mktemp -d)
  if command -v nvidia-cuda-mps-control >/dev/null; then
    CUDA_MPS_PIPE_DIRECTORY=$mps_pipe CUDA_MPS_LOG_DIRECTORY=$mps_log timeout 20 nvidia-cuda-mps-control -d >"$out/mps_start.txt" 2>&1
    echo "start rc=$?" >>"$out/mps_start.txt"
    sleep 1
    # The control endpoint is a FIFO before CUDA 13 and a Unix socket from CUDA 13.
    if [ -p "$mps_pipe/control" ] || [ -S "$mps_pipe/control" ]; then
      export CUDA_MPS_PIPE_DIRECTORY=$mps_pipe CUDA_MPS_LOG_DIRECTORY=$mps_log
      timeout 120 "$G" slice --mem 8G --sm 30 --name mps -- python3 "$W/slice_memory.py" >"$out/mps.jsonl" 2>"$out/mps.err"
      echo $? >"$out/mps.rc"
      log "MPS: compute caps side by side, and the inference p99 (every job an MPS client)"
      timeout 60 python3 "$W/slice_compute.py" --duration 10 --label alone >"$out/mps_train_alone.jsonl" 2>&1
      side_by_side mps_
      p99 mps_
      unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    fi
    # Stopped whatever happened above; its pid file names the daemon this script started.
    echo quit | CUDA_MPS_PIPE_DIRECTORY=$mps_pipe timeout 20 nvidia-cuda-mps-control >>"$out/mps_start.txt" 2>&1
    sleep 1
    daemon=$(cat "$mps_pipe/nvidia-cuda-mps-control.pid" 2>/dev/null)
    if [ -n "$daemon" ] && kill -0 "$daemon" 2>/dev/null; then kill "$daemon"; echo "daemon $daemon killed" >>"$out/mps_start.txt"; fi
    cp "$mps_log"/*.log "$out/" 2>/dev/null
  else
    echo "nvidia-cuda-mps-control not installed" >"$out/mps_start.txt"
  fi
  rm -rf "$mps_pipe" "$mps_log"
fi
log "done"
