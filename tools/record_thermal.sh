#!/usr/bin/env bash
# Record the load-step traces the guard's temperature forecast is measured on
# (tests/perf/forecast_accuracy.cpp): cold start to full load, load on and off, a long heat-up.
#
#   tools/record_thermal.sh OUTDIR [--gpudoc BIN] [--python PY] [--list]
#
# Four schedules of workloads/thermal_steps.py, each recorded with
#   gpudoc record --gpus G --period fast=100,slow=1000 -o OUTDIR/NAME.jsonl -- <workload>
# The split is fixed here, before anything is recorded: thermal_tune_* may be used to tune the
# forecast; thermal_heldout_* must not be looked at until the constants are committed.
# With two or more GPUs the schedules run two at a time (GPU 0 and GPU 1, each its own trace);
# with one they run one after another. Writes NAME.jsonl, NAME.log (the workload's ::gpudoc
# lines: each phase's start) and NAME.cmd.txt. Exits 1 if a recording failed, 2 on bad usage,
# 3 without a GPU. It never changes a GPU setting.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=record_thermal.sh
usage() { sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
die() { echo "$PROG: $1" >&2; exit "${2:-2}"; }

# name|schedule (seconds per phase; each about 110 s)
SCHEDULES=(
  "thermal_tune_heatup|idle:10,full:90,idle:15"
  "thermal_tune_onoff|idle:10,full:20,idle:12,full:20,idle:12,half:20,idle:12"
  "thermal_heldout_heatup|idle:5,full:95,idle:10"
  "thermal_heldout_steps|idle:8,full:40,half:20,full:25,idle:12"
)

outdir="" gpudoc="${GPUDOC:-}" py="${PYTHON:-python3}" list=0
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --gpudoc) [ $# -ge 2 ] || die "--gpudoc needs a path"; gpudoc=$2; shift ;;
    --python) [ $# -ge 2 ] || die "--python needs an interpreter"; py=$2; shift ;;
    --list) list=1 ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) [ -z "$outdir" ] || die "one OUTDIR only"; outdir=$1 ;;
  esac
  shift
done
if [ "$list" = 1 ]; then
  for s in "${SCHEDULES[@]}"; do echo "${s%%|*}: ${s#*|}"; done
  exit 0
fi
[ -n "$outdir" ] || die "give an OUTDIR (see --help)"
if [ -z "$gpudoc" ]; then
  if [ -x "$ROOT/build-portable/src/cli/gpudoc" ]; then gpudoc=$ROOT/build-portable/src/cli/gpudoc
  else gpudoc=$(command -v gpudoc || true); fi
fi
[ -x "$gpudoc" ] || die "no gpudoc binary (build it or give --gpudoc)"
ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
[ "${ngpus:-0}" -ge 1 ] || die "no GPU (nvidia-smi -L lists none)" 3
mkdir -p "$outdir" || die "cannot create $outdir"

record() {  # record NAME SCHEDULE GPU
  local name=$1 schedule=$2 gpu=$3
  local cmd=("$py" "$ROOT/workloads/thermal_steps.py" --device 0 --schedule "$schedule")
  printf 'gpu %s (CUDA_VISIBLE_DEVICES=%s)\n%s\n' "$gpu" "$gpu" "${cmd[*]}" > "$outdir/$name.cmd.txt"
  CUDA_VISIBLE_DEVICES=$gpu "$gpudoc" record -q --gpus "$gpu" --period fast=100,slow=1000 \
    -o "$outdir/$name.jsonl" -- "${cmd[@]}" > "$outdir/$name.log" 2>&1
}

export CUDA_DEVICE_ORDER=PCI_BUS_ID
rc=0
i=0
while [ $i -lt ${#SCHEDULES[@]} ]; do
  a=${SCHEDULES[$i]}
  if [ "$ngpus" -ge 2 ] && [ $((i + 1)) -lt ${#SCHEDULES[@]} ]; then
    b=${SCHEDULES[$((i + 1))]}
    echo "$PROG: ${a%%|*} on GPU 0 and ${b%%|*} on GPU 1" >&2
    record "${a%%|*}" "${a#*|}" 0 & pa=$!
    record "${b%%|*}" "${b#*|}" 1 & pb=$!
    wait $pa || rc=1
    wait $pb || rc=1
    i=$((i + 2))
  else
    echo "$PROG: ${a%%|*} on GPU 0" >&2
    record "${a%%|*}" "${a#*|}" 0 || rc=1
    i=$((i + 1))
  fi
done
exit $rc
