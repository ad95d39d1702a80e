#!/usr/bin/env python3
"""Compute load for the slice's compute cap (gpudoc slice --sm PERCENT): prints its pid first, then
one JSON line at the end, for tools/check_slice.py.

    gpudoc slice --sm 30 -- python3 workloads/slice_compute.py --duration 30            # training-like
    python3 workloads/slice_compute.py --infer --duration 15                             # inference loop

Training-like: bf16 8192^3 matmuls back to back, synchronised every step (so the launch gate sees
every step). --infer: small steps (four 2048^2 matmuls, then a sync), each timed; the end line
has p50/p99 step milliseconds. Needs only the standard library and torch; exit 3 without a GPU.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from _common import require_cuda, torch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=30)
    parser.add_argument("--infer", action="store_true")
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    require_cuda()  # exit 3, saying why, without torch or a GPU
    print(json.dumps({"event": "start", "pid": os.getpid(), "label": args.label}), flush=True)
    n = 2048 if args.infer else 8192
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    steps, times = 0, []
    start = time.perf_counter()
    while time.perf_counter() - start < args.duration:
        t0 = time.perf_counter()
        for _ in range(4 if args.infer else 1):
            c = a @ b
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        steps += 1
    elapsed = time.perf_counter() - start
    times.sort()
    pick = lambda q: 1000 * times[min(len(times) - 1, int(q * len(times)))] if times else None  # noqa: E731
    print(json.dumps({"event": "end", "pid": os.getpid(), "label": args.label, "steps": steps,
                      "steps_per_s": steps / elapsed, "p50_ms": pick(0.50), "p99_ms": pick(0.99),
                      "checksum_finite": bool(torch.isfinite(c).all().item())}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
