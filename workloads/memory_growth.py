#!/usr/bin/env python3
"""Reference workload "memory_growth": device memory that grows step by step and is never
released (a leak: a list of tensors kept across iterations, e.g. losses kept with their graph).

Every ``--interval-s`` the process allocates a new ``--step-mib`` MiB tensor, fills it with
random values (so the pages are really touched) and appends it to a list it keeps, then does a
little compute (a reduction over the new tensor and a few small matmuls). Once the total reaches
``--cap-gib`` (default 40 GiB, lowered to leave 4 GiB free if the GPU has less), it stops
allocating and holds the memory, still doing the light compute every interval.

Pattern: memory used rises as a staircase of ``--step-mib`` steps, one per interval, and never
comes down (a flat top once capped); GPU utilization low with brief blips each interval; SM,
tensor and DRAM activity low. PyTorch's caching allocator asks the driver for each new block,
so NVML's memory-used follows ``torch.cuda.memory_reserved`` plus the context.
"""
from __future__ import annotations

import time

import _common as C
from _common import torch

RESERVE_FREE_BYTES = 4 << 30


def main() -> int:
    parser = C.make_parser(__doc__.splitlines()[0])
    parser.add_argument("--step-mib", type=C.positive_int, default=512,
                        help="MiB allocated and kept at each interval")
    parser.add_argument("--interval-s", type=C.positive_float, default=1.0,
                        help="seconds between allocations")
    parser.add_argument("--cap-gib", type=C.positive_float, default=40.0,
                        help="stop growing at this total and hold")
    args = parser.parse_args()

    device = C.init_device(args.device)
    free, _total = torch.cuda.mem_get_info(device)
    cap_bytes = min(int(args.cap_gib * (1 << 30)), max(0, free - RESERVE_FREE_BYTES))
    step_bytes = args.step_mib << 20
    if cap_bytes < step_bytes:
        C.log(f"only {free / (1 << 30):.1f} GiB free: not enough to grow by {args.step_mib} MiB")
        return C.EXIT_ENVIRONMENT
    small = C.make_matmul(1024, torch.bfloat16, device)
    small()
    torch.cuda.synchronize(device)

    kept: list = []
    kept_bytes = 0
    capped = False
    reporter = C.Reporter("memory_growth", C.params_of(args))
    with reporter.running(**C.device_info(device), effective_cap_mib=C.mib(cap_bytes)):
        next_tick = time.perf_counter()
        while reporter.elapsed() < args.duration:
            t = time.perf_counter()
            if kept_bytes + step_bytes <= cap_bytes:
                block = torch.empty(step_bytes // 4, dtype=torch.float32, device=device)
                block.uniform_()
                kept.append(block)
                kept_bytes += step_bytes
            elif not capped:
                capped = True
                C.emit({"workload": "memory_growth", "event": "cap_reached",
                        "kept_mib": C.mib(kept_bytes), "t": reporter.elapsed()})
            checksum = kept[-1].sum() if kept else None  # light compute: read the newest block
            for _ in range(4):
                small()
            if checksum is not None:
                checksum.item()  # synchronizes
            torch.cuda.synchronize(device)
            busy_ms = (time.perf_counter() - t) * 1e3
            next_tick += args.interval_s
            wait_s = next_tick - time.perf_counter()
            if wait_s > 0:
                time.sleep(min(wait_s, max(0.0, args.duration - reporter.elapsed())))
            else:
                next_tick = time.perf_counter()
            reporter.step((time.perf_counter() - t) * 1e3, busy_ms=busy_ms,
                          kept_mib=int(C.mib(kept_bytes)), tensors=len(kept),
                          reserved_mib=int(C.mib(torch.cuda.memory_reserved(device))),
                          capped=capped)
            reporter.end_fields = {"kept_mib": int(C.mib(kept_bytes)), "capped": capped}
    return C.EXIT_OK


if __name__ == "__main__":
    C.run_main(main)
