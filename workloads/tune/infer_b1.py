"""Answer requests one at a time (batch 1) with a deep, narrow MLP: launch-bound inference.

Each request is a feature vector made on the host, copied to the GPU and run through
``--layers`` blocks of Linear + LayerNorm + GELU under ``torch.inference_mode``; the answer is
``argmax().item()``, so every request waits for its own kernels. Those kernels take a few
microseconds each: the loop is bound by launching them from Python. One
``::gpudoc {"step_ms": ...}`` line per ``--per-line`` requests (their mean time per request).

    python3 infer_b1.py --requests 20000
    python3 infer_b1.py --cpu-smoke
"""
import argparse
import json
import os
import time

import torch
import torch.nn as nn


def build(width, layers, classes):
    blocks = []
    for _ in range(layers):
        blocks += [nn.Linear(width, width), nn.LayerNorm(width), nn.GELU()]
    blocks.append(nn.Linear(width, classes))
    return nn.Sequential(*blocks)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=20000)
    p.add_argument("--layers", type=int, default=32)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--per-line", type=int, default=20)
    p.add_argument("--cpu-smoke", action="store_true", default=os.environ.get("GPUDOC_CPU_SMOKE", "") not in ("", "0"))
    a = p.parse_args()
    if a.cpu_smoke:
        a.requests, a.layers, a.width = min(a.requests, 60), 4, 32
    device = "cpu" if a.cpu_smoke else "cuda"
    torch.manual_seed(0)
    model = build(a.width, a.layers, a.classes).to(device).eval()
    requests = torch.randn(256, a.width)
    answered, last = 0, time.perf_counter()
    with torch.inference_mode():
        for i in range(a.requests):
            x = requests[i % len(requests)].unsqueeze(0).to(device)
            label = model(x).argmax().item()
            answered += 1
            if answered % a.per_line == 0:
                now = time.perf_counter()
                print("::gpudoc " + json.dumps({"step": answered, "step_ms": round((now - last) * 1000 / a.per_line, 4),
                                                "label": label}), flush=True)
                last = time.perf_counter()


if __name__ == "__main__":
    main()
