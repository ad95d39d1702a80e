#!/usr/bin/env python3
"""Measures the CPU and memory cost of GPU samplers side by side, in one run.

Starts every sampler at once, lets them warm up, then reads each process's CPU time (utime+stime
from /proc/PID/stat, children included) and resident memory over the measured window.

    python3 scripts/device/sampler_cpu.py --seconds 60 --out $OUT/sampler_cpu.json \
        --sampler "gpudoc=build-portable/src/cli/gpudoc record -q -o /tmp/x.jsonl --duration 75" \
        --sampler "nvidia-smi-11=nvidia-smi --query-gpu=... --format=csv -lms 100"

Prints a Markdown table; writes the raw figures as JSON.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[11..14] = utime stime cutime cstime (stat fields 14..17)
    return sum(int(x) for x in fields[11:15]) / TICK


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * PAGE


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--warmup", type=float, default=5)
    ap.add_argument("--sampler", action="append", required=True, help="NAME=COMMAND")
    ap.add_argument("--gpus", type=int, default=1, help="GPUs on the machine, for the per-GPU figure")
    ap.add_argument("--out", default="sampler_cpu.json")
    a = ap.parse_args()

    procs = {}
    for spec in a.sampler:
        name, cmd = spec.split("=", 1)
        procs[name] = subprocess.Popen(shlex.split(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(a.warmup)
    start = {n: (cpu_seconds(p.pid), time.monotonic()) for n, p in procs.items()}
    rss = {n: [] for n in procs}
    t_end = time.monotonic() + a.seconds
    while time.monotonic() < t_end:
        for n, p in procs.items():
            if p.poll() is None:
                rss[n].append(rss_bytes(p.pid))
        time.sleep(1)
    results = {}
    for n, p in procs.items():
        if p.poll() is not None:
            results[n] = {"error": f"exited early with {p.returncode}"}
            continue
        c1, t1 = cpu_seconds(p.pid), time.monotonic()
        c0, t0 = start[n]
        pct = 100.0 * (c1 - c0) / (t1 - t0)
        results[n] = {"cpu_percent_of_one_core": pct, "cpu_percent_per_gpu": pct / a.gpus,
                      "rss_min_bytes": min(rss[n]), "rss_max_bytes": max(rss[n]), "window_s": t1 - t0}
    for p in procs.values():
        if p.poll() is None:
            p.terminate()
    for p in procs.values():
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
    with open(a.out, "w") as f:
        json.dump({"seconds": a.seconds, "gpus": a.gpus, "samplers": {s.split("=", 1)[0]: s.split("=", 1)[1] for s in a.sampler},
                   "results": results}, f, indent=2)
    print("| sampler | CPU, % of one core | per GPU | RSS min–max |")
    print("|---|---|---|---|")
    for n, r in results.items():
        if "error" in r:
            print(f"| {n} | {r['error']} | | |")
        else:
            print(f"| {n} | {r['cpu_percent_of_one_core']:.3f} | {r['cpu_percent_per_gpu']:.3f} | "
                  f"{r['rss_min_bytes']/2**20:.1f}–{r['rss_max_bytes']/2**20:.1f} MiB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
