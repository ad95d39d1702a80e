#!/usr/bin/env bash
# `gpudoc diagnose -- <job>` live on the real jobs of workloads/jobs/, each judged against what a
# correct diagnosis names (tools/evaluate_jobs.py --live): the single-GPU jobs on GPU 0, and with
# --multi-gpu the two-GPU DDP jobs (torchrun), whose straggler must be named whichever rank it is
# and whatever makes it slow (host work or GPU work), and none on a balanced run.
#
#   tools/diagnose_jobs.sh OUTDIR [--multi-gpu] [--gpudoc BIN] [--only REGEX]
#
# Writes, per job NAME: NAME.json (gpudoc's JSON), NAME.jsonl (the trace), NAME.log (the job's
# output and gpudoc's messages); then manifest.json and the table (evaluate.md, also printed).
# Exit 0 when every job was diagnosed right, 1 otherwise, 2 on bad usage, 3 without the GPUs.
# It never changes GPU settings.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export CUDA_DEVICE_ORDER=PCI_BUS_ID  # rank r runs on CUDA device r = NVML GPU r
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "diagnose_jobs.sh: $1" >&2; exit "${2:-2}"; }
out="" multi=0 only="" gpudoc=${GPUDOC:-}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --multi-gpu) multi=1 ;;
    --gpudoc) [[ $# -ge 2 ]] || die "--gpudoc needs a path"; gpudoc=$2; shift ;;
    --only) [[ $# -ge 2 ]] || die "--only needs a regular expression"; only=$2; shift ;;
    -h|--help) sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option '$1' (try --help)" ;;
    *) [[ -z "$out" ]] || die "one OUTDIR only"; out=$1 ;;
  esac
  shift
done
[[ -n "$out" ]] || die "usage: diagnose_jobs.sh OUTDIR [--multi-gpu] [--gpudoc BIN] (try --help)"
[[ -n "$gpudoc" ]] || gpudoc=$ROOT/build-portable/src/cli/gpudoc
[[ -x "$gpudoc" ]] || die "no gpudoc binary at $gpudoc (--gpudoc BIN)" 3
gpudoc=$(cd "$(dirname "$gpudoc")" && pwd)/$(basename "$gpudoc")
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[[ "${gpus:-0}" -ge $((multi + 1)) ]] || die "needs $((multi + 1)) GPU(s); nvidia-smi lists ${gpus:-0}" 3
mkdir -p "$out" && out=$(cd "$out" && pwd) || die "cannot create $out"
cd "$ROOT" || exit 2
rows=()
# live NAME EXPECTED NOT_WRONG KEY -- SCRIPT ARGS...
live() {
  local name=$1 expected=$2 not_wrong=$3 key=$4; shift 5
  if [[ -n "$only" ]] && ! grep -Eq -- "$only" <<<"$name"; then return; fi
  local script=$1; shift
  local cmd=(python3 "workloads/jobs/$script" "$@")
  local sel=(--gpus 0)
  if [[ $script == ddp_train.py ]]; then
    cmd=(python3 -m torch.distributed.run --standalone --nproc_per_node=2 "workloads/jobs/$script" "$@")
    sel=()
  fi
  local t0=$SECONDS
  "$gpudoc" diagnose --json -o "$out/$name.jsonl" ${sel[@]+"${sel[@]}"} -- "${cmd[@]}" >"$out/$name.json" 2>"$out/$name.log" </dev/null
  echo "$name: gpudoc exit $?, $((SECONDS - t0)) s" >&2
  local w json=""
  for w in $expected; do json+="${json:+,}\"$w\""; done
  local nw=""
  for w in $not_wrong; do nw+="${nw:+,}\"$w\""; done
  rows+=("{\"name\":\"$name\",\"split\":\"live\",\"trace\":\"$name.jsonl\",\"csv\":null,\"log\":\"$name.log\",\"diagnosis\":\"$name.json\",\"expected\":[$json],\"expected_csv\":[],\"not_wrong\":[$nw],\"key\":\"$key\",\"command\":\"${cmd[*]}\"}")
}
if [[ $multi -eq 0 ]]; then
  live image_cpu_r50_w2 sawtooth "throttled" "starved=yes" -- image_classify.py --duration 15 --arch resnet50 --workers 2 --augment standard
  live image_gpu_decode_r50 healthy "throttled" "" -- image_classify.py --duration 15 --arch resnet50 --preprocess gpu --decode gpu --workers 2 --pin-memory
  live lm_w4 healthy "throttled" "" -- transformer_lm.py --duration 15 --workers 4 --pin-memory
  live infer_low_r40 sawtooth "plateau" "" -- inference_server.py --duration 15 --rate 40 --max-wait-ms 5 --max-batch 64
  live infer_high_load70 healthy "throttled" "" -- inference_server.py --duration 15 --load 0.7 --max-wait-ms 5 --max-batch 64
  live leak_logits memory_growth "healthy throttled" "" -- leaky_train.py --duration 15 --leak logits --leak-every 20
  live ckpt_every4 sawtooth "healthy throttled" "" -- checkpoint_train.py --duration 18 --ckpt-every-s 4 --layers 4
  live shared_whole staircase "healthy throttled" "" -- shared_gpu.py --duration 15 --intruder-start-s 0
else
  live ddp_host_slow1 pulse "throttled" "straggler=1" -- ddp_train.py --duration 15 --slow-rank 1 --slow-kind host --slow-ms 150
  live ddp_host_slow0 pulse "throttled" "straggler=0" -- ddp_train.py --duration 15 --slow-rank 0 --slow-kind host --slow-ms 150
  live ddp_gpu_slow1 pulse "throttled" "straggler=1" -- ddp_train.py --duration 15 --slow-rank 1 --slow-kind gpu --slow-ms 60
  live ddp_gpu_slow0 pulse "throttled" "straggler=0" -- ddp_train.py --duration 15 --slow-rank 0 --slow-kind gpu --slow-ms 60
  live ddp_balanced healthy "throttled" "straggler=none" -- ddp_train.py --duration 15 --slow-rank -1
fi
{
  echo '{"tool": "tools/diagnose_jobs.sh", "live": true, "jobs": ['
  for i in "${!rows[@]}"; do echo "${rows[$i]}$([[ $i -lt $((${#rows[@]} - 1)) ]] && echo ,)"; done
  echo ']}'
} >"$out/manifest.json"
python3 "$ROOT/tools/evaluate_jobs.py" "$out" --live --markdown "$out/evaluate.md"
