"""Train a small ResNet-like CNN on images a slow Dataset makes one by one.

Each sample is "decoded" on the CPU the way a JPEG pipeline spends its time: a compressed buffer
inflated with zlib (``--decode-rounds`` times), turned into a 3 x SIZE x SIZE float tensor, randomly
cropped, flipped and normalised. The DataLoader is the default one — ``num_workers=0``,
``pin_memory=False`` — so the GPU waits while the training process makes every batch. The model (a
ResNet-18-shaped stack of basic blocks, plain torch, no torchvision) trains with SGD under bf16
autocast; ``loss.item()`` every step; one ``::gpudoc {"step_ms": ...}`` line per step.

    python3 starved_cnn.py --steps 400
    python3 starved_cnn.py --cpu-smoke          # a few tiny steps on the CPU
"""
import argparse
import json
import os
import time
import zlib

import torch
import torch.nn as nn
import torch.nn.functional as F


class SlowImages(torch.utils.data.Dataset):
    def __init__(self, n, size, rounds, classes):
        self.n, self.size, self.rounds, self.classes = n, size, rounds, classes
        g = torch.Generator().manual_seed(0)
        raw = (torch.rand(3 * (size + 16) * (size + 16), generator=g) * 64).to(torch.uint8).numpy().tobytes()
        self.blob = zlib.compress(raw, 6)  # compresses a little, as photographs do

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        for _ in range(self.rounds):
            raw = zlib.decompress(self.blob)
        s = self.size + 16
        img = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(3, s, s).float().div_(255)
        y0, x0 = (i * 7) % 16, (i * 13) % 16
        img = img[:, y0:y0 + self.size, x0:x0 + self.size]
        if i % 2:
            img = img.flip(2)
        img = (img - 0.45) / 0.25
        return img.contiguous(), i % self.classes


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return F.relu(y + (x if self.short is None else self.short(x)))


class SmallResNet(nn.Module):
    def __init__(self, classes, width=64):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        layers, cin = [], width
        for cout, stride in ((width, 1), (width * 2, 2), (width * 4, 2), (width * 8, 2)):
            layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.head = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--size", type=int, default=160)
    p.add_argument("--decode-rounds", type=int, default=2)
    p.add_argument("--classes", type=int, default=100)
    p.add_argument("--cpu-smoke", action="store_true", default=os.environ.get("GPUDOC_CPU_SMOKE", "") not in ("", "0"))
    a = p.parse_args()
    if a.cpu_smoke:
        a.steps, a.batch_size, a.size, a.decode_rounds = min(a.steps, 4), 4, 32, 1
    device = "cpu" if a.cpu_smoke else "cuda"
    torch.manual_seed(0)
    data = SlowImages(100000, a.size, a.decode_rounds, a.classes)
    loader = torch.utils.data.DataLoader(data, batch_size=a.batch_size, shuffle=True, drop_last=True)
    model = SmallResNet(a.classes).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    step, last = 0, time.perf_counter()
    while step < a.steps:
        for x, y in loader:
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            with torch.autocast(device, dtype=torch.bfloat16, enabled=not a.cpu_smoke):
                loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            step += 1
            now = time.perf_counter()
            print("::gpudoc " + json.dumps({"step": step, "step_ms": round((now - last) * 1000, 3),
                                            "loss": round(loss.item(), 4)}), flush=True)
            last = time.perf_counter()
            if step >= a.steps:
                break


if __name__ == "__main__":
    main()
