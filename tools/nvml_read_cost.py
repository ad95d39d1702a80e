#!/usr/bin/env python3
"""Times NVML's total-energy read on every GPU: wall and CPU time per call over N calls, beside an
empty NVML call (nvmlDeviceGetCount_v2) for the cost of the call itself. Needs the NVIDIA driver
(libnvidia-ml.so.1); no other dependency. The figures are in docs/results/cost.md, "Reading the
energy counter".

    python3 tools/nvml_read_cost.py [N]      (default 2000 calls per GPU)
"""
from __future__ import annotations

import ctypes
import statistics
import sys
import time


def quantile(values: list[int], p: float) -> float:
    """The p-quantile of nanoseconds, in microseconds."""
    return sorted(values)[int(p * (len(values) - 1))] / 1000


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    try:
        lib = ctypes.CDLL("libnvidia-ml.so.1")
    except OSError as e:
        print(f"nvml_read_cost.py: the NVIDIA driver's NVML cannot be loaded: {e}", file=sys.stderr)
        return 3
    if lib.nvmlInit_v2() != 0:
        print("nvml_read_cost.py: nvmlInit_v2 failed", file=sys.stderr)
        return 3
    count = ctypes.c_uint()
    lib.nvmlDeviceGetCount_v2(ctypes.byref(count))
    for g in range(count.value):
        handle = ctypes.c_void_p()
        if lib.nvmlDeviceGetHandleByIndex_v2(g, ctypes.byref(handle)) != 0:
            print(f"GPU {g}: no handle")
            continue
        energy = ctypes.c_ulonglong()
        walls, cpus, empty = [], [], []
        for _ in range(n):
            c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
            status = lib.nvmlDeviceGetTotalEnergyConsumption(handle, ctypes.byref(energy))
            w1, c1 = time.perf_counter_ns(), time.thread_time_ns()
            if status != 0:
                print(f"GPU {g}: the energy read failed (NVML status {status})")
                break
            walls.append(w1 - w0)
            cpus.append(c1 - c0)
        for _ in range(n):
            w0 = time.perf_counter_ns()
            lib.nvmlDeviceGetCount_v2(ctypes.byref(count))
            empty.append(time.perf_counter_ns() - w0)
        if not walls:
            continue
        print(f"GPU {g}: {len(walls)} reads: wall median {statistics.median(walls) / 1000:.1f} us "
              f"p90 {quantile(walls, 0.9):.1f} us max {max(walls) / 1000:.1f} us; "
              f"CPU median {statistics.median(cpus) / 1000:.1f} us mean {statistics.mean(cpus) / 1000:.1f} us; "
              f"nvmlDeviceGetCount_v2 wall median {statistics.median(empty) / 1000:.1f} us")
    lib.nvmlShutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
