#!/usr/bin/env bash
# Checks gpudoc's cost accounting on a real training run, on a GPU machine (docs/cost.md):
#   tools/cost_check.sh OUTDIR [GPUDOC] [SECONDS]
# runs workloads/programs/grad_accum_train.py (a transformer LM, bf16, AdamW) for SECONDS (default
# 60) under `gpudoc diagnose --json -o OUTDIR/run.jsonl -- python3 tools/nvml_energy.py ...`: gpudoc
# records the run and accounts its cost, and tools/nvml_energy.py, another reader of NVML (ctypes on
# libnvidia-ml.so.1), reads each GPU's energy counter at the command's start and end. Then
# tools/cost_check.py checks that gpudoc's energy is within 2 % of that counter and of the integral
# of the power readings, and that useful + causes + unexplained is the GPU time exactly and the
# energy exactly. Prices (made up, for the money lines) come from the environment.
# Writes OUTDIR/{run.jsonl,diagnose.json,diagnose.txt,nvml.json,cost_check.txt}; exit 0 when every
# check holds, 1 when one fails, 2 on bad usage, 3 without a GPU or torch.
set -euo pipefail

usage() {
  echo "usage: tools/cost_check.sh OUTDIR [GPUDOC] [SECONDS]" >&2
  exit 2
}
[[ $# -ge 1 && $# -le 3 ]] || usage
out=$1
here=$(cd "$(dirname "$0")/.." && pwd)
gpudoc=${2:-$here/build-portable/src/cli/gpudoc}
seconds=${3:-60}
[[ -x $gpudoc ]] || { echo "cost_check: no gpudoc at $gpudoc (give its path)" >&2; exit 2; }
[[ $seconds =~ ^[0-9]+$ ]] || usage
python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)' ||
  { echo "cost_check: needs python3 with torch and a CUDA GPU" >&2; exit 3; }
mkdir -p "$out"

export GPUDOC_PRICE_GPU_HOUR=3.72 GPUDOC_PRICE_KWH=0.14 GPUDOC_PUE=1.3 GPUDOC_CO2_PER_KWH=380 GPUDOC_CURRENCY=USD
job=(python3 "$here/tools/nvml_energy.py" --out "$out/nvml.json" --
     python3 "$here/workloads/programs/grad_accum_train.py" --duration "$seconds")
# diagnose exits 1 when a finding is at or above warning: that is the diagnosis, not a failed check.
rc=0
"$gpudoc" diagnose --json -o "$out/run.jsonl" -- "${job[@]}" >"$out/diagnose.json" 2>"$out/diagnose.stderr" || rc=$?
[[ $rc -le 1 ]] || { echo "cost_check: gpudoc diagnose exited $rc (see $out/diagnose.stderr)" >&2; exit 1; }
"$gpudoc" diagnose "$out/run.jsonl" >"$out/diagnose.txt" || true
python3 "$here/tools/cost_check.py" "$out/diagnose.json" "$out/nvml.json" "$out/run.jsonl" | tee "$out/cost_check.txt"
