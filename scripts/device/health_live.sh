#!/usr/bin/env bash
# gpudoc health on the GPU machine: the JSON and the terminal form, each with its wall time, then
# the report over the store they wrote.
#   scripts/device/health_live.sh OUTDIR        (binary: .device/bin/gpudoc, or $GPUDOC)
# Writes OUTDIR/summary.txt (exit code and wall seconds of each run), health.json, health.txt,
# health_noload.json, report.html/.txt, and nvidia-smi's view of the same facts to compare against.
# Needs only bash and GNU date (no bc, no python3: the GPU machines lack bc). Exit 0 when every
# run finished (an exit of 1, "a check failed", counts as finished), 1 otherwise.
set -uo pipefail
out="${1:?usage: health_live.sh OUTDIR}"
gpudoc="${GPUDOC:-.device/bin/gpudoc}"
budget_s=20   # the bound for the whole check
if [[ ! -x "$gpudoc" ]]; then
  echo "health_live.sh: no gpudoc binary at $gpudoc (set GPUDOC)" >&2
  exit 1
fi
mkdir -p "$out"
store="$out/health.db"
: > "$out/summary.txt"
bad=0

if command -v nvidia-smi > /dev/null; then
  nvidia-smi -q -d PERFORMANCE,ECC,ROW_REMAPPER,TEMPERATURE,POWER > "$out/nvidia-smi-q.txt" 2>&1 || true
  nvidia-smi nvlink -s > "$out/nvidia-smi-nvlink.txt" 2>&1 || true
  nvidia-smi nvlink -e > "$out/nvidia-smi-nvlink-errors.txt" 2>&1 || true
fi

# Wall time in seconds with millisecond resolution, from nanoseconds since the epoch (GNU date).
now_ns() { date +%s%N; }
seconds_since() {   # seconds_since START_NS -> "12.345"
  local d=$(( $(now_ns) - $1 ))
  printf '%d.%03d' $(( d / 1000000000 )) $(( (d / 1000000) % 1000 ))
}

# run LABEL STDOUT_FILE STDERR_FILE -- CMD...: runs CMD, records exit code and wall time.
run() {
  local label=$1 stdout=$2 stderr=$3
  shift 4
  local start rc wall
  start=$(now_ns)
  "$@" > "$stdout" 2> "$stderr"
  rc=$?
  wall=$(seconds_since "$start")
  local verdict="finished"
  (( rc > 1 )) && { verdict="FAILED"; bad=1; }
  local within=""
  [[ "$label" == health* ]] && within=$( (( ${wall%.*} < budget_s )) && echo ", within ${budget_s} s" || echo ", OVER ${budget_s} s")
  echo "$label: exit $rc ($verdict), wall $wall s$within" | tee -a "$out/summary.txt"
}

run "health --json" "$out/health.json" "$out/health.json.stderr" -- \
  "$gpudoc" health --json --store "$store"
run "health (terminal)" "$out/health.txt" "$out/health.txt.stderr" -- \
  "$gpudoc" health --store "$store"
run "health --no-load --json" "$out/health_noload.json" "$out/health_noload.stderr" -- \
  "$gpudoc" health --no-load --json --no-store
run "report" "$out/report.txt" "$out/report.stderr" -- \
  "$gpudoc" report --since 1d --store "$store" --html "$out/report.html"

cat "$out/health.txt"
exit "$bad"
