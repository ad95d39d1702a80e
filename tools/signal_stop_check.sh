#!/usr/bin/env bash
# The stop signals on a real GPU: each command that runs a workload, with a PyTorch job that has a
# child process of its own, gets SIGHUP or SIGTERM while the job computes; then no process of the
# job may be left, gpudoc must exit 128 + the signal, a trace it wrote must end with its end line,
# and no private folder of gpudoc may be left in TMPDIR (README "Signals").
#
#   tools/signal_stop_check.sh OUTDIR [--gpudoc BIN] [--python PY]
#
# Needs 1 GPU and python3 with torch. Writes OUTDIR/summary.txt (a line per case: PASS or FAIL and
# why) and each case's stderr; exit 0 when every case passed, 1 otherwise, 2 on bad usage.
set -uo pipefail
usage() { echo "usage: tools/signal_stop_check.sh OUTDIR [--gpudoc BIN] [--python PY]" >&2; exit 2; }
[[ $# -ge 1 ]] || usage
out="$1"; shift
repo="$(cd "$(dirname "$0")/.." && pwd)"
gpudoc="$repo/build-portable/src/cli/gpudoc"
python="python3"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --gpudoc) gpudoc="$2"; shift 2 ;;
    --python) python="$2"; shift 2 ;;
    *) usage ;;
  esac
done
[[ -x "$gpudoc" ]] || { echo "signal_stop_check: no gpudoc at $gpudoc" >&2; exit 2; }
mkdir -p "$out" || exit 2
out="$(cd "$out" && pwd)"
tmp="$(mktemp -d)"  # the private TMPDIR gpudoc runs with: anything left in it is a leftover
trap 'rm -rf "$tmp"' EXIT
summary="$out/summary.txt"
: >"$summary"

# The job: GEMMs on the GPU for up to 120 s, with a child (a sleep) that must go with it. It writes
# its pid and its child's to MARK once it computes. ($1 and $2 are the inner shell's arguments.)
# shellcheck disable=SC2016
job=(bash -c '
  sleep 1000 & echo "$!" >"$1.child"
  exec "$2" -c "
import os, sys, time, torch
a = torch.randn(8192, 8192, device=\"cuda\", dtype=torch.bfloat16)
open(sys.argv[1], \"w\").write(str(os.getpid()))
t = time.time()
while time.time() - t < 120:
    b = a @ a
    torch.cuda.synchronize()
" "$1"' job)

failures=0
check_case() {  # NAME SIGNAL TRACE(or -) GPUDOC-ARGS... -- (the job is appended)
  local name="$1" sig="$2" trace="$3"; shift 3
  local mark="$tmp/mark-$name" err="$out/$name.stderr"
  rm -f "$mark" "$mark.child"
  TMPDIR="$tmp" "$gpudoc" "$@" -- "${job[@]}" "$mark" "$python" >"$out/$name.stdout" 2>"$err" </dev/null &
  local gpid=$! waited=0
  while [[ ! -s "$mark" && $waited -lt 600 ]]; do sleep 0.1; waited=$((waited + 1)); done
  local jpid cpid why=""
  jpid="$(cat "$mark" 2>/dev/null)"; cpid="$(cat "$mark.child" 2>/dev/null)"
  [[ -n "$jpid" ]] || why="the job never started computing; "
  sleep 2
  kill "-$sig" "$gpid"
  local rc t0=$SECONDS
  wait "$gpid"; rc=$?
  local want=$((128 + $(kill -l "$sig")))
  [[ $rc -eq $want ]] || why+="exit $rc, not $want; "
  sleep 0.5  # a child whose parent just died is being reparented
  for p in $jpid $cpid; do
    # A zombie (state Z) has ended; it waits for a parent that reaps (PID 1 in some containers never does).
    local state; state="$(ps -o stat= -p "$p" 2>/dev/null)"
    if [[ -n "$state" && "$state" != Z* ]]; then
      why+="pid $p of the job still runs ($(ps -o comm= -p "$p"), state $state); "
      kill -9 "$p"
    fi
  done
  if [[ "$trace" != "-" ]]; then
    local last; last="$(tail -n 1 "$trace" 2>/dev/null)"
    [[ "$last" == *'"type":"end"'* || "$last" == *'"type": "end"'* ]] || why+="the trace does not end with its end line; "
    "$gpudoc" trace info "$trace" >/dev/null 2>>"$err" || why+="trace info refuses the trace; "
  fi
  local left; left="$(find "$tmp" -mindepth 1 -maxdepth 1 -name 'gpudoc-*' | head -3)"
  [[ -z "$left" ]] || { why+="left in TMPDIR: $left; "; rm -rf "$tmp"/gpudoc-*; }
  if [[ -z "$why" ]]; then
    echo "PASS $name: SIG$sig, exit $rc, $((SECONDS - t0)) s to stop" | tee -a "$summary"
  else
    echo "FAIL $name: SIG$sig: $why" | tee -a "$summary"
    failures=$((failures + 1))
  fi
}

check_case record-hup HUP "$out/record.jsonl" record -o "$out/record.jsonl"
check_case record-term TERM "$out/record-term.jsonl" record -o "$out/record-term.jsonl"
check_case diagnose-hup HUP "$out/diagnose.jsonl" diagnose -o "$out/diagnose.jsonl"
check_case diagnose-term TERM - diagnose
check_case guard-term TERM - guard --no-store
check_case guard-hup HUP - guard --no-store
check_case slice-hup HUP - slice --sm 50
check_case profile-term TERM - profile
check_case profile-hup HUP - profile

echo "$failures failed" | tee -a "$summary"
[[ $failures -eq 0 ]]
