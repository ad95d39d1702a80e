"""Train a video classifier on clips decoded ahead into a big uint8 array in host memory.

The clips (``--clips`` x 16 frames x 3 x 256 x 256, uint8) sit in one ordinary numpy array; each
step slices a batch of ``--batch-mb`` MB from it and sends it to the GPU with
``torch.from_numpy(...).cuda()`` (pageable memory: the driver stages the copy through its own
pinned buffer), converts it to bf16 there, and trains a small 3-D CNN on it.

    python3 video_batch_copy.py --duration 15 --batch-mb 640
"""
import argparse
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from _truth import Truth


class VideoNet(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.patch = nn.Conv3d(3, 96, kernel_size=(2, 8, 8), stride=(2, 8, 8))
        self.conv1 = nn.Conv3d(96, 192, 3, stride=2, padding=1)
        self.conv2 = nn.Conv3d(192, 384, 3, stride=2, padding=1)
        self.fc = nn.Linear(384, classes)

    def forward(self, clips):
        x = F.gelu(self.patch(clips))
        x = F.gelu(self.conv1(x))
        x = F.gelu(self.conv2(x))
        return self.fc(x.mean(dim=(2, 3, 4)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=15.0, help="seconds to train")
    parser.add_argument("--batch-mb", type=float, default=640.0, help="MB of clips per step")
    parser.add_argument("--frames", type=int, default=16)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--cpu-smoke", action="store_true",
                        default=os.environ.get("GPUDOC_CPU_SMOKE", "") not in ("", "0"),
                        help="tiny sizes on the CPU for ~2 s")
    args = parser.parse_args()
    if args.cpu_smoke:
        args.duration, args.batch_mb, args.size = min(args.duration, 2.0), 1.0, 32
        device = torch.device("cpu")
    else:
        device = torch.device("cuda")
    torch.manual_seed(0)
    clip_bytes = args.frames * 3 * args.size * args.size
    batch = max(1, int(args.batch_mb * 1e6 // clip_bytes))
    rng = np.random.default_rng(0)
    clips = rng.integers(0, 256, (2 * batch, 3, args.frames, args.size, args.size), dtype=np.uint8)
    labels = rng.integers(0, 400, 2 * batch)
    print(f"{len(clips)} clips in memory ({clips.nbytes / 1e9:.2f} GB); batches of {batch} clips "
          f"= {batch * clip_bytes / 1e6:.0f} MB", flush=True)
    model = VideoNet(400).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    truth = Truth("video_batch_copy", vars(args), device)
    truth.value("clips_per_step", batch)
    truth.value("bytes_h2d_per_step", batch * clip_bytes)
    truth.value("pinned", False)

    step = 0
    start = time.time()
    truth.start()
    while time.time() - start < args.duration:
        first = (step % 2) * batch
        truth.begin("copy")
        x = torch.from_numpy(clips[first:first + batch]).to(device)
        y = torch.from_numpy(labels[first:first + batch]).to(device)
        truth.end("copy")
        truth.begin("gpu")
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
            x = x.to(torch.bfloat16 if device.type == "cuda" else torch.float32) / 255.0
            loss = F.cross_entropy(model(x).float(), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        truth.end("gpu")
        step += 1
        truth.step()
        print(f"step {step} loss {loss.item():.4f} "
              f"({(time.time() - start) / step * 1e3:.0f} ms/step)", flush=True)
    truth.stop()
    print(f"done: {step} steps in {time.time() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
