#!/usr/bin/env bash
# `gpudoc diagnose -- python3 workloads/X.py` on every reference workload, live: the finding each
# workload should cause beside the findings gpudoc named. On a machine with one or more NVIDIA GPUs
# and python3 with torch; with two or more, the all-reduce straggler workloads too.
#
#   tools/diagnose_workloads.sh [--gpudoc BIN] [--single-gpu-only] OUTDIR
#
# Writes OUTDIR/diagnose_workloads.md (the table, also printed), OUTDIR/NAME.json (gpudoc's JSON),
# OUTDIR/NAME.jsonl (the trace) and OUTDIR/NAME.log (stderr and the workload's output). An expected
# "!ID" means ID must be absent (a balanced all-reduce: no pulse). Exit 0 when every expected
# finding was named and no other finding reached warning, 1 otherwise, 2 on bad usage.
# The traces it leaves are a fresh set like tests/data's; results: docs/results/diagnosis-accuracy.md.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
repo=$(cd "$(dirname "$0")/.." && pwd)
G=$repo/build/src/cli/gpudoc
multi=auto
while [[ $# -gt 1 ]]; do
  case "$1" in
    --gpudoc) shift; G=${1:?--gpudoc needs a binary}; [[ "$G" == */* && "$G" != /* ]] && G="$PWD/$G" ;;
    --single-gpu-only) multi=0 ;;
    *) echo "diagnose_workloads.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[[ $# -eq 1 && "$1" != -* ]] || { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[[ -x "$G" ]] || { echo "diagnose_workloads.sh: no gpudoc binary at $G (give --gpudoc BIN)" >&2; exit 2; }
mkdir -p "$1" && out=$(cd "$1" && pwd) || exit 2
cd "$repo" || exit 2
if [[ $multi == auto ]]; then
  multi=0
  (( $(nvidia-smi -L 2>/dev/null | grep -c '^GPU ') >= 2 )) && multi=1
fi
table="$out/diagnose_workloads.md"
echo "| workload | expected | gpudoc named (severity) | exit | verdict | wall s |" >"$table"
echo "|---|---|---|---|---|---|" >>"$table"
bad=0
# live NAME EXPECTED -- CMD...
live() {
  local name=$1 expected=$2; shift 3
  local t0=$SECONDS
  "$G" diagnose --json -o "$out/$name.jsonl" -- "$@" >"$out/$name.json" 2>"$out/$name.log"
  local rc=$?
  local found verdict
  found=$(python3 - "$out/$name.json" "$expected" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"(no JSON: {e})"); sys.exit()
fs = d.get("findings", [])
print(", ".join(f"{f['id']} ({f.get('severity','?')})" for f in fs) or "(none)")
PY
)
  verdict=$(python3 - "$out/$name.json" "$expected" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception:
    print("FAIL"); sys.exit()
exp = sys.argv[2]
fs = d.get("findings", [])
ids = {f["id"] for f in fs}
if exp.startswith("!"):   # "!pulse": that finding must be absent; others may appear
    print("ok" if exp[1:] not in ids else "FAIL"); sys.exit()
wrong = [f["id"] for f in fs if f["id"] != exp and f.get("severity") in ("warning", "critical")]
print("ok" if exp in ids and not wrong else "FAIL")
PY
)
  [[ "$verdict" == ok ]] || bad=$((bad + 1))
  echo "| \`$name\` | $expected | $found | $rc | $verdict | $((SECONDS - t0)) |" | tee -a "$table"
}
live idle            idle          -- python3 workloads/idle.py --duration 15
live gemm_saturated  healthy       -- python3 workloads/gemm_saturated.py --duration 20
live sawtooth_p1000  sawtooth      -- python3 workloads/sawtooth.py --duration 15 --period-ms 1000 --duty 0.5
live sawtooth_p100   sawtooth      -- python3 workloads/sawtooth.py --duration 15 --period-ms 100 --duty 0.5
live tiny_kernels    plateau       -- python3 workloads/tiny_kernels.py --duration 15
live memory_bound    memory_bound  -- python3 workloads/memory_bound.py --duration 15 --gib 4 --op add
live memory_growth   memory_growth -- python3 workloads/memory_growth.py --duration 20 --step-mib 512 --interval-s 1
live contention      staircase     -- python3 workloads/contention.py --duration 16 --mode turns --phase-s 2
if [[ $multi -eq 1 ]]; then
  live allreduce_slow1    pulse -- python3 workloads/allreduce_straggler.py --duration 20 --slow-rank 1 --slow-kind compute
  live allreduce_slow0    pulse -- python3 workloads/allreduce_straggler.py --duration 20 --slow-rank 0 --slow-kind compute
  live allreduce_balanced '!pulse' -- python3 workloads/allreduce_straggler.py --duration 20 --slow-rank -1
fi
echo "$bad failed" | tee -a "$table"
[[ $bad -eq 0 ]]
