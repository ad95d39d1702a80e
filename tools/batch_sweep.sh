#!/usr/bin/env bash
# The batch-size controller against a manual sweep, on a real GPU (about 3-4 minutes on one H200).
#
#   tools/batch_sweep.sh OUTDIR [--python PY] [--device N|cpu] [--change-window N]
#
# (a) Manual sweep: workloads/guard_train.py --controller fixed at micro-batches 1, 2, 4, ... doubling
#     until one runs out of memory (the job ends it cleanly with exit 5 and "oom": true: a result,
#     not a crash), ~8 s of training each; OUTDIR/fixed-B.log and fixed-B.rc.
# (b) guard_train.py --controller seek from a micro-batch of 1 for ~60 s: the controller searches,
#     settles, and must not move more than once per --change-window (50) steps after that;
#     OUTDIR/seek.log and seek.rc.
# (c) tools/check_batch_sweep.py OUTDIR: the sweep's steady throughput per size (the median of its
#     step lines after the first 3 s), the controller's settled throughput within 5 % of the best,
#     no crash from out of memory, the sweep reaching out of memory, at most one change per
#     window after settling, the whole run within 240 s; PASS/FAIL each, OUTDIR/summary.md and
#     summary.json.
#
# The model is chosen so that an H200 (141 GB) runs out of memory at a modest micro-batch and
# small micro-batches leave it underused: a GPT-style LM (12 layers, width 1024, 16 heads, ~150 M
# parameters) over 2048-token samples with attention written out (--attention naive), whose
# (16 x 2048 x 2048) scores, fp32 softmax and dropout mask keep ~0.6 GB per layer and sample
# (~8 GB a sample with the rest): out of memory expected at 16, perhaps 32. Every run uses the
# same effective batch (16 samples an optimizer step, the micro-batches accumulated; a
# micro-batch above it raises it to the micro-batch). The controller grows the micro-batch while a
# doubling gains 3 % or more, so it stops where the curve flattens. --device cpu: a tiny model for
# CI, with out of memory simulated above 8 samples (guard_train.py --simulate-oom-above).
# Exit codes: 0 every check passed; 1 a check failed; 2 bad usage; 3 no python with torch.
# NVLink multicast stays off; no GPU setting is changed; no guard is involved (GPUDOC_GUARD_SOCKET
# is cleared).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
unset GPUDOC_GUARD_SOCKET
repo=$(cd "$(dirname "$0")/.." && pwd)
PY=python3
device=0
window=50
out=""
usage() { sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --python) PY=${2:?--python needs an interpreter}; [[ "$PY" == */* && "$PY" != /* ]] && PY="$PWD/$PY"; shift ;;
    --device) device=${2:?--device needs an index or cpu}; shift ;;
    --change-window) window=${2:?--change-window needs a number}; shift ;;
    -h|--help) usage ;;
    -*) echo "batch_sweep.sh: unknown option $1" >&2; exit 2 ;;
    *) [[ -z "$out" ]] || usage; out=$1 ;;
  esac
  shift
done
[[ -n "$out" ]] || usage
[[ "$device" == cpu || "$device" =~ ^[0-9]+$ ]] || { echo "batch_sweep.sh: --device is an index or cpu" >&2; exit 2; }
[[ "$window" =~ ^[1-9][0-9]*$ ]] || { echo "batch_sweep.sh: --change-window is a positive integer" >&2; exit 2; }
"$PY" -c 'import torch' 2>/dev/null || { echo "batch_sweep.sh: $PY cannot import torch (give --python PY)" >&2; exit 3; }
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 2
cd "$repo" || exit 2

if [[ "$device" == cpu ]]; then
  model=(--width 32 --layers 1 --heads 2 --context 16 --vocab 128 --workers 1 --attention naive --simulate-oom-above 8)
  effective=16 fixed_s=6 seek_s=20 max_batch=64
else
  model=(--width 1024 --layers 12 --heads 16 --context 2048 --vocab 8192 --workers 4 --attention naive)
  effective=16 fixed_s=8 seek_s=60 max_batch=256
fi
common=(--device "$device" "${model[@]}" --eval-every-s 0 --log-every-s 1 --seed 3)
started=$SECONDS
echo "{\"device\": \"$device\", \"change_window\": $window, \"effective_batch\": $effective, \"model\": \"${model[*]}\"}" >"$out/sweep.json"

b=1
while (( b <= max_batch )); do
  e=$(( b > effective ? b : effective ))
  echo "== $(date +%T) fixed micro-batch $b (effective $e)"
  "$PY" workloads/guard_train.py "${common[@]}" --controller fixed --batch-size "$b" --effective-batch "$e" \
    --duration "$fixed_s" >"$out/fixed-$b.log" 2>"$out/fixed-$b.err"
  rc=$?
  echo "$rc" >"$out/fixed-$b.rc"
  echo "   exit $rc"
  (( rc == 5 )) && break          # out of memory: the sweep's end
  (( rc != 0 )) && break          # a failure: the checker reports it
  b=$(( b * 2 ))
done

echo "== $(date +%T) controller: seek from 1 (effective $effective, hold $window steps)"
"$PY" workloads/guard_train.py "${common[@]}" --controller seek --batch-size 1 --effective-batch "$effective" \
  --hold-steps "$window" --duration "$seek_s" >"$out/seek.log" 2>"$out/seek.err"
echo $? >"$out/seek.rc"
echo "   exit $(cat "$out/seek.rc")"
echo "$(( SECONDS - started ))" >"$out/elapsed_s"

"$PY" tools/check_batch_sweep.py "$out" --change-window "$window"
