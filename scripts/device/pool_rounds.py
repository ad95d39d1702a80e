#!/usr/bin/env python3
"""gpudoc / PyTorch over every matched GEMM round of several device runs, pooled.

Each DIR holds rounds as gemm_rounds_summary.py reads them (rN_gpudoc.json beside rN_torch.json)
or as bench_compare.py writes them (gemm_roundN_gpudoc.json beside gemm_roundN_torch.json, the
matched PyTorch run). Prints, per GEMM key, one row per round (gpudoc's median, PyTorch's, the
ratio, gpudoc's choice) and the pooled mean, standard deviation and how many rounds reached 100 %.

Usage: python3 scripts/device/pool_rounds.py [--keys gemm.tf32,gemm.fp8] DIR [DIR ...]
"""
import argparse
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_compare import GEMM_KEYS, load  # noqa: E402

ROUND = re.compile(r"^(r|gemm_round)(\d+)_gpudoc\.json$")


def rounds_in(d):
    """(label, gpudoc doc, torch doc) for each round of DIR that has both files, in round order."""
    found = []
    for name in os.listdir(d):
        m = ROUND.match(name)
        if m:
            torch_path = os.path.join(d, f"{m.group(1)}{m.group(2)}_torch.json")
            if os.path.exists(torch_path):
                found.append((int(m.group(2)), load(os.path.join(d, name)), load(torch_path)))
    return [(f"{d} r{n}", g, t) for n, g, t in sorted(found, key=lambda x: x[0])]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keys", default=",".join(GEMM_KEYS))
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    rounds = [r for d in a.dirs for r in rounds_in(d)]
    if not rounds:
        sys.exit("pool_rounds: no rounds (rN_gpudoc.json + rN_torch.json) in " + ", ".join(a.dirs))
    for key in a.keys.split(","):
        rows = []
        for label, g, t in rounds:
            ge = next((e for e in (g or {}).get("results", []) if e.get("key") == key and "result" in e), None)
            te = ((t or {}).get("results") or {}).get(key, {})
            if ge is None or "median" not in te:
                continue
            gm, tm = ge["result"]["median"], te["median"]
            rows.append((label, gm, tm, 100 * gm / tm, ge["result"]["params"].get("algo_origin", "—")))
        if not rows:
            continue
        print(f"\n`{key}`\n\n| round | gpudoc | PyTorch matched | gpudoc / PyTorch | gpudoc's choice |\n|---|---:|---:|---:|---|")
        for label, gm, tm, ratio, origin in rows:
            print(f"| {label} | {gm:.1f} | {tm:.1f} | {ratio:.2f} % | {origin} |")
        ratios = [r[3] for r in rows]
        sd = statistics.stdev(ratios) if len(ratios) > 1 else 0.0
        print(f"\n{len(ratios)} rounds: mean {statistics.mean(ratios):.2f} %, sd {sd:.2f}, "
              f"min {min(ratios):.2f} %, max {max(ratios):.2f} %, at or above 100 %: "
              f"{sum(r >= 100 for r in ratios)} of {len(ratios)}")


if __name__ == "__main__":
    main()
