#!/usr/bin/env python3
"""Convert a gpudoc trace (docs/trace-format.md) to CSV: one file per GPU, one column per metric.

    scripts/trace_to_csv.py run.jsonl            # writes run.gpu0.csv, run.gpu1.csv, ... next to it
    scripts/trace_to_csv.py run.jsonl -o out/    # ... into out/
    scripts/trace_to_csv.py run.jsonl --gpu 0    # GPU 0 only, to stdout

Each row is one sample line: t (seconds since the recording started), then the metrics. An empty
cell means the metric was not read at that time (gpudoc never writes 0 for "unknown"). Rows are
sorted by t: utilization samples come from the driver's buffer and are written after later ones.
Only the standard library is used, so it runs wherever python3 does.
"""
import argparse
import csv
import json
import os
import sys

NOT_METRICS = {"type", "t", "gpu"}


def read_samples(path):
    """Returns (header, {gpu: [row dict, ...]}, metric names in order of first appearance)."""
    header, rows, names = None, {}, []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.endswith("\n"):
                try:
                    json.loads(line)
                except ValueError:
                    sys.exit(f"{path}: truncated at line {n}: the recording was cut off")
            r = json.loads(line)
            if n == 1:
                if r.get("type") != "header" or r.get("format") != "gpudoc-trace":
                    sys.exit(f"{path}: not a gpudoc trace")
                if r.get("version") != 1:
                    sys.exit(f"{path}: trace format version {r.get('version')}; this script reads version 1")
                header = r
                names = [m["name"] for m in r.get("metrics", [])]
                rows = {g: [] for g in range(len(r.get("gpus", [])))}
            elif r["type"] == "sample":
                rows.setdefault(r["gpu"], []).append(r)
                names += [k for k in r if k not in NOT_METRICS and k not in names]
    if header is None:
        sys.exit(f"{path}: empty file")
    return header, rows, names


def write_csv(out, samples, names):
    present = [m for m in names if any(m in r for r in samples)]
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["t"] + present)
    for r in sorted(samples, key=lambda r: r["t"]):  # stable: equal times keep file order
        w.writerow([r["t"]] + [r.get(m, "") for m in present])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace", help="a gpudoc trace (.jsonl)")
    p.add_argument("-o", "--out-dir", help="where to write <name>.gpuN.csv (default: next to the trace)")
    p.add_argument("--gpu", type=int, help="write only this GPU's CSV, to stdout")
    a = p.parse_args()

    header, rows, names = read_samples(a.trace)
    if a.gpu is not None:
        if a.gpu not in rows:
            sys.exit(f"{a.trace}: no GPU {a.gpu} (the trace has {len(rows)})")
        write_csv(sys.stdout, rows[a.gpu], names)
        return
    out_dir = a.out_dir or os.path.dirname(os.path.abspath(a.trace))
    os.makedirs(out_dir, exist_ok=True)
    stem = os.path.basename(a.trace)
    stem = stem[: -len(".jsonl")] if stem.endswith(".jsonl") else stem
    for g, samples in sorted(rows.items()):
        path = os.path.join(out_dir, f"{stem}.gpu{g}.csv")
        with open(path, "w", newline="", encoding="utf-8") as out:
            write_csv(out, samples, names)
        name = header["gpus"][g].get("name", "?") if g < len(header["gpus"]) else "?"
        print(f"{path}: GPU {g} ({name}), {len(samples)} rows")


if __name__ == "__main__":
    main()
