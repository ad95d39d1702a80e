"""Train a wide MLP on big batches: large bf16 matrix products, the GPU saturated.

4 layers of 8192 x 8192 under bf16 autocast on batches of 16384 rows made on the GPU, fused
AdamW, ``loss.item()`` every step: each step is tens of milliseconds of tensor-core work, so the
per-step sync costs nothing noticeable.

    python3 saturated_train.py --duration 15 --width 8192 --batch-size 16384
"""
import argparse
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from _truth import Truth


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=15.0, help="seconds to train")
    parser.add_argument("--width", type=int, default=8192)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=16384)
    parser.add_argument("--cpu-smoke", action="store_true",
                        default=os.environ.get("GPUDOC_CPU_SMOKE", "") not in ("", "0"),
                        help="tiny sizes on the CPU for ~2 s")
    args = parser.parse_args()
    if args.cpu_smoke:
        args.duration, args.width, args.batch_size = min(args.duration, 2.0), 64, 64
        device = torch.device("cpu")
    else:
        device = torch.device("cuda")
    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [nn.Linear(args.width, args.width, bias=False), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(args.width, 1000)).to(device)
    fused = {"fused": True} if device.type == "cuda" else {}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, **fused)

    truth = Truth("saturated_train", vars(args), device)
    flops = 6 * args.batch_size * sum(p.numel() for p in model.parameters())
    truth.value("matmul_flops_per_step", flops)

    step = 0
    start = time.time()
    truth.start()
    while time.time() - start < args.duration:
        truth.begin("gpu")
        x = torch.randn(args.batch_size, args.width, device=device)
        y = torch.randint(0, 1000, (args.batch_size,), device=device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            loss = F.cross_entropy(model(x).float(), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        truth.end("gpu")
        value = loss.item()
        step += 1
        truth.step()
        if step % 20 == 0:
            print(f"step {step} loss {value:.4f} ({(time.time() - start) / step * 1e3:.1f} ms/step, "
                  f"{flops * step / (time.time() - start) / 1e12:.0f} TFLOP/s)", flush=True)
    truth.stop()
    print(f"done: {step} steps in {time.time() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
