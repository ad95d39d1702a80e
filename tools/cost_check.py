#!/usr/bin/env python3
"""Checks gpudoc's cost accounting of one run against a second reader (tools/cost_check.sh runs
both): gpudoc's energy per GPU within --tolerance (2 %) of the NVML energy counter as
tools/nvml_energy.py read it at the command's start and end, and of the integral of the power
readings in gpudoc's trace (computed here, not by gpudoc: each reading placed half its one-second
averaging window earlier, trapezoids, over gpudoc's run); and the split closing: useful + each
cause + unexplained equal to the GPU time exactly (microseconds) and to the energy exactly
(millijoules), per GPU and in total, hence within 1 %.

    python3 tools/cost_check.py diagnose.json nvml.json run.jsonl

Prints one line per check ("ok" or "FAIL") and a summary; exit 0 when every check holds, 1 when
one fails, 2 on bad input.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Dict, List, Tuple


def power_integral(points: List[Tuple[float, float]], start: float, end: float, shift: float) -> Tuple[float, float]:
    """Joules of the readings (t, watts), each moved `shift` s earlier, joined by lines (the first
    and last held), over [start, end]; and the seconds covered by readings."""
    pts = sorted((t - shift, w) for t, w in points)
    if not pts or end <= start:
        return 0.0, 0.0
    joules = 0.0
    # held before the first and after the last reading
    ext = [(min(start, pts[0][0]), pts[0][1])] + pts + [(max(end, pts[-1][0]), pts[-1][1])]
    for (t0, w0), (t1, w1) in zip(ext, ext[1:]):
        a, b = max(t0, start), min(t1, end)
        if b <= a or t1 <= t0:
            continue
        wa = w0 + (w1 - w0) * (a - t0) / (t1 - t0)
        wb = w0 + (w1 - w0) * (b - t0) / (t1 - t0)
        joules += (wa + wb) / 2 * (b - a)
    return joules, end - start


def trace_power(path: str) -> Dict[int, List[Tuple[float, float]]]:
    out: Dict[int, List[Tuple[float, float]]] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            j = json.loads(line)
            if j.get("type") == "sample" and "power_watts" in j:
                out.setdefault(j["gpu"], []).append((j["t"], j["power_watts"]))
    return out


class Checks:
    def __init__(self) -> None:
        self.failed = 0
        self.count = 0

    def check(self, ok: bool, what: str) -> None:
        self.count += 1
        self.failed += 0 if ok else 1
        print(("ok    " if ok else "FAIL  ") + what)


def relative(a: float, b: float) -> float:
    return abs(a - b) / abs(b) if b else float("inf")


def check_closure(cost: dict, c: Checks) -> None:
    split = cost["split"]
    c.check(sum(p["gpu_time_us"] for p in split) == cost["gpu_time_us"],
            f"split of the GPU time: {sum(p['gpu_time_us'] for p in split)} us == {cost['gpu_time_us']} us")
    if cost["energy_mj"] is not None:
        parts = sum(p["energy_mj"] for p in split)
        c.check(parts == cost["energy_mj"] and relative(parts, cost["energy_mj"]) <= 0.01,
                f"split of the energy: {parts} mJ == {cost['energy_mj']} mJ")
    for g in cost["gpus"]:
        t = g["useful_us"] + g["unexplained_us"] + sum(x["gpu_time_us"] for x in g["causes"])
        c.check(t == g["gpu_time_us"], f"GPU {g['gpu']} run {g['run']}: useful + causes + unexplained = {t} us == "
                                       f"{g['gpu_time_us']} us")
        if g["energy_mj"] is not None:
            e = g["useful_mj"] + g["unexplained_mj"] + sum(x["energy_mj"] for x in g["causes"])
            c.check(e == g["energy_mj"], f"GPU {g['gpu']} run {g['run']}: useful + causes + unexplained = {e} mJ == "
                                         f"{g['energy_mj']} mJ")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("diagnose_json", help="gpudoc diagnose --json's output")
    parser.add_argument("nvml_json", help="tools/nvml_energy.py's output")
    parser.add_argument("trace", help="the trace gpudoc kept (diagnose -o)")
    parser.add_argument("--tolerance", type=float, default=0.02, help="energy agreement (default 0.02: 2 %%)")
    args = parser.parse_args()
    try:
        with open(args.diagnose_json, encoding="utf-8") as f:
            doc = json.load(f)
        with open(args.nvml_json, encoding="utf-8") as f:
            nvml = json.load(f)
        power = trace_power(args.trace)
    except (OSError, ValueError) as e:
        print(f"cost_check: {e}", file=sys.stderr)
        return 2
    cost = doc.get("cost") or (doc.get("traces") or [{}])[0].get("cost")
    if not cost:
        print("cost_check: no cost object in the diagnosis", file=sys.stderr)
        return 2
    c = Checks()
    check_closure(cost, c)
    start, end = cost["run"]["start_s"], cost["run"]["end_s"]
    print(f"run: {start:.3f} .. {end:.3f} s ({cost['run']['span']}); nvml_energy.py ran {nvml['duration_s']:.3f} s")
    by_gpu = {g["gpu"]: g for g in cost["gpus"]}
    for n in nvml["gpus"]:
        g = by_gpu.get(n["index"])
        if g is None or g["energy_mj"] is None:
            c.check(False, f"GPU {n['index']}: gpudoc measured no energy")
            continue
        ours = g["energy_mj"] / 1000.0
        counter = n["energy_j"]
        shift = g["energy"]["power_shift_s"]
        integral, _ = power_integral(power.get(n["index"], []), start, end, shift)
        raw, _ = power_integral(power.get(n["index"], []), start, end, 0.0)
        theirs, _ = power_integral([tuple(p) for p in n["power"]], 0.0, nvml["duration_s"], shift)
        print(f"GPU {n['index']} ({n['name']}): gpudoc {ours:.1f} J ({g['energy']['method']}); NVML counter by "
              f"nvml_energy.py {counter:.1f} J; integral of gpudoc's power readings {integral:.1f} J (moved "
              f"{shift:.2f} s; {raw:.1f} J not moved); of nvml_energy.py's {theirs:.1f} J")
        c.check(relative(ours, counter) <= args.tolerance,
                f"GPU {n['index']}: gpudoc's energy within {args.tolerance:.0%} of the counter read by another tool "
                f"({relative(ours, counter):.2%})")
        c.check(relative(ours, integral) <= args.tolerance,
                f"GPU {n['index']}: gpudoc's energy within {args.tolerance:.0%} of the integral of the power readings "
                f"({relative(ours, integral):.2%})")
    print(f"{c.count - c.failed} of {c.count} checks hold")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
