"""Train a residual MLP compiled with ``torch.compile``: a long warm-up, then steady training.

The first step triggers the compilation (TorchDynamo traces the model, Inductor generates and
compiles Triton kernels for the forward and the backward), which runs on the CPU while the GPU
waits; after it the loop runs the compiled kernels at full speed. Data are made on the GPU.

    python3 compile_train.py --duration 30 --width 2048 --blocks 4 --batch-size 16384
"""
import argparse
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from _truth import Truth


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


class Net(nn.Module):
    def __init__(self, width, blocks, classes):
        super().__init__()
        self.blocks = nn.Sequential(*[Block(width) for _ in range(blocks)])
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.blocks(x))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=30.0, help="seconds to train")
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=16384)
    parser.add_argument("--print-every", type=int, default=50)
    parser.add_argument("--cpu-smoke", action="store_true",
                        default=os.environ.get("GPUDOC_CPU_SMOKE", "") not in ("", "0"),
                        help="tiny sizes on the CPU for ~2 s (eager where torch.compile is missing)")
    args = parser.parse_args()
    if args.cpu_smoke:
        args.duration, args.width, args.blocks, args.batch_size = min(args.duration, 2.0), 32, 1, 16
        device = torch.device("cpu")
    else:
        device = torch.device("cuda")
    torch.manual_seed(0)
    model = Net(args.width, args.blocks, args.classes).to(device)
    if hasattr(torch, "compile") and not args.cpu_smoke:
        model = torch.compile(model)
    fused = {"fused": True} if device.type == "cuda" else {}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, **fused)

    truth = Truth("compile_train", vars(args), device)
    truth.value("compiled", hasattr(torch, "compile") and not args.cpu_smoke)

    step = 0
    start = time.time()
    truth.start()
    warm_steps = 2  # the first step compiles the forward and backward, the second settles
    while time.time() - start < args.duration:
        span = "warmup" if step < warm_steps else "gpu"
        truth.begin(span)
        x = torch.randn(args.batch_size, args.width, device=device)
        y = torch.randint(0, args.classes, (args.batch_size,), device=device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            loss = F.cross_entropy(model(x).float(), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        truth.end(span)
        step += 1
        truth.step()
        if step == 1:
            print(f"first step (compilation) took {time.time() - start:.1f} s", flush=True)
        if step == warm_steps:
            loss.item()
            truth.value("warmup_s", truth.elapsed())
        if step % args.print_every == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    truth.stop()
    print(f"done: {step} steps in {time.time() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
