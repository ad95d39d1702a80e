"""Train a 6 x 4096 MLP with AdamW in bf16 for a fixed number of steps, as a CI job does.

A plain loop with ``loss.item()`` every step and no ``::gpudoc`` lines: what a regression gate
sees of it is the process's own time, its start-up and its GPU work. ``--slower F`` makes every
step take (1 + F) times as long (the host waits F x the step's own time after it), a regression
of known size for the gate to catch. The mean step time and the steps are printed on stderr.

    python3 train_steps.py --steps 2000            # about 5 s of training on an H200
    python3 train_steps.py --steps 2000 --slower 0.10
"""
import argparse
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="training steps")
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--slower", type=float, default=0.0,
                        help="make each step this fraction slower (0.10: 10 %%) by waiting on the host")
    args = parser.parse_args()
    if args.steps < 1 or args.slower < 0:
        parser.error("--steps must be >= 1 and --slower >= 0")
    if not torch.cuda.is_available():
        print("train_steps.py: no CUDA device", file=sys.stderr)
        return 3
    device = torch.device("cuda")
    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [nn.Linear(args.width, args.width), nn.GELU()]
    model = nn.Sequential(*layers, nn.Linear(args.width, 1)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)

    running, work = 0.0, 0.0
    for _ in range(args.steps):
        t0 = time.perf_counter()
        x = torch.randn(args.batch_size, args.width, device=device)
        y = x[:, :1].sin()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.mse_loss(model(x).float(), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        running += loss.item()
        step_s = time.perf_counter() - t0
        work += step_s
        if args.slower > 0:
            end = time.perf_counter() + args.slower * step_s
            while time.perf_counter() < end:
                pass
    print(f"train_steps.py: {args.steps} steps, mean step {work / args.steps * 1e3:.3f} ms before the slowdown, "
          f"mean loss {running / args.steps:.4f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
