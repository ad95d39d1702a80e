#!/usr/bin/env python3
"""Peak memory (RSS) and time of `gpudoc trace info` and `gpudoc diagnose` on a long trace.

    tests/perf/trace_memory.py --gpudoc build/src/cli/gpudoc \
        [--gpudoc before=/path/to/an/older/gpudoc] \
        --make-trace build/tests/perf/make_long_trace --trace "$(mktemp -d)/day.jsonl" \
        [--gpus 8] [--hours 24] [--runs 1] [--max-rss-mb 1024] [--max-seconds 35]

Generates the trace with make_long_trace when the file is missing (8 GPUs x 24 h at native rates:
about 15 million lines, 3 GB), then runs each command --runs times, one at a time, and reports
per command the wall time, CPU time and peak RSS (the child's ru_maxrss, from wait4), with the
machine's load average before and after each run (the build machine is shared: say how loaded it
was). --gpudoc may be given several times as LABEL=PATH (a plain PATH is labelled "this"): the
binaries then take turns, run by run, so that a before/after comparison sees the same load.
The limits apply to the first --gpudoc only.
Prints one JSON object; exits 1 when a limit given on the command line is exceeded, 2 on bad use.
Standard library only. docs/results/trace-memory.md holds the figures.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time


def run_measured(argv):
    """Runs argv with stdout discarded; returns (exit code, wall s, cpu s, peak RSS MB, stderr)."""
    start = time.monotonic()
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen(argv, stdout=devnull, stderr=subprocess.PIPE)
        stderr = proc.stderr.read().decode(errors="replace")  # before wait4: a full pipe would block it
        proc.stderr.close()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - start
    cpu = usage.ru_utime + usage.ru_stime
    return proc.returncode, wall, cpu, usage.ru_maxrss / 1024.0, stderr


def binaries(specs):
    """[(label, path)] from --gpudoc values, LABEL=PATH or PATH."""
    out = []
    for s in specs:
        label, sep, path = s.partition("=")
        out.append((label, path) if sep else ("this", s))
    return out


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpudoc", required=True, action="append", help="PATH or LABEL=PATH; repeat to compare")
    ap.add_argument("--make-trace", help="the make_long_trace binary (to generate --trace when missing)")
    ap.add_argument("--trace", required=True)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--hours", type=float, default=24)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--max-rss-mb", type=float)
    ap.add_argument("--max-seconds", type=float)
    a = ap.parse_args()
    bins = binaries(a.gpudoc)
    if a.runs < 1 or any(not os.access(p, os.X_OK) for _, p in bins):
        print("--runs must be >= 1 and every --gpudoc an executable", file=sys.stderr)
        return 2

    if not os.path.exists(a.trace):
        if not a.make_trace:
            print(f"{a.trace} does not exist; give --make-trace to generate it", file=sys.stderr)
            return 2
        t0 = time.monotonic()
        subprocess.run([a.make_trace, "--out", a.trace, "--gpus", str(a.gpus), "--hours", str(a.hours)], check=True)
        print(f"generated {a.trace} in {time.monotonic() - t0:.0f} s", file=sys.stderr)

    result = {
        "trace": a.trace,
        "trace_bytes": os.path.getsize(a.trace),
        "machine": {"cpus": os.cpu_count(), "cpu": cpu_model(), "kernel": platform.release(),
                    "load_before": os.getloadavg()},
        "commands": [],
    }
    failed = False
    commands = (("trace info", ["trace", "info", a.trace, "--json"]), ("diagnose", ["diagnose", a.trace, "--json"]))
    for name, args in commands:
        for _ in range(a.runs):
            for k, (label, path) in enumerate(bins):
                load = os.getloadavg()[0]
                code, wall, cpu, rss, stderr = run_measured([path] + args)
                entry = {"binary": label, "command": name, "exit_code": code, "wall_s": round(wall, 2),
                         "cpu_s": round(cpu, 2), "peak_rss_mb": round(rss, 1), "load_1min_before": round(load, 2),
                         "load_1min_after": round(os.getloadavg()[0], 2)}
                if code not in (0, 1):
                    entry["stderr"] = stderr[-2000:]
                    failed = True
                if k == 0 and a.max_rss_mb is not None and rss > a.max_rss_mb:
                    failed = True
                if k == 0 and a.max_seconds is not None and wall > a.max_seconds:
                    failed = True
                result["commands"].append(entry)
                print(json.dumps(entry), file=sys.stderr)
    result["machine"]["load_after"] = os.getloadavg()
    print(json.dumps(result, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
