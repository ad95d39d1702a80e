#!/usr/bin/env bash
# The must-show of `gpudoc tune` on a GPU machine with PyTorch (an H200): three programs written
# without gpudoc in mind (workloads/tune/), each tuned within a budget, then the kept settings
# reproduced by independent runs of the job without gpudoc (tools/tune_check.py):
#   starved   a ResNet-like CNN fed by a slow Dataset, num_workers=0, pin_memory=False: a loader
#             change kept, at least 2x faster, reproduced within 5 points;
#   launch    a batch-1 inference loop bound by kernel launches: what is kept, reproduced within 5 points;
#   healthy   a bf16 LM-like loop that keeps the GPU busy (negative control): nothing kept;
#   heldout   a job never used while gpudoc tune was written (workloads/jobs/image_classify.py: a
#             torchvision ResNet-18 fed by two DataLoader workers decoding and augmenting JPEGs on
#             the CPU): whatever is kept, reproduced within 5 points.
# Every report (text, JSON, HTML), trial log and check lands in OUTDIR; a summary at the end.
# About 19 minutes of device time (budgets 5 + 5 + 1.5 minutes, and the independent runs): a trial
# of these jobs takes ~14 s on an H200 host (Python, PyTorch and CUDA start-up included), and one
# change needs about ten trials (two blocks of each arm, a confirmation, the final check). Run the
# groups in separate calls where a call is limited (TUNE_CHECKS).
#
#   tools/tune_checks.sh OUTDIR GPUDOC
#
# Each kept change is reproduced by six run pairs: one pair alone is too noisy to check within 5
# points (docs/results/tune.md, "How far independent runs differ among themselves").
#
# TUNE_CHECKS: a subset of "starved launch healthy heldout" (heldout: about 9 more minutes).
# Exit 1 when a check fails, 2 on bad usage.
set -uo pipefail
out=${1:?usage: tools/tune_checks.sh OUTDIR GPUDOC}
gpudoc=${2:?usage: tools/tune_checks.sh OUTDIR GPUDOC}
here=$(cd "$(dirname "$0")/.." && pwd)
[ -x "$gpudoc" ] || { echo "tune_checks.sh: $gpudoc: not an executable" >&2; exit 2; }
mkdir -p "$out"
# The shim as the lines to apply name it (python3 -m gpudoc.tune): this checkout's package.
export PYTHONPATH="$here/python${PYTHONPATH:+:$PYTHONPATH}"
# torch.compile's caches for the independent runs: in OUTDIR, not the machine's /tmp.
export TORCHINDUCTOR_CACHE_DIR="$out/torchinductor" TRITON_CACHE_DIR="$out/triton"
# The jobs' speed must depend on what gpudoc sets, not on this shell's environment.
unset OMP_NUM_THREADS PYTORCH_CUDA_ALLOC_CONF CUDA_MODULE_LOADING CUDA_DEVICE_MAX_CONNECTIONS
export NCCL_NVLS_ENABLE=0
groups=" ${TUNE_CHECKS:-starved launch healthy heldout} "
on() { [[ "$groups" == *" $1 "* ]]; }
failed=0
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nproc;
  python3 -c 'import torch; print("torch", torch.__version__)'; "$gpudoc" --version; } >"$out/machine.txt" 2>&1

# tune NAME BUDGET_MIN STEPS -- CMD...: the report as JSON, text and HTML, every trial's log.
tune() {
  local name=$1 budget=$2 steps=$3
  shift 4
  mkdir -p "$out/$name-logs"
  local t0=$SECONDS
  "$gpudoc" tune --budget "$budget" --steps "$steps" --warmup 3 --json --html "$out/$name.html" \
    --logs "$out/$name-logs" -- "$@" >"$out/$name.json" 2>"$out/$name.log"
  local rc=$?
  echo "$name: gpudoc tune exit $rc in $((SECONDS - t0)) s (budget $budget min)" | tee -a "$out/summary.txt"
  python3 - "$out/$name.json" >"$out/$name.txt" 2>&1 <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("kept:", [k["id"] for k in r["kept"]], "overall:", r["overall"] and r["overall"]["speedup_percent"])
print("diagnosis:", [(f["id"], f["severity"]) for f in r["diagnosis"]["findings"]])
for l in r["layers"]:
    for a in l["arms"]:
        print(f"  {l['layer']:9} {a['change']['id']:24} {a['outcome']:15} {a['reason']}")
print("apply:", *r["apply"], sep="\n  ")
print("not tried:", *[f"{n['id']}: {n['why']}" for n in r["not_tried"]], sep="\n  ")
PY
  return $rc
}

check() {  # check NAME ARGS...: tools/tune_check.py on NAME's report
  local name=$1
  shift
  python3 "$here/tools/tune_check.py" "$out/$name.json" --out "$out/$name.check.json" "$@" | tee -a "$out/summary.txt"
  [ "${PIPESTATUS[0]}" -eq 0 ] || failed=1
}

if on starved; then
  tune starved 5 10 -- python3 "$here/workloads/tune/starved_cnn.py" --steps 100000 || failed=1
  check starved --expect kept --min-speedup 100 --runs 6
fi
if on launch; then
  tune launch 5 10 -- python3 "$here/workloads/tune/infer_b1.py" --requests 10000000 || failed=1
  check launch --expect kept --runs 6
fi
if on healthy; then
  tune healthy 1.5 10 -- python3 "$here/workloads/tune/healthy_lm.py" --steps 100000 || failed=1
  check healthy --expect nothing
fi
if on heldout; then
  tune heldout 4 10 -- python3 "$here/workloads/jobs/image_classify.py" --arch resnet18 --batch-size 64 \
    --duration 3600 || failed=1
  check heldout --expect kept --runs 6
fi
echo "tune_checks.sh: $([ $failed -eq 0 ] && echo all passed || echo some FAILED); details in $out" | tee -a "$out/summary.txt"
exit $failed
