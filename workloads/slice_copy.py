#!/usr/bin/env python3
"""Host<->device copies the way PyTorch users make them, for the slice's copy-rate cap
(gpudoc slice --pcie RATE): prints one JSON line per kind of copy, for tools/check_slice.py.

    gpudoc slice --pcie 4G -- python3 workloads/slice_copy.py --seconds 3
    python3 workloads/slice_copy.py --seconds 3                           # the rate without a cap

Four kinds, each for --seconds: a pinned host tensor copied into a device tensor (`copy_`,
non_blocking, one synchronize at the end) and a pageable one, and a device tensor copied into a
pinned one (`copy_`, non_blocking) and out with `.cpu()` (a new pageable tensor), each of --mib MiB. Each line: kind, copies, bytes, seconds, GB/s (10^9 bytes a
second). Needs only the standard library and torch; exit 3 without a GPU.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from _common import require_cuda, torch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--mib", type=int, default=64)
    args = parser.parse_args()
    require_cuda()  # exit 3, saying why, without torch or a GPU
    n = args.mib << 20
    pinned = torch.empty(n, dtype=torch.uint8).pin_memory()
    pageable = torch.empty(n, dtype=torch.uint8)
    device = torch.empty(n, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()

    def h2d_pinned():
        device.copy_(pinned, non_blocking=True)

    def h2d_pageable():
        device.copy_(pageable)

    def d2h_pinned():
        pinned.copy_(device, non_blocking=True)

    def d2h_pageable():
        return device.cpu()

    for kind, fn in (("h2d_pinned", h2d_pinned), ("h2d_pageable", h2d_pageable), ("d2h_pinned", d2h_pinned),
                     ("d2h_pageable", d2h_pageable)):
        fn()  # first use (allocator, staging buffers) outside the timing
        torch.cuda.synchronize()
        copies, start = 0, time.perf_counter()
        while time.perf_counter() - start < args.seconds:
            fn()
            copies += 1
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        print(json.dumps({"kind": kind, "copies": copies, "bytes": copies * n, "seconds": round(elapsed, 4),
                          "gb_per_s": round(copies * n / elapsed / 1e9, 3)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
