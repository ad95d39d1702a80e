#!/usr/bin/env python3
"""PyTorch's figures for the ceilings `gpudoc bench` measures, taken the same way on the same GPU.

Same method as gpudoc: warm-up, then N samples, each timed with a pair of CUDA events around enough
work to last >= 50 ms (GEMM) or a fixed number of operations (copies); median, min, max and
CV = population stddev / mean. Keys are gpudoc's where the figure is the same figure:

  hbm.copy           dst.copy_(src), 1 GiB buffers: GB/s = 2 x bytes / time / 1e9 (read + write)
  gemm.fp32          torch.matmul 8192^3, allow_tf32 = False        TFLOP/s = 2*M*N*K / time / 1e12
  gemm.tf32          same with allow_tf32 = True
  gemm.fp16 / bf16   torch.matmul on fp16 / bf16 tensors
  gemm.fp8           torch._scaled_mm, e4m3 x e4m3 (B column-major), per-tensor scales, bf16 out
  pcie.{h2d,d2h}.{pinned,pageable}   1 GiB tensor copies host <-> device: GB/s = bytes / time / 1e9

--match GPUDOC_JSON gives each GEMM gpudoc's timeline from that `gpudoc bench --json` output: the
warm-up lasts as long as the GPU had been busy before gpudoc's first sample
(params.busy_seconds_before_samples: warm-up, probes, final), and the samples as many and as long.
Under the power cap the figure depends on that time: the die warms and the clock falls (H200,
2026-11-30: TF32 353 TFLOP/s after 1 s, 345 after 4.5 s of matmuls).

tools/compare_with_pytorch.py runs it; alone:
    python3 tools/pytorch/single_gpu.py [--reps 20] [--device 0] [--only gemm.bf16,hbm.copy]
                                        [--match gpudoc.json] > torch.json
"""
import argparse
import json
import math
import statistics
import sys
import time

import torch

GIB = 1 << 30


def summarize(samples, unit, params):
    mean = statistics.fmean(samples)
    sd = statistics.pstdev(samples) if len(samples) > 1 else 0.0
    return {
        "unit": unit,
        "median": statistics.median(samples),
        "min": min(samples),
        "max": max(samples),
        "mean": mean,
        "cv": sd / mean if mean else 0.0,
        "samples": samples,
        "params": params,
    }


def time_ops(fn, count, stream=None):
    """Seconds per op of `count` back-to-back calls of fn, between two CUDA events."""
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    start.record(stream)
    for _ in range(count):
        fn()
    stop.record(stream)
    stop.synchronize()
    return start.elapsed_time(stop) / 1e3 / count


def ops_for(seconds_each, target):
    return max(1, min(100000, math.ceil(target / seconds_each))) if seconds_each > 0 else 1


def bench_copy(reps):
    n = GIB
    src = torch.randint(0, 255, (n,), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    fn = lambda: dst.copy_(src)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    per = 5
    samples = [2 * n / time_ops(fn, per) / 1e9 for _ in range(reps)]
    ok = torch.equal(dst, src)
    return summarize(samples, "GB/s", {"bytes": n, "copies_per_sample": per, "verified": bool(ok)})


def gemm_operands(dtype, m, n, k):
    if dtype == "fp8":
        a = (torch.rand(m, k, device="cuda") * 2 - 1).to(torch.float8_e4m3fn)
        b = (torch.rand(n, k, device="cuda") * 2 - 1).to(torch.float8_e4m3fn).t()  # column-major K x N
        sa = torch.tensor(0.5, device="cuda")
        sb = torch.tensor(0.25, device="cuda")
        fn = lambda: torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
        ref = lambda: (a[:64].float() @ b[:, :64].float()) * 0.125
        return fn, ref, 0.5
    torch_dtype = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    a = (torch.rand(m, k, device="cuda") * 2 - 1).to(torch_dtype)
    b = (torch.rand(k, n, device="cuda") * 2 - 1).to(torch_dtype)
    fn = lambda: torch.matmul(a, b)
    ref = lambda: a[:64].double() @ b[:, :64].double()
    # Sanity bounds on |error| of 64x64 outputs (values ~ +-30): a wrong result is off by ~30.
    tol = {"fp32": 1e-2, "tf32": 0.5, "fp16": 0.5, "bf16": 1.0}[dtype]
    return fn, ref, tol


def bench_gemm(dtype, size, reps, warmup_seconds, sample_seconds):
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    m = n = k = size
    fn, ref, tol = gemm_operands(dtype, m, n, k)
    fn()
    torch.cuda.synchronize()
    one = time_ops(fn, 1)
    probe = time_ops(fn, ops_for(one, 0.01))
    warm = ops_for(probe, warmup_seconds)
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    per = ops_for(probe, sample_seconds)
    samples = [2.0 * m * n * k / time_ops(fn, per) / 1e12 for _ in range(reps)]
    out = fn()[:64, :64].double()
    err = (out - ref().double()).abs().max().item()
    torch.backends.cuda.matmul.allow_tf32 = False
    return summarize(samples, "TFLOP/s", {"m": m, "n": n, "k": k, "matmuls_per_sample": per, "warmup_matmuls": warm,
                                          "warmup_seconds": warmup_seconds, "sample_seconds": sample_seconds,
                                          "max_abs_error_64x64": err, "verified": err <= tol})


def bench_transfer(direction, pinned, reps):
    n = GIB
    host = torch.empty(n, dtype=torch.uint8, pin_memory=pinned)
    host.fill_(7)  # the content does not matter to the link; random_ on 1 GiB of host memory takes seconds
    dev = torch.empty(n, dtype=torch.uint8, device="cuda")
    stream = torch.cuda.Stream()
    if direction == "h2d":
        fn = lambda: dev.copy_(host, non_blocking=True)
    else:
        fn = lambda: host.copy_(dev, non_blocking=True)
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn()
        stream.synchronize()
        samples = [n / time_ops(fn, 1, stream) / 1e9 for _ in range(reps)]
        stream.synchronize()
    return summarize(samples, "GB/s", {"bytes": n, "host_memory": "pinned" if pinned else "pageable"})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--warmup-seconds", type=float, default=1.0)
    ap.add_argument("--sample-seconds", type=float, default=0.05)
    ap.add_argument("--only", default="", help="comma-separated keys or groups (gemm, pcie, hbm)")
    ap.add_argument("--match", metavar="GPUDOC_JSON", help="give each GEMM gpudoc's timeline from this bench --json output")
    args = ap.parse_args()
    torch.cuda.set_device(args.device)
    matched = {}
    if args.match:
        with open(args.match) as f:
            for e in json.load(f).get("results", []):
                p = e.get("result", {}).get("params", {})
                if e.get("key", "").startswith("gemm.") and "busy_seconds_before_samples" in p:
                    matched[e["key"]] = (p["busy_seconds_before_samples"], p["sample_seconds_target"], p["repetitions"])
    only = [s for s in args.only.split(",") if s]

    def wanted(key):
        return not only or any(key == o or key.startswith(o + ".") for o in only)

    jobs = [("hbm.copy", lambda: bench_copy(args.reps))]
    for dt in ("fp32", "tf32", "fp16", "bf16", "fp8"):
        warm, sample, reps = matched.get(f"gemm.{dt}", (args.warmup_seconds, args.sample_seconds, args.reps))
        jobs.append((f"gemm.{dt}", lambda dt=dt, w=warm, s=sample, r=reps: bench_gemm(dt, 8192, r, w, s)))
    for pinned in (True, False):
        for direction in ("h2d", "d2h"):
            key = f"pcie.{direction}.{'pinned' if pinned else 'pageable'}"
            jobs.append((key, lambda d=direction, p=pinned: bench_transfer(d, p, args.reps)))

    results = {}
    t0 = time.monotonic()
    for key, job in jobs:
        if not wanted(key):
            continue
        print(f"torch_bench: {key} ...", file=sys.stderr, flush=True)
        try:
            results[key] = job()
        except Exception as e:  # one failure never stops the others, as in gpudoc
            results[key] = {"error": f"{type(e).__name__}: {e}"}
        torch.cuda.empty_cache()
    props = torch.cuda.get_device_properties(args.device)
    print(json.dumps({
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": props.name,
        "reps": args.reps,
        "wall_seconds": time.monotonic() - t0,
        "results": results,
    }, indent=2))


if __name__ == "__main__":
    main()
