"""Train a CNN with a loop that reads values back and synchronises several times per step.

Written the way a loop grows over time: ``torch.cuda.synchronize()`` around the forward and the
optimizer to time them, ``loss.item()`` for the log, the accuracy with ``.item()``, the gradient
norm checked with ``if not torch.isfinite(norm)`` (a host read), and the learning rate warm-up
computed from it on the host. Each of them waits for the GPU to finish all queued work, so the
GPU idles while Python prepares the next kernels.

    python3 sync_heavy_train.py --duration 15 --batch-size 64 --image-size 96
"""
import argparse
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from _truth import Truth


def conv_net(classes, width):
    return nn.Sequential(
        nn.Conv2d(3, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(),
        nn.Conv2d(width, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(width, 2 * width, 3, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(),
        nn.Conv2d(2 * width, 2 * width, 3, padding=1), nn.BatchNorm2d(2 * width), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(2 * width, 4 * width, 3, padding=1), nn.BatchNorm2d(4 * width), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4 * width, classes))


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=15.0, help="seconds to train")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--image-size", type=int, default=96)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--cpu-smoke", action="store_true",
                        default=os.environ.get("GPUDOC_CPU_SMOKE", "") not in ("", "0"),
                        help="tiny sizes on the CPU for ~2 s")
    args = parser.parse_args()
    if args.cpu_smoke:
        args.duration, args.batch_size, args.image_size, args.width = min(args.duration, 2.0), 4, 16, 8
        device = torch.device("cpu")
    else:
        device = torch.device("cuda")
    torch.manual_seed(0)
    model = conv_net(args.classes, args.width).to(device).to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    images = torch.randn(16, args.batch_size, 3, args.image_size, args.image_size, device=device)
    labels = torch.randint(0, args.classes, (16, args.batch_size), device=device)

    truth = Truth("sync_heavy_train", vars(args), device)
    truth.value("syncs_per_step", 6)

    step = skipped = 0
    fwd_ms = opt_ms = 0.0
    start = time.time()
    truth.start()
    while time.time() - start < args.duration:
        x = images[step % 16].contiguous(memory_format=torch.channels_last)
        y = labels[step % 16]
        truth.begin("gpu")
        sync(device)
        t0 = time.perf_counter()
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            out = model(x)
            loss = F.cross_entropy(out.float(), y)
        truth.end("gpu")
        sync(device)                                               # sync 1: time the forward
        fwd_ms += (time.perf_counter() - t0) * 1e3
        loss_value = loss.item()                                   # sync 2
        accuracy = (out.argmax(1) == y).float().mean().item()      # sync 3
        truth.begin("gpu")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        truth.end("gpu")
        if not torch.isfinite(norm):                               # sync 4
            skipped += 1
            continue
        for group in optimizer.param_groups:
            group["lr"] = 0.1 * min(1.0, (step + 1) / 500)
        truth.begin("gpu")
        sync(device)                                               # sync 5
        t0 = time.perf_counter()
        optimizer.step()
        truth.end("gpu")
        sync(device)                                               # sync 6: time the optimizer
        opt_ms += (time.perf_counter() - t0) * 1e3
        step += 1
        truth.step()
        if step % 100 == 0:
            print(f"step {step} loss {loss_value:.4f} acc {accuracy:.3f} grad norm {float(norm):.2f} "
                  f"forward {fwd_ms / step:.2f} ms optimizer {opt_ms / step:.2f} ms", flush=True)
    truth.stop(skipped_steps=skipped)
    print(f"done: {step} steps in {time.time() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
