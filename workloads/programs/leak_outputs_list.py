"""Train a classifier that keeps every step's outputs in a Python list for an epoch-end metric.

To compute the epoch's accuracy and confusion matrix at the end of the epoch, the loop appends
each step's logits and labels to lists: ``detach()``-ed, but still on the GPU. The epoch is long
(``--epoch-steps``), so device memory grows by one batch of logits per step until it ends; the
run is shorter than an epoch. (A run that would leave less than ``--min-free-gib`` of device
memory free stops early, as the user would before the out-of-memory error.)

    python3 leak_outputs_list.py --duration 15 --classes 1000 --batch-size 8192
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
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=8192)
    parser.add_argument("--epoch-steps", type=int, default=100000)
    parser.add_argument("--min-free-gib", type=float, default=16.0)
    parser.add_argument("--cpu-smoke", action="store_true",
                        default=os.environ.get("GPUDOC_CPU_SMOKE", "") not in ("", "0"),
                        help="tiny sizes on the CPU for ~2 s")
    args = parser.parse_args()
    if args.cpu_smoke:
        args.duration, args.width, args.batch_size, args.classes = min(args.duration, 2.0), 32, 32, 10
        device = torch.device("cpu")
    else:
        device = torch.device("cuda")
    torch.manual_seed(0)
    layers = []
    for _ in range(args.layers):
        layers += [nn.Linear(args.width, args.width), nn.GELU()]
    model = nn.Sequential(*layers, nn.Linear(args.width, args.classes)).to(device)
    fused = {"fused": True} if device.type == "cuda" else {}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, **fused)

    truth = Truth("leak_outputs_list", vars(args), device)
    truth.value("kept_bytes_per_step", args.batch_size * (args.classes * 4 + 8))
    epoch_logits, epoch_labels = [], []

    step = 0
    start = time.time()
    truth.start()
    while time.time() - start < args.duration:
        truth.begin("gpu")
        x = torch.randn(args.batch_size, args.width, device=device)
        y = torch.randint(0, args.classes, (args.batch_size,), device=device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            logits = model(x).float()
            loss = F.cross_entropy(logits, y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        truth.end("gpu")
        epoch_logits.append(logits.detach())
        epoch_labels.append(y)
        step += 1
        truth.step()
        if step % 25 == 0:
            kept = sum(t.numel() * t.element_size() for t in epoch_logits + epoch_labels)
            print(f"step {step} loss {loss.item():.4f} kept {kept / 2**30:.2f} GiB", flush=True)
            if device.type == "cuda" and torch.cuda.mem_get_info()[0] < args.min_free_gib * 2**30:
                print("device memory nearly full: stopping", flush=True)
                break
        if step % args.epoch_steps == 0:
            preds = torch.cat(epoch_logits).argmax(1)
            acc = (preds == torch.cat(epoch_labels)).float().mean().item()
            print(f"epoch accuracy {acc:.4f}", flush=True)
            epoch_logits, epoch_labels = [], []
    kept = sum(t.numel() * t.element_size() for t in epoch_logits + epoch_labels)
    truth.stop(kept_bytes=kept, kept_gib_per_s=kept / 2**30 / max(truth.elapsed(), 1e-9))
    print(f"done: {step} steps in {time.time() - start:.1f} s, {kept / 2**30:.2f} GiB kept",
          flush=True)


if __name__ == "__main__":
    main()
