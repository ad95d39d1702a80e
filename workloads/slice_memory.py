#!/usr/bin/env python3
"""What a PyTorch job sees inside ``gpudoc slice --mem SIZE``: it allocates in steps until the
slice refuses, and prints one JSON line for tools/check_slice.py.

    gpudoc slice --mem 20G -- python3 workloads/slice_memory.py [--step-mib 256]
    gpudoc slice --mem 20G -- python3 workloads/slice_memory.py --shared   # two processes, one budget

The line: ``{"allocator": ..., "mem_get_info": [free, total], "device_total": ..., "allocated":
bytes held when the allocation failed, "oom": "torch.OutOfMemoryError" or the other exception's
type, "message": first line of it, "matmul_ok": a matmul ran before}``. With --shared the parent
holds 60 % of the slice and a child (spawned, a new process of the same slice) asks for 60 % too:
the child's line says whether it got torch.OutOfMemoryError. Exit 0 when the run finished (the
checker decides PASS/FAIL), 3 without torch or a GPU. Needs only the standard library and torch.
"""
from __future__ import annotations

import argparse
import json
import os
import sys


def report(**fields):
    print(json.dumps(fields), flush=True)


def fill(torch, step_bytes, limit_bytes=None):
    """Allocates step_bytes at a time until the slice (or limit_bytes) refuses; returns what was
    held, the exception's type and its first line."""
    held, blocks = 0, []
    try:
        while limit_bytes is None or held < limit_bytes:
            blocks.append(torch.empty(step_bytes, dtype=torch.uint8, device="cuda"))
            held += step_bytes
        return held, None, ""
    except Exception as e:  # noqa: BLE001 - the type is what is checked
        return held, type(e).__module__ + "." + type(e).__name__, str(e).splitlines()[0][:300]


def child(step_bytes, want_bytes, queue):
    import torch
    held, oom, message = fill(torch, step_bytes, want_bytes)
    queue.put({"role": "child", "pid": os.getpid(), "allocated": held, "oom": oom, "message": message})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step-mib", type=int, default=256)
    parser.add_argument("--shared", action="store_true")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("slice_memory: no torch", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("slice_memory: no GPU", file=sys.stderr)
        return 3
    a = torch.randn(1024, 1024, device="cuda")
    matmul_ok = bool(torch.isfinite(a @ a).all().item())
    free, total = torch.cuda.mem_get_info()
    device_total = torch.cuda.get_device_properties(0).total_memory
    allocator = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "native") or "native"
    step = args.step_mib << 20
    if args.shared:
        import torch.multiprocessing as mp
        hold = (int(total * 0.6) // step) * step
        held, oom, message = fill(torch, step, hold)
        ctx = mp.get_context("spawn")
        queue = ctx.Queue()
        p = ctx.Process(target=child, args=(step, hold, queue))
        p.start()
        result = queue.get(timeout=300)
        p.join()
        report(role="parent", allocator=allocator, mem_get_info=[free, total], allocated=held, oom=oom)
        report(**result, allocator=allocator, slice_total=total)
        return 0
    held, oom, message = fill(torch, step)
    report(allocator=allocator, mem_get_info=[free, total], device_total=device_total, allocated=held, oom=oom,
           message=message, matmul_ok=matmul_ok)
    return 0


if __name__ == "__main__":
    sys.exit(main())
