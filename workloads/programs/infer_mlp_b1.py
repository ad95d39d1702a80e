"""Serve a 24-layer MLP one request at a time (batch 1).

Requests wait in a queue (the server is never idle for lack of work); each is a feature vector
on the host, moved to the GPU, run through the model under ``torch.inference_mode`` and answered
with ``argmax().item()``. Every layer is a 1 x 1024 by 1024 x 1024 product: kernels of a few
microseconds, launched one after another from Python.

    python3 infer_mlp_b1.py --duration 15 --layers 24 --width 1024
"""
import argparse
import os
import time
from collections import deque

import torch
import torch.nn as nn

from _truth import Truth


def build_model(width, layers, classes):
    blocks = []
    for _ in range(layers):
        blocks += [nn.Linear(width, width), nn.ReLU()]
    blocks.append(nn.Linear(width, classes))
    return nn.Sequential(*blocks)


def kernel_time_ms(model, width, device, replays=200):
    """GPU time of one request's kernels alone: the same forward captured in a CUDA graph and
    replayed (no launch gaps), per request."""
    static_x = torch.randn(1, width, device=device, dtype=torch.bfloat16)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.inference_mode():
        for _ in range(3):
            model(static_x).argmax()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.inference_mode():
        model(static_x).argmax()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    graph.replay()
    start.record()
    for _ in range(replays):
        graph.replay()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / replays


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=15.0, help="seconds to serve")
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--print-every-s", type=float, default=1.0)
    parser.add_argument("--cpu-smoke", action="store_true",
                        default=os.environ.get("GPUDOC_CPU_SMOKE", "") not in ("", "0"),
                        help="tiny sizes on the CPU for ~2 s")
    args = parser.parse_args()
    if args.cpu_smoke:
        args.duration, args.width, args.layers = min(args.duration, 2.0), 64, 4
        device = torch.device("cpu")
    else:
        device = torch.device("cuda")
    torch.manual_seed(0)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    model = build_model(args.width, args.layers, args.classes).to(device, dtype).eval()
    pending = deque(torch.randn(1, args.width) for _ in range(4096))  # requests, on the host

    truth = Truth("infer_mlp_b1", vars(args), device)
    if truth.enabled and device.type == "cuda":
        truth.value("gpu_exec_ms_per_request", kernel_time_ms(model, args.width, device))
    truth.value("kernels_per_request", 2 * args.layers + 3)

    served = 0
    start = last = time.time()
    truth.start()
    while time.time() - start < args.duration:
        request = pending.popleft()
        truth.begin("gpu")
        with torch.inference_mode():
            x = request.to(device, dtype)
            answer = model(x).argmax()
        truth.end("gpu")
        label = answer.item()
        pending.append(request)
        served += 1
        truth.step()
        now = time.time()
        if now - last >= args.print_every_s:
            print(f"served {served} requests, {served / (now - start):.0f}/s, last label {label}",
                  flush=True)
            last = now
    truth.stop(requests=served)
    print(f"done: {served} requests in {time.time() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
