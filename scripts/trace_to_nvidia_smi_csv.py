#!/usr/bin/env python3
"""Write the nvidia-smi CSV form of a gpudoc trace: what

    nvidia-smi --query-gpu=timestamp,index,utilization.gpu,utilization.memory,memory.used,memory.total,\
power.draw,temperature.gpu,clocks.sm,clocks.max.sm,clocks_event_reasons.active --format=csv -lms 100

would have logged on the same GPUs (header names exactly as nvidia-smi 580 prints them). Every
row holds each metric's latest reading at the row's time, as nvidia-smi reads the driver's current
values; GPM, per-process data and events are lost, as they are in a real nvidia-smi log.

    scripts/trace_to_nvidia_smi_csv.py run.jsonl run.csv [--interval-ms 100]

Standard library only. Used by tests/integration/diagnose_fixtures_test.cpp (through CTest) and
by the confusion-table generator.
"""
import argparse
import bisect
import datetime
import json
import sys

HEADER = ("timestamp, index, utilization.gpu [%], utilization.memory [%], memory.used [MiB], "
          "memory.total [MiB], power.draw [W], temperature.gpu, clocks.current.sm [MHz], "
          "clocks.max.sm [MHz], clocks_event_reasons.active")
METRICS = ["gpu_utilization_percent", "memory_utilization_percent", "memory_used_bytes", "power_watts",
           "gpu_temperature_celsius", "sm_clock_mhz", "clock_event_reasons_mask"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("out")
    ap.add_argument("--interval-ms", type=int, default=100)
    a = ap.parse_args()
    header = None
    series = {}  # (gpu, metric) -> list of (t, v)
    for line in open(a.trace, encoding="utf-8"):
        r = json.loads(line)
        if r["type"] == "header":
            header = r
        elif r["type"] == "sample":
            for m in METRICS:
                if m in r:
                    series.setdefault((r["gpu"], m), []).append((r["t"], r[m]))
    if header is None:
        sys.exit("no header")
    for s in series.values():
        s.sort()
    times = [t for s in series.values() for t, _ in s]
    if not times:
        sys.exit("no samples")
    t0, t1 = max(0.0, min(times)), max(times)
    gpus = header["gpus"]
    keys = {k: [t for t, _ in s] for k, s in series.items()}

    def at(g, m, t):
        s = series.get((g, m))
        if not s:
            return None
        i = bisect.bisect_right(keys[(g, m)], t) - 1
        return s[i][1] if i >= 0 else None

    step = a.interval_ms / 1000.0
    with open(a.out, "w", encoding="utf-8") as out:
        out.write(HEADER + "\n")
        n = int((t1 - t0) / step) + 1
        for k in range(n):
            t = t0 + k * step
            ns = header["start_unix_ns"] + int(t * 1e9)
            dt = datetime.datetime.fromtimestamp(ns / 1e9, tz=datetime.timezone.utc)
            ts = dt.strftime("%Y/%m/%d %H:%M:%S.") + f"{dt.microsecond // 1000:03d}"
            for g, info in enumerate(gpus):
                def fmt(v, unit, f="{:.0f}"):
                    return "[N/A]" if v is None else (f.format(v) + (" " + unit if unit else ""))
                mem = at(g, "memory_used_bytes", t)
                total = info.get("memory_total_bytes")
                mask = at(g, "clock_event_reasons_mask", t)
                cols = [ts, str(info.get("index", g)),
                        fmt(at(g, "gpu_utilization_percent", t), "%"),
                        fmt(at(g, "memory_utilization_percent", t), "%"),
                        fmt(None if mem is None else mem / 1048576, "MiB"),
                        fmt(None if total is None else total / 1048576, "MiB"),
                        fmt(at(g, "power_watts", t), "W", "{:.2f}"),
                        fmt(at(g, "gpu_temperature_celsius", t), ""),
                        fmt(at(g, "sm_clock_mhz", t), "MHz"),
                        fmt(info.get("sm_clock_max_mhz"), "MHz"),
                        "[N/A]" if mask is None else f"0x{int(mask):016x}"]
                out.write(", ".join(cols) + "\n")


if __name__ == "__main__":
    main()
