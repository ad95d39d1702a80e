#!/usr/bin/env python3
"""Reference workload "idle": a process that holds a CUDA context and a little device memory
and does nothing for the whole duration.

Pattern: GPU utilization 0 %, GPM SM/tensor/DRAM activity 0, power near the idle floor, memory
used = context + ``--mem-mib``; the process appears in the GPU's process list with its memory
but with 0 % per-process utilization. This is the "allocated but idle" case (a job stuck before
its first kernel, a notebook holding a GPU).
"""
from __future__ import annotations

import time

import _common as C
from _common import torch


def main() -> int:
    parser = C.make_parser(__doc__.splitlines()[0])
    parser.add_argument("--mem-mib", type=C.positive_int, default=256,
                        help="device memory to allocate, fill with random values and hold")
    args = parser.parse_args()

    device = C.init_device(args.device)
    held = torch.rand(args.mem_mib * (1 << 20) // 4, dtype=torch.float32, device=device)
    torch.cuda.synchronize(device)

    reporter = C.Reporter("idle", C.params_of(args))
    with reporter.running(**C.device_info(device), held_mib=C.mib(held.numel() * 4)):
        while True:
            remaining = args.duration - reporter.elapsed()
            if remaining <= 0:
                break
            t = time.perf_counter()
            time.sleep(min(1.0, remaining))
            reporter.step((time.perf_counter() - t) * 1e3)
    del held
    return C.EXIT_OK


if __name__ == "__main__":
    C.run_main(main)
