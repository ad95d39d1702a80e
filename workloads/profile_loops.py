#!/usr/bin/env python3
"""Loops with a known reason for the GPU to wait, for `gpudoc profile` and its checks.

    python3 workloads/profile_loops.py LOOP [--steps N] [--torch-profiler TRACE.json]

LOOP is one of:
  tiny        200 tiny kernels per step, launched one by one from Python (launch-bound)
  tiny-graph  the same 200 kernels captured once in a CUDA graph and replayed each step
  small, small-graph  the same with 100 larger kernels (2 Mi elements each): a second check of the
              graph prediction, whose constants were fitted on tiny-graph
  sync        20 kernels of 16 Mi elements and a .item() each step (sync-bound: the GPU runs ahead
              of the host within the step and waits for it after each sync)
  held        tiny, after subscribing to CUPTI itself first (CUPTI held by another client)
  gemm        10 bf16 GEMMs of 8192^3 per step (GPU-bound: graphs cannot help)
  item        40 small kernels and a loss.item() each step (a host sync every step)
  dynamic     an MLP whose batch size changes every step (dynamic shapes)
  starved     a small CNN training step fed by a DataLoader whose samples cost CPU time
  launch      a deep, narrow MLP trained at batch 8 (launch-bound real training)
  train       a small transformer training step at batch 32 x 256 tokens (host-bound on an H200:
              the GPU is busy ~40 % of the step; the overhead check's first real step)
  train-gpu   the same transformer at batch 256 x 256 tokens (GPU-bound: the overhead check's
              second real step, the size people train at on a GPU this large)
  train-resnet  torchvision's ResNet-50 trained at batch 128 (224 x 224, bf16 autocast,
              channels-last, SGD with momentum, loss.item() each step) on images already on the GPU:
              the overhead check's third real step
  mixed       a deterministic mix (tiny kernels, GEMMs, copies) for the torch.profiler comparison
  crash       tiny for N steps, then the process aborts (SIGABRT) without any exit handler: the
              ::gpudoc line comes first, with the kernels launched so far
  fork        tiny for N/2 steps, then a fork whose child never uses CUDA (as DataLoader workers
              do) and exits at once, then N/2 more steps in the parent

Each step is an NVTX range named "step". At the end one line on stdout:
  ::gpudoc {"loop": ..., "steps": N, "step_ms_median": ..., "step_ms_mean": ...}
where step_ms_mean is the wall time of all timed steps divided by their number (one
synchronization at the end), and step_ms_median the median of per-step times for the loops that
synchronize each step anyway (item, starved, train, train-gpu, train-resnet), else equal to the mean.
With --torch-profiler the whole program runs under torch.profiler and the line also has the
kernel count and total kernel time of its trace (the comparison with gpudoc's CUPTI records).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time

import torch
import torch.nn as nn

NVTX = torch.cuda.nvtx


def tiny(steps, graph=False, kernels=200, numel=4096):
    x = torch.zeros(numel, device="cuda")
    ops = lambda: [x.add_(1.0) for _ in range(kernels)]  # noqa: E731
    for _ in range(3):
        ops()
    torch.cuda.synchronize()
    if graph:
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            ops()
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            ops()
        run = g.replay
    else:
        run = ops
    return timed(steps, run, sync_each=False)


def sync(steps):
    """The GPU runs ahead of the host within a step; the .item() at its end makes it wait for the host."""
    x = torch.randn(1 << 24, device="cuda")

    def step():
        y = x
        for _ in range(20):
            y = y * 1.0001 + 0.5
        return y.sum().item()
    return timed(steps, step, sync_each=True)


def held(steps):
    """Another CUPTI client subscribes before the program's first CUDA call (as a profiler started
    before CUDA initialises does); gpudoc profile must say CUPTI is held and exit 3."""
    import ctypes
    import glob
    try:  # the CUPTI the process already has (PyTorch's), else the toolkit's
        cupti = ctypes.CDLL("libcupti.so.13")
    except OSError:
        cupti = ctypes.CDLL(sorted(glob.glob("/usr/local/cuda*/targets/x86_64-linux/lib/libcupti.so.1*"))[0])
    callback = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p)(
        lambda *a: None)
    handle = ctypes.c_void_p()
    rc = cupti.cuptiSubscribe(ctypes.byref(handle), callback, None)
    print(f"held: cuptiSubscribe returned {rc}", file=sys.stderr)
    held.keep = (cupti, callback)
    return tiny(steps)


def gemm(steps):
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)

    def step():
        for _ in range(10):
            torch.mm(a, b)
    step()
    return timed(steps, step, sync_each=False)


def item(steps):
    x = torch.randn(1 << 16, device="cuda")

    def step():
        y = x
        for _ in range(40):
            y = y * 1.0001 + 0.5
        return y.sum().item()
    return timed(steps, step, sync_each=True)


def dynamic(steps):
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 512)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    gen = torch.Generator().manual_seed(0)
    sizes = [int(s) for s in torch.randint(8, 512, (steps + 8,), generator=gen)]
    it = iter(sizes)

    def step():
        x = torch.randn(next(it), 512, device="cuda")
        loss = model(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return timed(steps, step, sync_each=False)


class CpuHeavy(torch.utils.data.Dataset):
    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        img = torch.rand(3, 64, 64)
        for _ in range(6):  # decoding and augmentation, as a loader without workers does it
            img = torch.flip(img, dims=[2]) * 0.99 + 0.001
        return img, i % 10


def starved(steps):
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    loader = iter(torch.utils.data.DataLoader(CpuHeavy(), batch_size=64, num_workers=0))

    def step():
        x, y = next(loader)
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return timed(steps, step, sync_each=True)


def launch(steps):
    layers = []
    for _ in range(24):
        layers += [nn.Linear(64, 64), nn.GELU()]
    model = nn.Sequential(*layers).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)
    x = torch.randn(8, 64, device="cuda")

    def step():
        loss = model(x).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return timed(steps, step, sync_each=False)


def train(steps, batch=32):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True)
    model = nn.TransformerEncoder(layer, 6).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(batch, 256, 512, device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x).float().square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return timed(steps, step, sync_each=True)


def train_resnet(steps, batch=128):
    import torchvision  # only this loop needs it
    torch.manual_seed(0)
    model = torchvision.models.resnet50(num_classes=1000).cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(batch, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss.item()
    return timed(steps, step, sync_each=True)


def mixed(steps):
    torch.manual_seed(0)
    x = torch.zeros(4096, device="cuda")
    a = torch.randn(2048, 2048, device="cuda")
    h = torch.randn(2048, 2048).pin_memory()

    def step():
        for _ in range(50):
            x.add_(1.0)
        for _ in range(4):
            torch.mm(a, a)
        a.copy_(h, non_blocking=True)
    return timed(steps, step, sync_each=False, warmup=0)


def timed(steps, fn, sync_each, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    t0 = time.perf_counter()
    for _ in range(steps):
        t = time.perf_counter()
        NVTX.range_push("step")
        fn()
        NVTX.range_pop()
        if sync_each:
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t) * 1e3)
    torch.cuda.synchronize()
    mean = (time.perf_counter() - t0) * 1e3 / max(1, steps)
    return {"steps": steps, "step_ms_mean": round(mean, 4),
            "step_ms_median": round(statistics.median(times), 4) if times else round(mean, 4)}


def crash(steps):
    result = tiny(steps)
    torch.cuda.synchronize()
    result["loop"] = "crash"
    result["kernels_launched"] = (3 + steps) * 200  # the warm-up and the steps (and a fill, maybe, for zeros)
    print("::gpudoc " + json.dumps(result), flush=True)
    time.sleep(1.0)  # CUPTI's flush period is 0.5 s: what was launched is on its way to the file
    os.abort()


def fork(steps):
    first = tiny(steps // 2)
    pid = os.fork()
    if pid == 0:
        os._exit(0)  # the child: no CUDA (it could not use the parent's context anyway)
    _, status = os.waitpid(pid, 0)
    second = tiny(steps - steps // 2)
    return {"steps": steps, "step_ms_mean": round((first["step_ms_mean"] + second["step_ms_mean"]) / 2, 4),
            "step_ms_median": round((first["step_ms_median"] + second["step_ms_median"]) / 2, 4),
            "child_status": status, "kernels_launched": (6 + steps) * 200}  # as in crash, twice


LOOPS = {"tiny": tiny, "tiny-graph": lambda n: tiny(n, graph=True), "gemm": gemm, "item": item, "dynamic": dynamic,
         "small": lambda n: tiny(n, kernels=100, numel=1 << 21),
         "small-graph": lambda n: tiny(n, graph=True, kernels=100, numel=1 << 21), "sync": sync, "held": held,
         "starved": starved, "launch": launch, "train": train, "train-gpu": lambda n: train(n, batch=256),
         "train-resnet": train_resnet,
         "mixed": mixed, "crash": crash, "fork": fork}


def kernel_totals(trace_path):
    with open(trace_path) as f:
        events = json.load(f).get("traceEvents", [])
    kernels = [e for e in events if e.get("cat") == "kernel" and e.get("ph") == "X"]
    return len(kernels), sum(float(e.get("dur", 0)) for e in kernels) * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("loop", choices=sorted(LOOPS))
    p.add_argument("--steps", type=int, default=100)
    p.add_argument("--torch-profiler", metavar="TRACE", help="run under torch.profiler, export its trace here")
    p.add_argument("--torch-activities", choices=("all", "cuda"), default="all",
                   help="torch.profiler's activities: CPU and CUDA (default), or CUDA only (CUPTI's kernels and "
                        "runtime calls, what gpudoc profile records: the overhead comparison)")
    args = p.parse_args()
    if not torch.cuda.is_available():
        print("profile_loops: no CUDA GPU", file=sys.stderr)
        return 3
    ctx = contextlib.nullcontext()
    if args.torch_profiler:
        from torch.profiler import ProfilerActivity, profile
        activities = [ProfilerActivity.CUDA] if args.torch_activities == "cuda" else [ProfilerActivity.CPU,
                                                                                       ProfilerActivity.CUDA]
        ctx = profile(activities=activities)
    with ctx as prof:
        result = LOOPS[args.loop](args.steps)
        torch.cuda.synchronize()
    result["loop"] = args.loop
    if args.torch_profiler:
        prof.export_chrome_trace(args.torch_profiler)
        result["torch_profiler_kernels"], result["torch_profiler_kernel_ns"] = kernel_totals(args.torch_profiler)
    print("::gpudoc " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
