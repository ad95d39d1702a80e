#!/bin/bash
# Slurm Prolog (and, through epilog.sh, Epilog): gates this node on `gpudoc health --gate`.
#   slurm.conf:  Prolog=/etc/slurm/prolog.sh   Epilog=/etc/slurm/epilog.sh   (both files, one folder)
# `gpudoc health --gate` runs gpudoc's quick node checks and exits 0 when the node is healthy, or 1
# with a one-line reason on stdout. On 1 the node is drained with that reason:
#   scontrol update nodename=$SLURMD_NODENAME state=drain reason="gpudoc: <reason>"
# and, in the prolog, the job is kept off the node: the script exits 1, so Slurm requeues the job
# (held, unless SchedulerParameters has nohold_on_prolog_fail). A gate that hangs past
# GPUDOC_GATE_TIMEOUT drains the node too: a hung driver call is itself a sign of a sick GPU.
# Any other exit of gpudoc (not installed, no driver, a usage or internal error) is logged and
# passes by default, so that a broken gpudoc never drains a whole cluster.
#
# Settings (the environment, or /etc/default/gpudoc-gate, a file of NAME=VALUE lines):
#   GPUDOC_BIN            the gpudoc binary (default /usr/bin/gpudoc)
#   SCONTROL_BIN          scontrol (default: found on the system PATH)
#   GPUDOC_GATE_TIMEOUT   seconds the gate may take (default 30); keep it under PrologEpilogTimeout
#   GPUDOC_GATE_FAIL_JOB  1 (default): a failing prolog also fails the job's start; 0: drain only,
#                         the job still runs (it has the node already)
#   GPUDOC_GATE_ON_ERROR  pass (default) or drain: what a gpudoc that could not judge leads to
# Usage: prolog.sh [--phase prolog|epilog]
set -u
# Slurm runs prologs and epilogs without a search path.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH

phase=prolog
if [[ "${1:-}" == "--phase" && -n "${2:-}" ]]; then
  phase=$2
fi
defaults=${GPUDOC_GATE_DEFAULTS:-/etc/default/gpudoc-gate}
if [[ -r "$defaults" ]]; then
  # shellcheck source=/dev/null
  . "$defaults"
fi
gpudoc=${GPUDOC_BIN:-/usr/bin/gpudoc}
scontrol=${SCONTROL_BIN:-scontrol}
limit=${GPUDOC_GATE_TIMEOUT:-30}
fail_job=${GPUDOC_GATE_FAIL_JOB:-1}
on_error=${GPUDOC_GATE_ON_ERROR:-pass}
node=${SLURMD_NODENAME:-$(hostname -s)}

log() {
  echo "gpudoc-gate ($phase, job ${SLURM_JOB_ID:-?}): $*" >&2
  if command -v logger >/dev/null 2>&1; then
    logger -t gpudoc-gate -- "$phase job ${SLURM_JOB_ID:-?}: $*" 2>/dev/null || true
  fi
}

# drain REASON: drains this node; the exit status is the script's.
drain() {
  local reason="gpudoc: $1"
  reason=${reason//$'\r'/ }
  reason=${reason:0:250}
  log "draining $node: $reason"
  if ! "$scontrol" update "nodename=$node" state=drain "reason=$reason"; then
    log "scontrol could not drain $node"
    return 1  # a failed prolog or epilog makes Slurm drain the node itself
  fi
  if [[ "$phase" == prolog && "$fail_job" == 1 ]]; then
    return 1
  fi
  return 0
}

out=$(timeout --kill-after=5 "$limit" "$gpudoc" health --gate)  # its stderr goes to slurmd's log
rc=$?
reason=$(printf '%s\n' "$out" | sed -n '/[^[:space:]]/{p;q;}')
case $rc in
  0) exit 0 ;;
  1) drain "${reason:-health --gate failed without a reason}"; exit ;;
  124 | 137) drain "health --gate did not finish in ${limit}s (a GPU or its driver hangs?)"; exit ;;
  *)
    why="gpudoc health --gate could not judge the node (exit $rc${reason:+: $reason})"
    [[ $rc == 126 || $rc == 127 ]] && why="$gpudoc cannot be run (exit $rc)"
    if [[ "$on_error" == drain ]]; then
      drain "$why"
      exit
    fi
    log "$why; passing (GPUDOC_GATE_ON_ERROR=pass)"
    exit 0
    ;;
esac
