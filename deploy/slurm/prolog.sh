#!/bin/bash
# Slurm Prolog (and, through epilog.sh, Epilog): gates this node on `gpudoc health --gate`.
#   slurm.conf:  Prolog=/etc/slurm/prolog.sh   Epilog=/etc/slurm/epilog.sh   (both files, one folder)
# `gpudoc health --gate` runs gpudoc's quick node checks and exits 0 when the node is healthy, or 1
# with a one-line reason on stdout. On 1 the node is drained with that reason:
#   scontrol update nodename=$SLURMD_NODENAME state=drain reason="gpudoc: <reason>"
# and, in the prolog, the job is kept off the node: the script exits 1, so Slurm requeues the job
# (held, unless SchedulerParameters has nohold_on_prolog_fail). A gate that hangs past
# GPUDOC_GATE_TIMEOUT drains the node too: a hung driver call is itself a sign of a sick GPU.
# It fails closed: a gpudoc that cannot check the node (exit 3: no NVIDIA driver or NVML; not
# installed or not executable; a usage or internal error) drains it too, with the reason, since a
# node whose driver is broken must not take jobs. GPUDOC_GATE_ON_ERROR=pass lets such nodes run
# jobs (logged) where gpudoc is being rolled out.
# Each run is kept in the store that `gpudoc serve` exports (GPUDOC_STORE, default
# /var/lib/gpudoc/gpudoc.db, the path of deploy/systemd and deploy/kubernetes too), so the health
# series and alerts see what the gate saw.
#
# Settings (the environment, or /etc/default/gpudoc-gate, a file of NAME=VALUE lines):
#   GPUDOC_BIN            the gpudoc binary (default /usr/bin/gpudoc)
#   GPUDOC_STORE          the store the results are kept in (default /var/lib/gpudoc/gpudoc.db)
#   SCONTROL_BIN          scontrol (default: found on the system PATH)
#   GPUDOC_GATE_TIMEOUT   seconds the gate may take (default 30); keep it under PrologEpilogTimeout
#   GPUDOC_GATE_FAIL_JOB  1 (default): a failing prolog also fails the job's start; 0: drain only,
#                         the job still runs (it has the node already)
#   GPUDOC_GATE_ON_ERROR  drain (default) or pass: what a gpudoc that could not check the node leads to
# Usage: prolog.sh [--phase prolog|epilog]
set -u
# Slurm runs prologs and epilogs without a search path.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
# The store's files readable by gpudoc serve's unprivileged user, whatever slurmd's umask.
umask 022

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
on_error=${GPUDOC_GATE_ON_ERROR:-drain}
store=${GPUDOC_STORE:-/var/lib/gpudoc/gpudoc.db}
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

# cannot_check WHY: gpudoc could not check the node; drains it (or, when asked, lets it pass).
cannot_check() {
  if [[ "$on_error" == pass ]]; then
    log "$1; passing (GPUDOC_GATE_ON_ERROR=pass)"
    return 0
  fi
  drain "$1"
}

if ! command -v "$gpudoc" >/dev/null 2>&1; then
  cannot_check "cannot check the node: $gpudoc is not installed or not executable"
  exit
fi
out=$(timeout --kill-after=5 "$limit" "$gpudoc" health --gate --store "$store")  # its stderr goes to slurmd's log
rc=$?
reason=$(printf '%s\n' "$out" | sed -n '/[^[:space:]]/{p;q;}')
case $rc in
  0) exit 0 ;;
  1) drain "${reason:-health --gate failed without a reason}"; exit ;;
  124 | 137) drain "health --gate did not finish in ${limit}s (a GPU or its driver hangs?)"; exit ;;
  3)
    # The gate's own line says why ("cannot check this node: ..."); an older gpudoc's is prefixed.
    why="cannot check the node (exit 3, no GPU readable)"
    if [[ "$reason" == "cannot check"* ]]; then
      why=$reason
    elif [[ -n "$reason" ]]; then
      why+=": $reason"
    fi
    cannot_check "$why"
    exit
    ;;
  126 | 127) cannot_check "cannot check the node: $gpudoc cannot be run (exit $rc)"; exit ;;
  *) cannot_check "cannot check the node: health --gate exited $rc${reason:+: $reason}"; exit ;;
esac
