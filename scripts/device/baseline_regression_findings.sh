#!/usr/bin/env bash
# Issue 5's last item on a GPU machine: a confirmed regression's report carries the findings of
# `gpudoc diagnose` over the run's trace. Records a workload baseline (the reference GEMM), checks
# it while a second process loads the same GPU, and requires exit 1, a "diagnosis" in the report
# that names at least one finding, and the trace file it names still on disk.
#   scripts/device/baseline_regression_findings.sh OUTDIR      (binary: .device/bin/gpudoc or $GPUDOC)
set -u
out=${1:?usage: baseline_regression_findings.sh OUTDIR}
G=${GPUDOC:-.device/bin/gpudoc}
mkdir -p "$out"
export GPUDOC_STORE="$out/gpudoc.db" PYTHONUNBUFFERED=1
bad=0
"$G" baseline record wl -- python3 workloads/gemm_saturated.py --duration 10 >"$out/record.out" 2>"$out/record.err"
echo "record rc=$? (want 0)" | tee "$out/summary.txt"
python3 workloads/gemm_saturated.py --duration 120 >"$out/load.out" 2>&1 &
load=$!
sleep 12
"$G" baseline check wl >"$out/check.out" 2>"$out/check.err"
rc=$?
"$G" baseline check wl --json --no-confirm >"$out/check.json" 2>"$out/check_json.err"
kill -TERM $load 2>/dev/null; wait $load 2>/dev/null
echo "loaded check rc=$rc (want 1)" | tee -a "$out/summary.txt"
[[ $rc -eq 1 ]] || bad=$((bad + 1))
trace=$(sed -n 's/.*trace of the run kept at \([^ ]*\) .*/\1/p' "$out/check.out" | head -1)
if [[ -n "$trace" && -f "$trace" ]]; then echo "trace kept: $trace" | tee -a "$out/summary.txt"
else echo "FAIL: trace named in the report is missing ($trace)" | tee -a "$out/summary.txt"; bad=$((bad + 1)); fi
if grep -q "No such file" "$out/check.out" || ! grep -qiE "diagnosis|finding" "$out/check.out"; then
  echo "FAIL: no diagnosis in the report" | tee -a "$out/summary.txt"; bad=$((bad + 1))
fi
python3 - "$out/check.json" <<'PY' | tee -a "$out/summary.txt"
import json, sys
d = json.load(open(sys.argv[1]))
f = d.get("findings") or d.get("regression", {}).get("findings")
print("findings in --json:", json.dumps(f)[:400] if f is not None else "(none)")
PY
tail -15 "$out/check.out"
echo "$bad failed" | tee -a "$out/summary.txt"
[[ $bad -eq 0 ]]
