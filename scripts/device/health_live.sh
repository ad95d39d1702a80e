#!/usr/bin/env bash
# gpudoc health on the GPU machine: the JSON and the terminal form, each with its wall time.
#   scripts/device/health_live.sh OUTDIR        (binary: .device/bin/gpudoc, or $GPUDOC)
set -uo pipefail
out="${1:?usage: health_live.sh OUTDIR}"
gpudoc="${GPUDOC:-.device/bin/gpudoc}"
mkdir -p "$out"
store="$out/health.db"
nvidia-smi -q -d PERFORMANCE,ECC,ROW_REMAPPER,TEMPERATURE,POWER,PCIE > "$out/nvidia-smi-q.txt" 2>&1 || true
nvidia-smi nvlink -s > "$out/nvidia-smi-nvlink.txt" 2>&1 || true

start=$(date +%s.%N)
"$gpudoc" health --json --store "$store" > "$out/health.json" 2> "$out/health.json.stderr"
rc_json=$?
end=$(date +%s.%N)
echo "health --json: exit $rc_json, wall $(echo "$end - $start" | bc) s" | tee "$out/summary.txt"

start=$(date +%s.%N)
"$gpudoc" health --store "$store" > "$out/health.txt" 2> "$out/health.txt.stderr"
rc_text=$?
end=$(date +%s.%N)
echo "health (terminal): exit $rc_text, wall $(echo "$end - $start" | bc) s" | tee -a "$out/summary.txt"

start=$(date +%s.%N)
"$gpudoc" health --no-load --json --no-store > "$out/health_noload.json" 2> "$out/health_noload.stderr"
echo "health --no-load: exit $?, wall $(echo "$(date +%s.%N) - $start" | bc) s" | tee -a "$out/summary.txt"

"$gpudoc" report --since 1d --store "$store" --html "$out/report.html" > "$out/report.txt" 2>&1
echo "report: exit $?" | tee -a "$out/summary.txt"
cat "$out/health.txt"
