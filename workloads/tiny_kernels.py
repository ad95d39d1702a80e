#!/usr/bin/env python3
"""Reference workload "tiny_kernels": a launch-bound loop of tiny elementwise kernels.

Each iteration launches two in-place ops on a ``--numel``-element fp32 tensor (``x.add_(1)``,
``x.sub_(1)``) one by one from Python, with no synchronization except once every
``--sync-every`` launches. Each kernel runs for a few microseconds on one or two SMs, while
PyTorch's eager dispatch on the host takes several microseconds per launch, so the GPU spends
most of its time waiting for the next launch.

Pattern: GPU utilization flat at a low-to-middling level (the share of time *some* kernel is
running, not how much of the chip it uses), GPM SM activity and occupancy near zero, tensor and
DRAM activity zero, power near idle, one CPU core of the process at ~100 %. This is the plateau
that CUDA Graphs, fusion or larger batches cure.
"""
from __future__ import annotations

import time

import _common as C
from _common import torch


def main() -> int:
    parser = C.make_parser(__doc__.splitlines()[0])
    parser.add_argument("--numel", type=C.positive_int, default=256,
                        help="elements of the fp32 tensor each kernel touches")
    parser.add_argument("--sync-every", type=C.positive_int, default=2000,
                        help="launches between two synchronizations (one step)")
    args = parser.parse_args()

    device = C.init_device(args.device)
    x = torch.rand(args.numel, dtype=torch.float32, device=device)
    for _ in range(100):  # warm the dispatcher and the kernels' first-launch costs
        x.add_(1.0)
        x.sub_(1.0)
    torch.cuda.synchronize(device)

    pairs = max(1, args.sync_every // 2)
    launches_per_step = 2 * pairs
    reporter = C.Reporter("tiny_kernels", C.params_of(args))
    with reporter.running(**C.device_info(device), launches_per_step=launches_per_step):
        while reporter.elapsed() < args.duration:
            t = time.perf_counter()
            for _ in range(pairs):
                x.add_(1.0)
                x.sub_(1.0)
            torch.cuda.synchronize(device)
            step_ms = (time.perf_counter() - t) * 1e3
            reporter.step(step_ms, us_per_launch=step_ms * 1e3 / launches_per_step)
    return C.EXIT_OK


if __name__ == "__main__":
    C.run_main(main)
