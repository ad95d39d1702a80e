#!/usr/bin/env python3
"""The CPU and memory cost of gpudoc's sampler beside nvidia-smi's, side by side in one run.

On a machine with one or more NVIDIA GPUs:

    tools/sampler_cost.py OUTDIR [--gpudoc BIN] [--previous BIN] [--seconds 60] [--sampler NAME=CMD ...]

starts at once `gpudoc record` of every GPU (twice: two copies of the same binary show the noise
between identical samplers), `--previous BIN`'s record too when given (an A/B of two builds), and
nvidia-smi polling its 11-field query every 100 ms, lets them warm up, then reads each process's
CPU time (utime + stime from /proc/PID/stat, children included) and resident memory over the
window. Load the GPUs with whatever the figure should hold for (idle, or your workloads) while it
runs. Writes OUTDIR/sampler_cost.json (raw figures) and OUTDIR/sampler_cost.md (the table, also
printed): CPU in % of one core, per GPU, and the resident memory's range. Method and earlier
figures: docs/results/sampler-cost.md. It only reads: no GPU setting is changed.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import time

from proc_cpu import cpu_seconds, rss_bytes  # tools/proc_cpu.py


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SMI_11_FIELDS = ("nvidia-smi --query-gpu=timestamp,index,utilization.gpu,utilization.memory,memory.used,memory.total,"
                 "power.draw,temperature.gpu,clocks.sm,clocks.max.sm,clocks_event_reasons.active --format=csv -lms 100")


def gpu_count() -> int:
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def samplers(a, outdir: str) -> list:
    """[(name, command)]: gpudoc twice, the previous build, nvidia-smi, and the extra ones."""
    record = lambda binary, name: (f"{shlex.quote(binary)} record -q -o {shlex.quote(os.path.join(outdir, name + '.jsonl'))} "
                                   f"--duration {a.warmup + a.seconds + 15:.0f}")  # noqa: E731
    out = [("gpudoc-a", record(a.gpudoc, "gpudoc-a")), ("gpudoc-b", record(a.gpudoc, "gpudoc-b"))]
    if a.previous:
        out.append(("gpudoc-previous", record(a.previous, "gpudoc-previous")))
    out.append(("nvidia-smi-11-fields", SMI_11_FIELDS))
    for spec in a.sampler:
        name, sep, cmd = spec.partition("=")
        if not sep or not name or not cmd:
            sys.exit(f"sampler_cost.py: --sampler wants NAME=COMMAND, got {spec!r}")
        out.append((name, cmd))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--gpudoc", default=os.path.join(REPO, "build", "src", "cli", "gpudoc"),
                    help="the gpudoc binary (default: build/src/cli/gpudoc of this checkout)")
    ap.add_argument("--previous", help="another gpudoc binary to measure beside it (an earlier build)")
    ap.add_argument("--seconds", type=float, default=60, help="the measured window")
    ap.add_argument("--warmup", type=float, default=5, help="seconds before the window starts")
    ap.add_argument("--sampler", action="append", default=[], help="NAME=COMMAND: one more sampler to measure")
    a = ap.parse_args()
    for binary in [a.gpudoc] + ([a.previous] if a.previous else []):
        if not os.access(binary, os.X_OK):
            sys.exit(f"sampler_cost.py: no gpudoc binary at {binary}")
    os.makedirs(a.outdir, exist_ok=True)
    gpus = gpu_count()
    if gpus == 0:
        sys.exit("sampler_cost.py: nvidia-smi -L lists no GPU")
    specs = samplers(a, os.path.abspath(a.outdir))

    procs = {}
    for name, cmd in specs:
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
        results[n] = {"cpu_percent_of_one_core": pct, "cpu_percent_per_gpu": pct / gpus,
                      "rss_min_bytes": min(rss[n]), "rss_max_bytes": max(rss[n]), "window_s": t1 - t0}
    for p in procs.values():
        if p.poll() is None:
            p.terminate()
    for p in procs.values():
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
    with open(os.path.join(a.outdir, "sampler_cost.json"), "w") as f:
        json.dump({"seconds": a.seconds, "gpus": gpus, "samplers": dict(specs), "results": results}, f, indent=2)
    lines = [f"{gpus} GPU(s), {a.seconds:.0f} s window after {a.warmup:.0f} s of warm-up, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "",
             "| sampler | CPU, % of one core | per GPU | RSS min–max |", "|---|---|---|---|"]
    for n, r in results.items():
        if "error" in r:
            lines.append(f"| {n} | {r['error']} | | |")
        else:
            lines.append(f"| {n} | {r['cpu_percent_of_one_core']:.3f} | {r['cpu_percent_per_gpu']:.3f} | "
                         f"{r['rss_min_bytes']/2**20:.1f}–{r['rss_max_bytes']/2**20:.1f} MiB |")
    with open(os.path.join(a.outdir, "sampler_cost.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if all("error" not in r for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
