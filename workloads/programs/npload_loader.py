"""Train a CNN on image batches stored as .npy files and read with ``np.load`` in the loop.

At start-up the program writes ``--files`` batches of uint8 images (one .npy file per batch) to
a fresh private folder, as a preprocessing script would have; then the training loop reads them
back one by one with ``np.load``, converts and normalises them in numpy, applies a random crop
and flip, and copies the result to the GPU. No DataLoader, no worker: the GPU waits while the
main process reads and prepares every batch. The folder is removed at exit.

    python3 npload_loader.py --duration 15 --files 16 --batch-size 128
"""
import argparse
import os
import shutil
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from _truth import Truth

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32).reshape(1, 3, 1, 1)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32).reshape(1, 3, 1, 1)


def conv_net(classes):
    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU(inplace=True), nn.Conv2d(cout, cout, 3, padding=1, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU(inplace=True), nn.MaxPool2d(2))
    return nn.Sequential(nn.Conv2d(3, 64, 7, stride=2, padding=3), nn.ReLU(inplace=True),
                         block(64, 128), block(128, 256), block(256, 512),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes))


def load_batch(path, crop, rng):
    images = np.load(path)                                   # uint8, N x 3 x H x W
    n, _, h, w = images.shape
    top, left = rng.integers(0, h - crop + 1), rng.integers(0, w - crop + 1)
    images = images[:, :, top:top + crop, left:left + crop]
    if rng.random() < 0.5:
        images = images[:, :, :, ::-1]
    images = (images.astype(np.float32) / 255.0 - MEAN) / STD
    return np.ascontiguousarray(images)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=15.0, help="seconds to train")
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--image-size", type=int, default=256)
    parser.add_argument("--crop", type=int, default=224)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--cpu-smoke", action="store_true",
                        default=os.environ.get("GPUDOC_CPU_SMOKE", "") not in ("", "0"),
                        help="tiny sizes on the CPU for ~2 s")
    args = parser.parse_args()
    if args.cpu_smoke:
        args.duration, args.files, args.batch_size = min(args.duration, 2.0), 3, 4
        args.image_size, args.crop = 40, 32
        device = torch.device("cpu")
    else:
        device = torch.device("cuda")
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    folder = tempfile.mkdtemp(prefix="npload-")
    try:
        paths, labels = [], []
        for i in range(args.files):
            images = rng.integers(0, 256, (args.batch_size, 3, args.image_size, args.image_size),
                                  dtype=np.uint8)
            path = os.path.join(folder, f"batch_{i:04d}.npy")
            np.save(path, images)
            paths.append(path)
            labels.append(torch.from_numpy(rng.integers(0, args.classes, args.batch_size)))
        file_bytes = os.path.getsize(paths[0])
        print(f"wrote {args.files} batches of {file_bytes / 1e6:.1f} MB to {folder}", flush=True)
        train(args, device, paths, labels, rng, file_bytes)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def train(args, device, paths, labels, rng, file_bytes):
    model = conv_net(args.classes).to(device).to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-5)
    truth = Truth("npload_loader", vars(args), device)
    truth.value("file_bytes", file_bytes)

    step = 0
    start = time.time()
    truth.start()
    while time.time() - start < args.duration:
        for path, target in zip(paths, labels):
            if time.time() - start >= args.duration:
                break
            with truth.host("load"):
                images = torch.from_numpy(load_batch(path, args.crop, rng))
            truth.begin("copy")
            images = images.to(device)
            truth.end("copy")
            truth.begin("gpu")
            images = images.contiguous(memory_format=torch.channels_last)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
                loss = F.cross_entropy(model(images).float(), target.to(device))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            truth.end("gpu")
            step += 1
            truth.step()
            if step % 10 == 0:
                print(f"step {step} loss {loss.item():.4f} "
                      f"({(time.time() - start) / step * 1e3:.0f} ms/step)", flush=True)
    truth.stop()
    print(f"done: {step} steps in {time.time() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
