#!/usr/bin/env bash
# Issue 5 on a GPU machine: golden baselines recorded, checked again (want exit 0), and a
# regression caught when one is provoked WITHOUT touching any GPU setting — a second process
# loads the GPU during the check (python3 workloads/gemm_saturated.py), want exit 1.
#   scripts/device/baseline_demo.sh OUTDIR
# Binaries come prebuilt in .device/bin (B=... to change). Everything is logged to OUTDIR; the
# script goes on past failures and prints a summary "step rc=N (want M)" per step.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${1:?usage: baseline_demo.sh OUTDIR}
B=${B:-.device/bin}
G="$B/gpudoc"
mkdir -p "$OUT"
STORE="$OUT/gpudoc.db"
export GPUDOC_STORE=$STORE
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"

# The bench keys: $BENCH_KEYS, else those that exist in this build (hbm and gemm when present).
keys=${BENCH_KEYS:-}
[[ -n "$keys" ]] || keys=$("$G" bench --list --json 2>/dev/null | python3 -c 'import json,sys; ks=[b["key"] for b in json.load(sys.stdin)]; print(",".join(g for g in ("hbm","gemm") if any(k.startswith(g+".") for k in ks)) or "hbm")')

step() {   # step NAME WANT CMD...
  local name=$1 want=$2; shift 2
  local t0=$(date +%s.%N)
  echo "== $name: $*" | tee -a "$OUT/commands.txt"
  "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
  local rc=$?
  local dt=$(python3 -c "print(f'{$(date +%s.%N)-$t0:.1f}')")
  echo "$name rc=$rc (want $want) ${dt}s" | tee -a "$SUMMARY"
  tail -25 "$OUT/$name.out"
}

{
  date -u +%Y-%m-%dT%H:%M:%SZ; uname -a; nvidia-smi -L
  nvidia-smi --query-gpu=driver_version,pstate,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.device_count())'
  "$G" --version; echo "bench keys: $keys"
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

# 1. Hardware and framework baselines; the probe with 3 repeats (60 samples).
step record_hw 0 "$G" baseline record hw --bench "$keys" --quick --json
step record_probe 0 "$G" baseline record probe --probe --repeat 3 --json
# 2. A workload baseline: the reference GEMM for 20 s (step_ms, tflops; gpudoc adds wall time,
#    peak GPU memory of the process tree, utilization and energy).
step record_workload 0 "$G" baseline record gemm --json -- python3 workloads/gemm_saturated.py --duration "${WORKLOAD_S:-20}"

# 3. The same again: every check should pass.
step check_hw 0 "$G" baseline check hw
step check_probe 0 "$G" baseline check probe
step check_workload 0 "$G" baseline check gemm

# 4. Provoke a regression without touching the GPU's settings: a second process runs the same
#    GEMM load on the GPU during the whole check (and its confirmation run); time-slicing halves
#    what each gets.
python3 workloads/gemm_saturated.py --duration 400 >"$OUT/load.out" 2>"$OUT/load.err" &
LOAD=$!
sleep 15   # its setup (torch import, allocation, warm-up) is done
step loaded_check_probe 1 "$G" baseline check probe
step loaded_check_workload 1 "$G" baseline check gemm
step loaded_check_hw 1 "$G" baseline check hw
step loaded_check_probe_json 1 "$G" baseline check probe --json --no-confirm
kill -TERM $LOAD 2>/dev/null; wait $LOAD 2>/dev/null

# 5. And back to normal once the load is gone.
sleep 5
step after_check_probe 0 "$G" baseline check probe

# 6. History, list, show.
step list 0 "$G" baseline list
step history_probe 0 "$G" baseline history probe
step history_gemm 0 "$G" baseline history gemm
step history_probe_html 0 "$G" baseline history probe --html "$OUT/history_probe.html"
step history_hw_html 0 "$G" baseline history hw --html "$OUT/history_hw.html"
step show_hw 0 "$G" baseline show hw
step show_hw_json 0 "$G" baseline show hw --json
sqlite3 "$STORE" 'PRAGMA integrity_check; PRAGMA journal_mode; PRAGMA user_version; SELECT role, verdict, count(*) FROM runs GROUP BY 1, 2' >"$OUT/store.txt" 2>&1

echo "== summary"; cat "$SUMMARY"
awk '{ split($2, a, "="); w=$4; sub(/\)/, "", w); if (a[2] != w) bad++ } END { exit bad > 0 }' "$SUMMARY"
