#!/usr/bin/env bash
# gpudoc guard end to end: a real training job, a co-located non-critical process and a scripted
# thermal ramp replayed as the GPU's telemetry; then the job resumed from its last checkpoint, and
# tools/check_guard_e2e.py's verdict.
#
#   tools/guard_e2e.sh OUTDIR [--gpudoc BIN] [--python PY] [--device cpu|N] [--speed S]
#                             [--trace IN.jsonl] [--max-latency-ms MS]
#
# 1. tools/thermal_ramp.py IN.jsonl (default tests/data/gemm_saturated.jsonl) OUTDIR/ramp.jsonl,
#    checked with `gpudoc trace info`: the die temperature rises to level 1, 2, cools (level 2
#    clears), then rises to level 3, about 150 s in all (divided by --speed).
# 2. workloads/guard_noncritical.py on the same device, in the background (OUTDIR/noncritical.log).
# 3. GPUDOC_BACKEND=replay:OUTDIR/ramp.jsonl@S gpudoc guard --policy tools/guard_e2e.policy
#      --log OUTDIR/guard.jsonl -- PY workloads/guard_train.py --controller fixed ...
#    (OUTDIR/train.log, train.err, train.rc; checkpoints in OUTDIR/ckpt; digests OUTDIR/digest.jsonl)
# 4. PY workloads/guard_train.py --resume <its last checkpoint> for a few seconds, without a guard
#    (OUTDIR/resume.log, resume.rc).
# 5. The non-critical process is continued (SIGCONT) and ended (SIGTERM).
# 6. PY tools/check_guard_e2e.py OUTDIR: PASS/FAIL per check, OUTDIR/summary.md and summary.json.
#
# --gpudoc BIN: the gpudoc binary (default: build/src/cli/gpudoc of this checkout, else gpudoc on
# PATH). --python PY: an
# interpreter with torch (default python3). --device: the CUDA index both processes use (default 0),
# or cpu (tiny sizes, for CI; the job names GPU 0 to the guard). --speed S: the replay runs S times
# as fast (default 1; the levels then come S times sooner). --max-latency-ms: the latency check's
# bound (default 300, the guard's own; a CI run on a loaded machine gives a hang guard instead).
# Exit codes: 0 every check passed; 1 a check failed; 2 bad usage; 3 no gpudoc, no python with
# torch, or the non-critical process did not start. NVLink multicast stays off; no GPU setting is
# changed.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
repo=$(cd "$(dirname "$0")/.." && pwd)
G=""
PY=python3
device=0
speed=1
trace=$repo/tests/data/gemm_saturated.jsonl
max_latency=300
usage() { sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
abspath() { [[ "$1" == */* && "$1" != /* ]] && echo "$PWD/$1" || echo "$1"; }
out=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --gpudoc) G=$(abspath "${2:?--gpudoc needs a binary}"); shift ;;
    --python) PY=$(abspath "${2:?--python needs an interpreter}"); shift ;;
    --device) device=${2:?--device needs cpu or an index}; shift ;;
    --speed) speed=${2:?--speed needs a number}; shift ;;
    --trace) trace=$(abspath "${2:?--trace needs a file}"); shift ;;
    --max-latency-ms) max_latency=${2:?--max-latency-ms needs milliseconds}; shift ;;
    -h|--help) usage ;;
    -*) echo "guard_e2e.sh: unknown option $1" >&2; exit 2 ;;
    *) [[ -z "$out" ]] || usage; out=$1 ;;
  esac
  shift
done
[[ -n "$out" ]] || usage
[[ "$device" == cpu || "$device" =~ ^[0-9]+$ ]] || { echo "guard_e2e.sh: --device is cpu or an index" >&2; exit 2; }
[[ "$speed" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "guard_e2e.sh: --speed is a positive number" >&2; exit 2; }
[[ "$max_latency" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "guard_e2e.sh: --max-latency-ms is a positive number" >&2; exit 2; }
if [[ -z "$G" ]]; then
  if [[ -x "$repo/build/src/cli/gpudoc" ]]; then G=$repo/build/src/cli/gpudoc; else G=$(command -v gpudoc || true); fi
fi
[[ -n "$G" && -x "$G" ]] || { echo "guard_e2e.sh: no gpudoc binary (build it, or give --gpudoc BIN)" >&2; exit 3; }
"$G" guard --help 2>&1 | grep -q -- --policy || { echo "guard_e2e.sh: $G has no 'guard' command (its help names no --policy)" >&2; exit 3; }
"$PY" -c 'import torch' 2>/dev/null || { echo "guard_e2e.sh: $PY cannot import torch (give --python PY)" >&2; exit 3; }
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 2
[[ -e "$out/guard.jsonl" ]] && { echo "guard_e2e.sh: $out already holds a run (guard.jsonl); give a new folder" >&2; exit 2; }
cd "$repo" || exit 2

if [[ "$device" == cpu ]]; then
  model=(--width 64 --layers 2 --heads 4 --context 32 --vocab 512 --batch-size 4 --effective-batch 8 --workers 1)
else
  # Small enough that a checkpoint (model + AdamW, ~27 MB) is written, synced and verified well
  # within the 300 ms the guard allows from its sample to the ack.
  model=(--width 192 --layers 4 --heads 4 --context 256 --vocab 2048 --batch-size 16 --effective-batch 64 --workers 4)
fi
step() { echo "== $(date +%T) $*"; }

step "thermal ramp from $trace"
"$PY" tools/thermal_ramp.py "$trace" "$out/ramp.jsonl" || exit 1
"$G" trace info "$out/ramp.jsonl" >"$out/ramp.info.txt" 2>&1 || { cat "$out/ramp.info.txt"; echo "guard_e2e.sh: gpudoc does not read the ramp" >&2; exit 1; }
ramp_s=$(tail -n 1 "$out/ramp.jsonl" | "$PY" -c "import json,sys; print(int(json.loads(sys.stdin.read())['t']) + 1)")
train_s=$("$PY" -c "print(round($ramp_s / $speed + 60))")

step "non-critical process on device $device"
"$PY" workloads/guard_noncritical.py --device "$device" --duration $((train_s + 120)) \
  >"$out/noncritical.log" 2>"$out/noncritical.err" &
nc_wrapper=$!
nc_pid=""
for _ in $(seq 1 1200); do
  nc_pid=$(grep -m1 '"event": "start"' "$out/noncritical.log" 2>/dev/null | grep -o '"pid": [0-9]*' | grep -o '[0-9]*$')
  [[ -n "$nc_pid" ]] && break
  kill -0 "$nc_wrapper" 2>/dev/null || break
  sleep 0.1
done
[[ -n "$nc_pid" ]] || { cat "$out/noncritical.err" >&2; echo "guard_e2e.sh: the non-critical process did not start" >&2; exit 3; }
stop_noncritical() {
  kill -CONT "$nc_pid" 2>/dev/null
  kill -TERM "$nc_pid" 2>/dev/null
  wait "$nc_wrapper" 2>/dev/null
}
trap 'stop_noncritical; exit 130' INT TERM
echo "   pid $nc_pid, comm $(cat /proc/$nc_pid/comm 2>/dev/null)"

step "gpudoc guard -- guard_train.py (replay at speed $speed, ~${ramp_s} s of ramp)"
guard_start=$(date +%s.%N)
"$PY" - "$out/e2e.json" "$device" "$speed" "$G" "$PY" "$out/ramp.jsonl" "$guard_start" "$nc_pid" <<'PY'
import json, sys
path, device, speed, gpudoc, python, ramp, start, pid = sys.argv[1:]
json.dump({"device": device, "speed": float(speed), "gpudoc": gpudoc, "python": python, "ramp": ramp,
           "guard_start_unix": float(start), "noncritical_pid": int(pid)}, open(path, "w"), indent=2)
PY
backend="replay:$out/ramp.jsonl"
[[ "$speed" == 1 ]] || backend+="@$speed"
GPUDOC_BACKEND="$backend" "$G" guard --policy tools/guard_e2e.policy --log "$out/guard.jsonl" -- \
  "$PY" workloads/guard_train.py --device "$device" --duration "$train_s" --controller fixed "${model[@]}" \
  --ckpt-dir "$out/ckpt" --state-digest "$out/digest.jsonl" --eval-every-s 5 --seed 1 \
  >"$out/train.log" 2>"$out/train.err"
echo $? >"$out/train.rc"
echo "   exit $(cat "$out/train.rc")"

ckpt=$("$PY" -c 'import sys; sys.path.insert(0, "tools"); import guard_log as G
ends = [r for r in G.read_gpudoc_lines(sys.argv[1]) if r.get("event") == "end"]
print(ends[-1].get("checkpoint_path") or "" if ends else "")' "$out/train.log")
if [[ -n "$ckpt" && -f "$ckpt" ]]; then
  step "resume from $ckpt"
  env -u GPUDOC_GUARD_SOCKET "$PY" workloads/guard_train.py --device "$device" --duration 4 --controller fixed \
    "${model[@]}" --ckpt-dir "$out/ckpt-resume" --state-digest "$out/digest.jsonl" --eval-every-s 0 --seed 1 \
    --resume "$ckpt" >"$out/resume.log" 2>"$out/resume.err"
  echo $? >"$out/resume.rc"
  echo "   exit $(cat "$out/resume.rc")"
else
  echo "   no checkpoint to resume from"
fi

step "ending the non-critical process"
stop_noncritical
trap - INT TERM

step "checks"
"$PY" tools/check_guard_e2e.py "$out" --max-latency-ms "$max_latency"
