#!/usr/bin/env python3
"""Loops that synchronize every iteration, written without NVTX, for `gpudoc profile`'s steps.

    python3 workloads/sync_loops.py LOOP [--steps N] [--graph]

LOOP is one of:
  gemm4     four bf16 GEMMs of 4096^3, then torch.cuda.synchronize()
  gemm-py   one bf16 GEMM of 4096^3, torch.cuda.synchronize(), then a little Python (a sum)
  infer-b1  batch-1 inference of a 24-layer 1024-wide MLP, waited for with an event
  tiny      200 x 2 elementwise kernels on 4096 floats, then .item()

With --graph the loop body (the GPU work, not the wait or the Python) is captured once with
torch.cuda.graph and replayed each iteration, the wait kept: what the CUDA-Graph advice predicts.
At the end one line on stdout:
  ::gpudoc {"loop": ..., "graph": false, "steps": N, "step_ms_median": ..., "kernels_per_step": K}
timed per iteration with the host's clock (each iteration ends in its wait), after 20 warm-up
iterations.
"""
import argparse
import json
import statistics
import sys
import time

import torch


def body(loop):
    """The GPU work of one iteration and the wait that ends it."""
    if loop in ("gemm4", "gemm-py"):
        n = 4096
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        out = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
        count = 4 if loop == "gemm4" else 1

        def work():
            for _ in range(count):
                torch.matmul(a, b, out=out)

        def wait():
            torch.cuda.synchronize()
            if loop == "gemm-py":
                sum(range(20000))  # the Python a loop does between steps
        return work, wait, count
    if loop == "infer-b1":
        layers = []
        for _ in range(24):
            layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
        model = torch.nn.Sequential(*layers).cuda().eval()
        x = torch.randn(1, 1024, device="cuda")
        done = torch.cuda.Event()

        def work():
            with torch.no_grad():
                model(x)

        def wait():
            done.record()
            done.synchronize()
        return work, wait, 48
    if loop == "tiny":
        x = torch.zeros(4096, device="cuda")

        def work():
            for _ in range(200):
                x.mul_(1.0001)
                x.add_(1e-4)

        def wait():
            x[0].item()
        return work, wait, 400
    raise SystemExit(f"sync_loops.py: unknown loop {loop!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("loop", choices=("gemm4", "gemm-py", "infer-b1", "tiny"))
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--graph", action="store_true")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("sync_loops.py: no CUDA device", file=sys.stderr)
        return 3
    work, wait, kernels = body(args.loop)
    step = work
    if args.graph:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                work()
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            work()
        step = g.replay
    for _ in range(20):
        step()
        wait()
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        wait()
        times.append(time.perf_counter() - t0)
    print("::gpudoc " + json.dumps({"loop": args.loop, "graph": args.graph, "steps": args.steps,
                                    "step_ms_median": statistics.median(times) * 1e3,
                                    "kernels_per_step": kernels}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
