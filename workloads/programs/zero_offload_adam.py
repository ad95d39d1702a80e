"""Train an MLP with its optimizer on the CPU (ZeRO-offload style).

The weights the GPU uses are bf16; the fp32 master weights and the Adam state live in host
memory. Each step: forward and backward on the GPU, gradients copied to the host, AdamW on the
CPU, the updated weights copied back to the GPU. People do this to fit a model whose optimizer
state does not fit in device memory; the GPU then waits for the host most of the time.

    python3 zero_offload_adam.py --duration 15 --width 4096 --layers 8 --batch-size 2048
"""
import argparse
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from _truth import Truth


def build_model(width, layers, classes):
    blocks = []
    for _ in range(layers):
        blocks += [nn.Linear(width, width), nn.GELU()]
    blocks.append(nn.Linear(width, classes))
    return nn.Sequential(*blocks)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=15.0, help="seconds to train")
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=2048)
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--print-every", type=int, default=5)
    parser.add_argument("--cpu-smoke", action="store_true",
                        default=os.environ.get("GPUDOC_CPU_SMOKE", "") not in ("", "0"),
                        help="tiny sizes on the CPU for ~2 s")
    args = parser.parse_args()
    if args.cpu_smoke:
        args.duration, args.width, args.layers, args.batch_size = min(args.duration, 2.0), 64, 2, 32
        device = torch.device("cpu")
    else:
        device = torch.device("cuda")
    torch.manual_seed(0)

    model = build_model(args.width, args.layers, args.classes).to(device, torch.bfloat16)
    params = list(model.parameters())
    # fp32 master copy of every weight, and the optimizer, on the host
    master = [p.detach().to("cpu", torch.float32).clone() for p in params]
    for m in master:
        m.grad = torch.zeros_like(m)
    optimizer = torch.optim.AdamW(master, lr=args.lr)
    n_params = sum(p.numel() for p in params)
    print(f"model: {n_params / 1e6:.1f} M parameters, optimizer on the CPU "
          f"({torch.get_num_threads()} threads)", flush=True)

    truth = Truth("zero_offload_adam", vars(args), device)
    truth.value("parameters", n_params)
    truth.value("bytes_d2h_per_step", n_params * 2)
    truth.value("bytes_h2d_per_step", n_params * 4)

    step = 0
    start = time.time()
    truth.start()
    while time.time() - start < args.duration:
        x = torch.randn(args.batch_size, args.width, device=device, dtype=torch.bfloat16)
        y = torch.randint(0, args.classes, (args.batch_size,), device=device)
        truth.begin("gpu")
        loss = F.cross_entropy(model(x).float(), y)
        loss.backward()
        truth.end("gpu")

        with truth.host("grads_to_host"):
            for p, m in zip(params, master):
                m.grad.copy_(p.grad)
                p.grad = None
        with truth.host("cpu_adam"):
            optimizer.step()
        with truth.host("weights_to_gpu"):
            with torch.no_grad():
                for p, m in zip(params, master):
                    p.copy_(m)
        step += 1
        truth.step()
        if step % args.print_every == 0:
            print(f"step {step} loss {loss.item():.4f} "
                  f"({(time.time() - start) / step * 1e3:.0f} ms/step)", flush=True)
    truth.stop()
    print(f"done: {step} steps in {time.time() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
