"""Train a small MLP on large batches with its optimizer (Adam) on the CPU.

A small model (4 x 2048, ~17 M parameters) and a large batch: each step the GPU runs a
chip-filling forward and backward, then ``.cpu()`` brings the gradients to the host, Adam
updates CPU-resident fp32 weights, and ``.to("cuda")`` brings them back.

    python3 offload_adam_small.py --duration 15 --width 2048 --layers 4 --batch-size 8192
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
    parser.add_argument("--width", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=8192)
    parser.add_argument("--print-every", type=int, default=20)
    parser.add_argument("--cpu-smoke", action="store_true",
                        default=os.environ.get("GPUDOC_CPU_SMOKE", "") not in ("", "0"),
                        help="tiny sizes on the CPU for ~2 s")
    args = parser.parse_args()
    if args.cpu_smoke:
        args.duration, args.width, args.batch_size = min(args.duration, 2.0), 32, 16
        device = torch.device("cpu")
    else:
        device = torch.device("cuda")
    torch.manual_seed(0)
    cpu_model = nn.Sequential(*[m for _ in range(args.layers)
                                for m in (nn.Linear(args.width, args.width), nn.ReLU())],
                              nn.Linear(args.width, 10))
    optimizer = torch.optim.Adam(cpu_model.parameters(), lr=1e-3)
    gpu_model = nn.Sequential(*[m for _ in range(args.layers)
                                for m in (nn.Linear(args.width, args.width), nn.ReLU())],
                              nn.Linear(args.width, 10)).to(device)
    gpu_model.load_state_dict(cpu_model.state_dict())
    n_params = sum(p.numel() for p in cpu_model.parameters())

    truth = Truth("offload_adam_small", vars(args), device)
    truth.value("parameters", n_params)
    truth.value("bytes_each_way_per_step", n_params * 4)

    step = 0
    start = time.time()
    truth.start()
    while time.time() - start < args.duration:
        x = torch.randn(args.batch_size, args.width, device=device)
        y = torch.randint(0, 10, (args.batch_size,), device=device)
        truth.begin("gpu")
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            loss = F.cross_entropy(gpu_model(x).float(), y)
        gpu_model.zero_grad(set_to_none=True)
        loss.backward()
        truth.end("gpu")
        with truth.host("grads_to_host"):
            for cp, gp in zip(cpu_model.parameters(), gpu_model.parameters()):
                cp.grad = gp.grad.cpu()
        with truth.host("cpu_adam"):
            optimizer.step()
        with truth.host("weights_to_gpu"):
            with torch.no_grad():
                for cp, gp in zip(cpu_model.parameters(), gpu_model.parameters()):
                    gp.copy_(cp.to(device))
        step += 1
        truth.step()
        if step % args.print_every == 0:
            print(f"step {step} loss {loss.item():.4f} "
                  f"({(time.time() - start) / step * 1e3:.0f} ms/step)", flush=True)
    truth.stop()
    print(f"done: {step} steps in {time.time() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
