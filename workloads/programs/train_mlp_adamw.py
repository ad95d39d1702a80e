"""Train a 6 x 4096 MLP with AdamW in bf16, printing the loss every step's way: ``loss.item()``.

The plain training loop most tutorials show: synthetic batches made on the GPU, autocast to
bf16, backward, AdamW (fp32 weights), and ``loss.item()`` every step to keep a running average
(which waits for the step to finish before Python launches the next one).

    python3 train_mlp_adamw.py --duration 15 --width 4096 --layers 6 --batch-size 512
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
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--print-every", type=int, default=100)
    parser.add_argument("--cpu-smoke", action="store_true",
                        default=os.environ.get("GPUDOC_CPU_SMOKE", "") not in ("", "0"),
                        help="tiny sizes on the CPU for ~2 s")
    args = parser.parse_args()
    if args.cpu_smoke:
        args.duration, args.width, args.batch_size = min(args.duration, 2.0), 64, 16
        device = torch.device("cpu")
    else:
        device = torch.device("cuda")
    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [nn.Linear(args.width, args.width), nn.GELU()]
    model = nn.Sequential(*layers, nn.Linear(args.width, 1)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)

    truth = Truth("train_mlp_adamw", vars(args), device)
    truth.value("syncs_per_step", 1)

    step, running = 0, 0.0
    start = time.time()
    truth.start()
    while time.time() - start < args.duration:
        truth.begin("gpu")
        x = torch.randn(args.batch_size, args.width, device=device)
        y = x[:, :1].sin()
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            loss = F.mse_loss(model(x).float(), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        truth.end("gpu")
        running += loss.item()
        step += 1
        truth.step()
        if step % args.print_every == 0:
            print(f"step {step} loss {running / args.print_every:.5f} "
                  f"({(time.time() - start) / step * 1e3:.2f} ms/step)", flush=True)
            running = 0.0
    truth.stop()
    print(f"done: {step} steps in {time.time() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
