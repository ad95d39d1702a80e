"""Train a small CNN on large image batches that sit in ordinary (pageable) host memory.

The dataset is a handful of preloaded batches of float32 images (numpy arrays wrapped with
torch.from_numpy); every step copies one to the GPU with ``.to("cuda")`` (no pinned memory, no
DataLoader), then runs forward, backward and SGD. With 200 MB per batch the copy, staged through
a driver buffer because the memory is pageable, takes much longer than the model's compute.

    python3 pageable_batch.py --duration 15 --batch-mb 200
"""
import argparse
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from _truth import Truth


class SmallCNN(nn.Module):
    def __init__(self, classes=100):
        super().__init__()
        self.stem = nn.Conv2d(3, 48, kernel_size=8, stride=8)
        self.conv1 = nn.Conv2d(48, 96, 3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(96, 192, 3, stride=2, padding=1)
        self.conv3 = nn.Conv2d(192, 192, 3, padding=1)
        self.fc = nn.Linear(192, classes)

    def forward(self, x):
        x = F.relu(self.stem(x))
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.relu(self.conv3(x))
        return self.fc(x.mean(dim=(2, 3)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=15.0, help="seconds to train")
    parser.add_argument("--batch-mb", type=float, default=200.0, help="size of one batch in MB")
    parser.add_argument("--image-size", type=int, default=512)
    parser.add_argument("--batches", type=int, default=3, help="distinct batches kept in memory")
    parser.add_argument("--print-every", type=int, default=20)
    parser.add_argument("--cpu-smoke", action="store_true",
                        default=os.environ.get("GPUDOC_CPU_SMOKE", "") not in ("", "0"),
                        help="tiny sizes on the CPU for ~2 s")
    args = parser.parse_args()
    if args.cpu_smoke:
        args.duration, args.batch_mb, args.image_size = min(args.duration, 2.0), 2.0, 64
        device = torch.device("cpu")
    else:
        device = torch.device("cuda")
    torch.manual_seed(0)
    per_image = 3 * args.image_size * args.image_size * 4
    batch_size = max(1, int(args.batch_mb * 1e6 // per_image))
    rng = np.random.default_rng(0)
    data = [torch.from_numpy(rng.standard_normal((batch_size, 3, args.image_size, args.image_size),
                                                 dtype=np.float32))
            for _ in range(args.batches)]
    labels = [torch.from_numpy(rng.integers(0, 100, batch_size)) for _ in range(args.batches)]
    print(f"{args.batches} batches of {batch_size} images ({batch_size * per_image / 1e6:.0f} MB "
          f"each)", flush=True)

    model = SmallCNN().to(device).to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    truth = Truth("pageable_batch", vars(args), device)
    truth.value("batch_size", batch_size)
    truth.value("bytes_h2d_per_step", batch_size * per_image)
    truth.value("pinned", False)

    step = 0
    start = time.time()
    truth.start()
    while time.time() - start < args.duration:
        i = step % args.batches
        truth.begin("copy")
        images = data[i].to(device)
        target = labels[i].to(device)
        truth.end("copy")
        truth.begin("gpu")
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            out = model(images.contiguous(memory_format=torch.channels_last))
            loss = F.cross_entropy(out.float(), target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        truth.end("gpu")
        running = loss.item()
        step += 1
        truth.step()
        if step % args.print_every == 0:
            print(f"step {step} loss {running:.4f} "
                  f"({(time.time() - start) / step * 1e3:.0f} ms/step)", flush=True)
    truth.stop()
    print(f"done: {step} steps in {time.time() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
