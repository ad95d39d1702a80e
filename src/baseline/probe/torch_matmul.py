#!/usr/bin/env python3
"""gpudoc's framework probe: the time of one PyTorch matmul on the GPU (source article 000 section 5).

`gpudoc baseline record NAME --probe` runs this (it is compiled into gpudoc, so the binary needs
no copy of this file) and keeps its figures like a workload's: it prints them with the
`::gpudoc` metrics protocol (README, "The ::gpudoc metrics protocol").

Figures: probe.matmul_<dtype>_ms, one sample per repetition: the mean time of --calls
back-to-back torch.matmul calls on random --size x --size operands, timed with CUDA events after a
one-second warm-up. Lower is better; the default bound is 10 % (a matmul time up by more than
10 % regresses).
The TFLOP/s of the median goes into the end event (not a figure: it is the same measurement).

Exit codes: 0 done; 3 no torch or no usable CUDA GPU (the reason on stderr and in an
{"event": "unavailable", "reason": ...} line); 2 bad usage. Never changes a GPU setting.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def emit(obj: dict) -> None:
    sys.stdout.write("::gpudoc " + json.dumps(obj) + "\n")
    sys.stdout.flush()


def unavailable(reason: str) -> int:
    emit({"event": "unavailable", "reason": reason})
    sys.stderr.write(f"gpudoc probe unavailable: {reason}\n")
    return 3


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--dtype", choices=["bf16", "fp16", "fp32"], default="bf16")
    p.add_argument("--reps", type=int, default=20, help="repetitions (samples)")
    p.add_argument("--calls", type=int, default=10, help="matmuls per repetition")
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--check-only", action="store_true", help="only say whether the probe can run")
    args = p.parse_args()
    if args.size <= 0 or args.reps <= 0 or args.calls <= 0:
        p.error("--size, --reps and --calls must be positive")

    try:
        import torch  # noqa: PLC0415 (imported here so that a missing torch is a clear message)
    except Exception as e:  # ImportError, or a broken install raising anything else
        return unavailable(f"python3 cannot import torch ({type(e).__name__}: {e})")
    if not torch.cuda.is_available():
        return unavailable(f"torch {torch.__version__} sees no CUDA GPU (torch.cuda.is_available() is False)")
    if args.device >= torch.cuda.device_count():
        return unavailable(f"no CUDA device {args.device} (torch sees {torch.cuda.device_count()})")
    if args.check_only:
        emit({"event": "available", "torch": torch.__version__, "gpu": torch.cuda.get_device_name(args.device)})
        return 0

    dev = torch.device("cuda", args.device)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    a = torch.randn(args.size, args.size, device=dev, dtype=dtype)
    b = torch.randn(args.size, args.size, device=dev, dtype=dtype)
    c = torch.empty(args.size, args.size, device=dev, dtype=dtype)
    emit({"event": "start", "probe": "torch_matmul", "torch": torch.__version__,
          "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(dev), "size": args.size,
          "dtype": args.dtype, "reps": args.reps, "calls": args.calls})

    end_warm = time.monotonic() + 1.0
    while time.monotonic() < end_warm:
        for _ in range(args.calls):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize(dev)

    name = f"probe.matmul_{args.dtype}_ms"
    times = []
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(args.reps):
        start.record()
        for _ in range(args.calls):
            torch.matmul(a, b, out=c)
        stop.record()
        stop.synchronize()
        ms = start.elapsed_time(stop) / args.calls
        times.append(ms)
        emit({name: ms})
    # Verified outside the timed region: one product against a float32 reference on a slice.
    ref = torch.matmul(a[:64].float(), b.float())
    err = (c[:64].float() - ref).abs().max().item() / max(ref.abs().max().item(), 1e-30)
    med = statistics.median(times)
    emit({"event": "end", "probe": "torch_matmul", "median_ms": med,
          "tflops": 2.0 * args.size ** 3 / (med * 1e-3) / 1e12, "max_rel_error": err})
    if not err < 0.05:
        sys.stderr.write(f"gpudoc probe: matmul result does not verify (max relative error {err})\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
