#!/usr/bin/env bash
# Issue 3's live check: `gpudoc diagnose -- python3 workloads/X.py` on every reference workload,
# expected finding beside the findings gpudoc named. Run from the repository root on a GPU machine.
#   scripts/device/diagnose_live.sh OUTDIR [--multi-gpu]
# Writes OUTDIR/diagnose_live.md (the table), OUTDIR/NAME.json (gpudoc's JSON), OUTDIR/NAME.jsonl
# (the trace) and OUTDIR/NAME.log (stderr + the workload's output). EXPECTED "!ID" means ID must
# be absent (a balanced all-reduce: no pulse). Exit 0 when every expected
# finding was named and no unexpected warning was raised, 1 otherwise.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
out=${1:?usage: diagnose_live.sh OUTDIR [--multi-gpu]}
multi=0; [[ "${2:-}" == "--multi-gpu" ]] && multi=1
G=${GPUDOC:-.device/bin/gpudoc}
mkdir -p "$out"
table="$out/diagnose_live.md"
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
if [[ $multi -eq 0 ]]; then
  live idle            idle          -- python3 workloads/idle.py --duration 15
  live gemm_saturated  healthy       -- python3 workloads/gemm_saturated.py --duration 20
  live sawtooth_p1000  sawtooth      -- python3 workloads/sawtooth.py --duration 15 --period-ms 1000 --duty 0.5
  live sawtooth_p100   sawtooth      -- python3 workloads/sawtooth.py --duration 15 --period-ms 100 --duty 0.5
  live tiny_kernels    plateau       -- python3 workloads/tiny_kernels.py --duration 15
  live memory_bound    memory_bound  -- python3 workloads/memory_bound.py --duration 15 --gib 4 --op add
  live memory_growth   memory_growth -- python3 workloads/memory_growth.py --duration 20 --step-mib 512 --interval-s 1
  live contention      staircase     -- python3 workloads/contention.py --duration 16 --mode turns --phase-s 2
else
  live allreduce_slow1    pulse -- python3 workloads/allreduce_straggler.py --duration 20 --slow-rank 1 --slow-kind compute
  live allreduce_slow0    pulse -- python3 workloads/allreduce_straggler.py --duration 20 --slow-rank 0 --slow-kind compute
  live allreduce_balanced '!pulse' -- python3 workloads/allreduce_straggler.py --duration 20 --slow-rank -1
fi
echo "$bad failed" | tee -a "$table"
[[ $bad -eq 0 ]]
