#!/usr/bin/env bash
# gpudoc serve on a GPU node as deploy/ sets it up, checked on the live GPUs: the health run of the
# timer (deploy/systemd/gpudoc-health.service's command) into the shared store, the Slurm prolog's
# gate (deploy/slurm/prolog.sh, with a stand-in scontrol that only logs) into the same store, then
# serve reading that store, twice (gpudoc's names, then --dcgm-compatible) while a real job runs on
# the GPU; the summary says which series each scrape holds and what the job's processes carried.
#
# Usage: tools/serve_node_check.sh OUTDIR GPUDOC [-- JOB ARGS...]
#   default job: python3 workloads/gemm_saturated.py --duration 25 (PyTorch with CUDA)
#   GPUDOC_SIMULATE_SLURM_CGROUP=1: as root on cgroup v2, the job runs in a cgroup laid out as
#   Slurm's (system.slice/slurmstepd.scope/job_4242/step_0/user/task_0, removed after) so that its
#   process series carry the Slurm job's label; said in the summary, a stand-in for a real Slurm.
# systemd and Slurm need not be installed: their commands are run as the unit and slurm.conf would
# run them, as root or not. Never changes a GPU setting.
set -uo pipefail
if [[ $# -lt 2 ]]; then
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
out=$1
gpudoc=$(realpath "$2")
shift 2
job=(python3 workloads/gemm_saturated.py --duration 25)
if [[ $# -gt 0 ]]; then
  [[ $1 == -- && $# -ge 2 ]] || { echo "serve_node_check: expected -- JOB ARGS... after GPUDOC" >&2; exit 2; }
  shift
  job=("$@")
fi
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(realpath "$out")
store="$out/gpudoc.db"
summary="$out/summary.txt"
: > "$summary"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
say() { echo "$*" | tee -a "$summary"; }

# 1. The health timer's command.
"$gpudoc" health --gate --store "$store" > "$out/health-timer.txt" 2> "$out/health-timer.log"
say "health timer (health --gate --store): exit $?: $(head -c 200 "$out/health-timer.txt")"

# 2. The prolog, with a stand-in scontrol.
cat > "$out/scontrol" <<EOF
#!/bin/sh
echo "scontrol \$*" >> "$out/scontrol.log"
EOF
chmod +x "$out/scontrol"
SLURM_JOB_ID=4242 SLURMD_NODENAME=$(hostname -s) GPUDOC_BIN="$gpudoc" SCONTROL_BIN="$out/scontrol" \
  GPUDOC_STORE="$store" GPUDOC_GATE_DEFAULTS=/nonexistent "$repo/deploy/slurm/prolog.sh" > "$out/prolog.log" 2>&1
say "prolog: exit $? (drained: $(if [[ -s $out/scontrol.log ]]; then cat "$out/scontrol.log"; else echo no; fi))"
kept=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from results").fetchone()[0])' "$store" 2>/dev/null)
say "store $store: ${kept:-no} results kept"

# 3. serve on that store while the job runs: one scrape with gpudoc's names, one with dcgm's.
scrape() {  # scrape PORT FILE: /metrics once the first diagnosis is in (at most 40 s)
  python3 - "$1" "$2" <<'PY'
import sys, time, urllib.request
port, path = sys.argv[1], sys.argv[2]
body = ""
for _ in range(80):
    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
        if "gpudoc_finding" in body or "DCGM_FI_DEV_GPU_UTIL" in body and "gpudoc_finding" in body:
            break
    except Exception:
        pass
    time.sleep(0.5)
open(path, "w").write(body)
PY
}
port=19481
for mode in native dcgm; do
  flags=()
  [[ $mode == dcgm ]] && flags=(--dcgm-compatible)
  "$gpudoc" serve --listen "127.0.0.1:$port" --store "$store" --diagnose-window 10 --diagnose-every 5 \
    --duration 45 "${flags[@]}" > "$out/serve-$mode.log" 2>&1 &
  serve_pid=$!
  if [[ ${GPUDOC_SIMULATE_SLURM_CGROUP:-0} == 1 ]]; then
    task=/sys/fs/cgroup/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0
    # The job moves itself into the simulated task cgroup before it starts (exec keeps the pid).
    (mkdir -p "$task" && echo $BASHPID > "$task/cgroup.procs" && cd "$repo" && exec "${job[@]}") \
      > "$out/job-$mode.log" 2>&1 &
  else
    (cd "$repo" && "${job[@]}") > "$out/job-$mode.log" 2>&1 &
  fi
  job_pid=$!
  sleep 15
  scrape "$port" "$out/metrics-$mode.prom"
  wait "$job_pid"
  say "job ($mode): exit $?"
  if [[ ${GPUDOC_SIMULATE_SLURM_CGROUP:-0} == 1 ]]; then
    say "job ($mode) ran in a simulated Slurm cgroup ($task): $(test -d "$task" && echo made || echo NOT made)"
    for d in "$task" "${task%/*}" "${task%/*/*}" "${task%/*/*/*}" "${task%/*/*/*/*}"; do rmdir "$d" 2>/dev/null; done
  fi
  kill -TERM "$serve_pid" 2>/dev/null
  wait "$serve_pid"
  say "serve ($mode): exit $?"
  port=$((port + 1))
done

python3 - "$out" <<'PY' | tee -a "$summary"
import re, sys
out = sys.argv[1]
want = {
    "native": ["gpudoc_health_check", "gpudoc_health_last_run_timestamp_seconds", "gpudoc_gpu_info",
               "gpudoc_finding", "gpudoc_finding_severity", "gpudoc_gpu_xid_errors_total",
               "gpudoc_ecc_corrected_volatile_errors_total", "gpudoc_pcie_replay_errors_total",
               "gpudoc_row_remap_pending", "gpudoc_process_memory_used_bytes"],
    "dcgm": ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
             "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
             "gpudoc_health_check"],
}
for mode, names in want.items():
    try:
        body = open(f"{out}/metrics-{mode}.prom").read()
    except OSError:
        body = ""
    present = {m.group(1) for m in re.finditer(r"^([A-Za-z_:][A-Za-z0-9_:]*)[{ ]", body, re.M)}
    print(f"scrape ({mode}): {len(body.splitlines())} lines, {len(present)} series names")
    for n in names:
        print(f"  {'present' if n in present else 'ABSENT '}  {n}")
    procs = [l for l in body.splitlines() if l.startswith("gpudoc_process_memory_used_bytes{")]
    for l in procs[:3]:
        print(f"  process series: {l[:220]}")
PY
