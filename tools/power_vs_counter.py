#!/usr/bin/env python3
"""Per trace and GPU: NVML's energy counter over the span between its first and last readings
against the integral of the power readings over the same span, taken at face value and placed half
their one-second averaging window earlier (docs/methodology.md, "Cost accounting"; the table in
docs/results/cost.md).

    python3 tools/power_vs_counter.py tests/data/*.jsonl

Prints one line per GPU with two or more counter readings: the trace, the GPU, the span, the
counter's joules, and each integral with its difference from the counter.
"""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cost_check import power_integral  # noqa: E402  (the same integral the GPU check uses)


def read(path: str):
    power, energy = {}, {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            j = json.loads(line)
            if j.get("type") != "sample":
                continue
            if "power_watts" in j:
                power.setdefault(j["gpu"], []).append((j["t"], j["power_watts"]))
            if "energy_joules" in j:
                energy.setdefault(j["gpu"], []).append((j["t"], j["energy_joules"]))
    return power, energy


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    print(f"{'trace':<40} gpu  span_s  counter_J  face_value_J  diff     moved_0.5s_J  diff")
    for path in sys.argv[1:]:
        power, energy = read(path)
        for gpu in sorted(energy):
            e = sorted(energy[gpu])
            if len(e) < 2 or gpu not in power:
                continue
            (t0, e0), (t1, e1) = e[0], e[-1]
            counter = e1 - e0
            face, _ = power_integral(power[gpu], t0, t1, 0.0)
            moved, _ = power_integral(power[gpu], t0, t1, 0.5)
            print(f"{os.path.basename(path):<40} {gpu:>3}  {t1 - t0:6.1f}  {counter:9.1f}  {face:12.1f}  "
                  f"{(face / counter - 1) * 100:+6.2f} %  {moved:12.1f}  {(moved / counter - 1) * 100:+6.2f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
