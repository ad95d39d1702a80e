#!/usr/bin/env python3
"""Markdown summary of a bench_multi.sh run: gpudoc's p2p matrices and nccl bus-bandwidth curves
beside PyTorch's NCCL at the same sizes and the NVLink datasheet figure.

    python3 scripts/device/bench_multi_summary.py bench.json torch_nccl.json env.txt > summary.md
"""
import json
import sys


def fmt_bytes(b: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if b < 1024 or b % 1024:
            return f"{b} {unit}"
        b //= 1024
    return f"{b} TiB"


def main() -> None:
    bench = json.load(open(sys.argv[1]))
    torch = None
    try:
        torch = json.load(open(sys.argv[2]))
    except (OSError, ValueError) as e:
        print(f"(no PyTorch figures: {e})\n")
    env = open(sys.argv[3]).read() if len(sys.argv) > 3 else ""
    m = bench.get("machine", {})
    gpu = (m.get("gpu") or {}).get("name", "no GPU")
    print(f"# gpudoc bench p2p / nccl on {m.get('device_count', '?')} x {gpu}\n")
    print(f"mode `{bench.get('mode')}`, exit code {bench.get('exit_code')}\n")
    if env:
        print("```\n" + env.strip() + "\n```\n")

    print("| key | median | unit | min–max | CV % | verified | note |\n|---|---|---|---|---|---|---|")
    for r in bench["results"]:
        res = r.get("result")
        if res:
            print(f"| {r['key']} | {res['median']:.2f} | {res['unit']} | {res['min']:.2f}–{res['max']:.2f} | "
                  f"{100 * res['cv']:.2f} | {res['verified']['ok']} | {res['params'].get('note', '')} |")
        else:
            print(f"| {r['key']} | — | | | | | {r.get('reason', r['status'])} |")
    print()

    for r in bench["results"]:
        res = r.get("result")
        if not res or "matrix" not in res["params"]:
            continue
        mat = res["params"]["matrix"]
        vals = mat["values"]
        print(f"## {r['key']} ({mat['unit']}; rows {mat['rows']}, columns {mat['columns']})\n")
        print("| " + mat["rows"] + "\\" + mat["columns"] + " | " + " | ".join(str(j) for j in range(len(vals))) + " |")
        print("|---" * (len(vals) + 1) + "|")
        for i, row in enumerate(vals):
            print(f"| {i} | " + " | ".join("—" if v is None else f"{v:.2f}" for v in row) + " |")
        ds = res["params"].get("datasheet")
        if ds:
            print(f"\ndatasheet: {ds['link']}, {ds['per_direction_gb_per_s']:.0f} GB/s per direction, "
                  f"{ds['bidirectional_gb_per_s']:.0f} GB/s both ({ds['source']})")
        print()

    tor = {}
    if torch:
        for t in torch["results"]:
            tor[(t["collective"], t["bytes"])] = t
    for r in bench["results"]:
        res = r.get("result")
        if not res or "curve" not in res["params"]:
            continue
        coll = r["key"].split(".", 1)[1]
        p = res["params"]
        print(f"## {r['key']}: {p['ranks']} ranks, NCCL {p['nccl_version']} ({p['nccl_library']}), "
              f"NCCL_NVLS_ENABLE={p['nvls']['NCCL_NVLS_ENABLE']}\n")
        print(f"{p['formula']}\n")
        head = "| size | time us | algbw GB/s | busbw GB/s | verified |"
        if torch:
            head += f" torch {torch['torch_version']} (NCCL {torch['nccl_version']}) busbw | gpudoc / torch |"
        print(head)
        print("|---" * (head.count("|") - 1) + "|")
        for c in p["curve"]:
            line = (f"| {fmt_bytes(c['bytes'])} | {c['time_us']:.1f} | {c['algbw_gb_per_s']:.2f} | "
                    f"{c['busbw_gb_per_s']:.2f} | {c['verified']} |")
            if torch:
                t = tor.get((coll, c["bytes"]))
                line += (f" {t['busbw_gb_per_s']:.2f} | {c['busbw_gb_per_s'] / t['busbw_gb_per_s']:.3f} |" if t else " | |")
            print(line)
        ds = p.get("datasheet")
        if ds:
            print(f"\nbus bandwidth is compared with the link's per-direction figure: {ds['link']} "
                  f"{ds['per_direction_gb_per_s']:.0f} GB/s per direction ({ds['source']})")
        print()


if __name__ == "__main__":
    main()
