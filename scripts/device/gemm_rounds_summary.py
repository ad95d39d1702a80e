#!/usr/bin/env python3
"""Summary of interleaved GEMM rounds: gpudoc (rN_gpudoc.json), PyTorch (rN_torch.json, from
torch_bench.py) and, when present, an earlier gpudoc (rN_prev.json), one of each per round.

Prints a Markdown table per headline GEMM: each round's median TFLOP/s, the median over rounds,
the ratio to PyTorch, and which candidate gpudoc chose (rank, layout, probe and final times
relative to the chosen one).

Usage: python3 scripts/device/gemm_rounds_summary.py DIR
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_compare import GEMM_KEYS as KEYS, load  # noqa: E402  (the same keys and reader as the comparison)


def gpudoc_results(doc):
    out = {}
    for e in (doc or {}).get("results", []):
        if "result" in e:
            out[e["key"]] = e
    return out


def rel(values, chosen):
    base = values[chosen] if 0 <= chosen < len(values) and values[chosen] > 0 else None
    return ", ".join("—" if v <= 0 or base is None else f"{v / base:.3f}" for v in values)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    d = sys.argv[1]
    rounds = sorted({int(n[1:n.index("_")]) for n in os.listdir(d) if n.startswith("r") and n.endswith(".json")})
    series = {"gpudoc": {}, "torch": {}, "prev": {}}
    choice = {}
    for r in rounds:
        g = gpudoc_results(load(os.path.join(d, f"r{r}_gpudoc.json")))
        p = gpudoc_results(load(os.path.join(d, f"r{r}_prev.json")))
        t = (load(os.path.join(d, f"r{r}_torch.json")) or {}).get("results", {})
        for k in KEYS:
            if k in g:
                series["gpudoc"].setdefault(k, []).append(g[k]["result"]["median"])
                pr = g[k]["result"]["params"]
                c = g[k].get("conditions", {})
                choice.setdefault(k, []).append(
                    f"r{r}: rank {pr.get('algo_rank')} {pr.get('layout', '')[:2]}"
                    + (f" ({pr['algo_origin']}; {pr.get('algo_config', '')})" if "algo_origin" in pr else "") + ", "
                    f"SM {c.get('sm_clock_mhz', {}).get('median', '?')} MHz, "
                    f"{c.get('temperature_celsius', {}).get('median', '?')} °C; probe [{rel(pr.get('algo_seconds', []), pr.get('algo_rank', -1))}]"
                    + (f"; final [{rel(pr['algo_final_seconds'], pr.get('algo_rank', -1))}]" if "algo_final_seconds" in pr else ""))
            if k in p:
                series["prev"].setdefault(k, []).append(p[k]["result"]["median"])
            if k in t and "median" in t[k]:
                series["torch"].setdefault(k, []).append(t[k]["median"])
    print(f"Interleaved rounds: {len(rounds)} (gpudoc, then PyTorch, then the earlier gpudoc, per round); TFLOP/s medians\n")
    print("| figure | gpudoc per round | PyTorch per round | earlier gpudoc per round | gpudoc | PyTorch | earlier | gpudoc / PyTorch | earlier / PyTorch |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|")
    for k in KEYS:
        cells = []
        meds = {}
        for name in ("gpudoc", "torch", "prev"):
            v = series[name].get(k, [])
            cells.append(", ".join(f"{x:.1f}" for x in v) or "—")
            meds[name] = statistics.median(v) if v else None
        ratio = lambda a: f"{100 * meds[a] / meds['torch']:.1f} %" if meds[a] and meds["torch"] else "—"
        fm = lambda a: f"{meds[a]:.1f}" if meds[a] else "—"
        print(f"| `{k}` | {cells[0]} | {cells[1]} | {cells[2]} | {fm('gpudoc')} | {fm('torch')} | {fm('prev')} | {ratio('gpudoc')} | {ratio('prev')} |")
    print("\ngpudoc's choice per round (times relative to the chosen candidate; — did not run or not a finalist):\n")
    for k in KEYS:
        for line in choice.get(k, []):
            print(f"- `{k}` {line}")


if __name__ == "__main__":
    main()
