#!/usr/bin/env python3
"""Job "image_classify": a torchvision ResNet trained with SGD on JPEG images.

The dataset is a set of ``--images`` synthetic photographs (smooth colour fields, shapes and
noise; the class tints them) encoded as JPEG at start-up and held in memory, as a shard of an
image dataset would be. Training is the usual loop: random initialisation (no download),
SGD with momentum, bf16 autocast, channels-last, ``loss.item()`` logged every step.

``--preprocess cpu`` (the torchvision recipe): DataLoader workers decode each JPEG with PIL and
augment it with torchvision transforms (RandomResizedCrop, flip, ColorJitter with
``--augment standard``/``heavy``, ToTensor, Normalize) on the CPU; ``--workers`` and
``--pin-memory`` as in ``torch.utils.data.DataLoader``. With few workers the GPU waits for
every batch: bursts of forward/backward separated by long idle gaps (input starvation).

``--preprocess gpu``: the augmentation runs on the GPU (one batched random resized crop and
flip by ``affine_grid``/``grid_sample``, brightness/contrast jitter, normalisation); with
``--decode cpu`` the workers only decode to uint8 tensors, which are moved to the GPU;
with ``--decode gpu`` the workers pass the JPEG bytes and nvJPEG decodes the batch on the GPU
(``torchvision.io.decode_jpeg(device="cuda")``). Either keeps the GPU fed.

Step lines carry ``data_ms`` (host wait for the batch), ``gpu_ms`` (GPU time of the step),
``images_per_s`` and ``loss``; the end line ``gpu_busy_share``.
"""
from __future__ import annotations

import io
import math
import time
from typing import Any, List

import _jobs as J
from _jobs import C, torch

import numpy as np
import torch.nn.functional as F
import torchvision
from PIL import Image
from torchvision import transforms

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def make_jpegs(count: int, width: int, height: int, classes: int, seed: int) -> List[bytes]:
    """``count`` JPEG-encoded synthetic photographs (about 1 ms each to make)."""
    rng = np.random.default_rng(seed)
    jpegs = []
    for i in range(count):
        coarse = rng.integers(0, 256, size=(6, 8, 3), dtype=np.uint8)
        tint = np.array([(i % classes) * 37 % 256, (i % classes) * 91 % 256, 128], dtype=np.int16)
        image = Image.fromarray(coarse).resize((width, height), Image.BICUBIC)
        pixels = np.asarray(image, dtype=np.int16)
        pixels = pixels // 2 + tint // 2 + rng.integers(-12, 13, size=pixels.shape, dtype=np.int16)
        y0, x0 = rng.integers(0, height // 2), rng.integers(0, width // 2)
        pixels[y0:y0 + height // 3, x0:x0 + width // 4] //= 2  # a darker object
        out = io.BytesIO()
        Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(out, "JPEG", quality=90)
        jpegs.append(out.getvalue())
    return jpegs


def cpu_transform(augment: str, size: int) -> Any:
    steps: List[Any] = [transforms.RandomResizedCrop(size), transforms.RandomHorizontalFlip()]
    if augment == "standard":
        steps.append(transforms.ColorJitter(0.4, 0.4, 0.4))
    elif augment == "heavy":
        steps += [transforms.ColorJitter(0.4, 0.4, 0.4, 0.1), transforms.RandomGrayscale(0.1)]
    steps += [transforms.ToTensor(), transforms.Normalize(MEAN, STD)]
    return transforms.Compose(steps)


class JpegDataset(torch.utils.data.Dataset):
    """Maps an index to (image, label); ``mode`` says how far the worker takes the image:
    ``"cpu"`` decoded and augmented, ``"decode"`` decoded to a CHW uint8 tensor, ``"bytes"`` the
    JPEG bytes as a uint8 tensor (for the GPU decoder)."""

    def __init__(self, jpegs: List[bytes], classes: int, mode: str, transform: Any,
                 length: int) -> None:
        self.jpegs = jpegs
        self.classes = classes
        self.mode = mode
        self.transform = transform
        self.length = length

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> tuple:
        k = (index * 7919) % len(self.jpegs)
        label = k % self.classes
        data = self.jpegs[k]
        if self.mode == "bytes":
            return torch.frombuffer(bytearray(data), dtype=torch.uint8), label
        image = Image.open(io.BytesIO(data)).convert("RGB")
        if self.mode == "decode":
            return torch.from_numpy(np.array(image, dtype=np.uint8)).permute(2, 0, 1), label
        return self.transform(image), label


def collate_bytes(batch: list) -> tuple:
    """A batch of JPEGs as one uint8 tensor and their lengths (one tensor crosses from the
    worker, not one per image: each shared-memory tensor costs a file descriptor and a map)."""
    lengths = torch.tensor([item[0].numel() for item in batch])
    return (torch.cat([item[0] for item in batch]), lengths), torch.tensor([item[1] for item in batch])


def gpu_decode(packed: tuple, device: "torch.device") -> "torch.Tensor":
    """Decode a packed batch of JPEGs on ``device`` (nvJPEG on CUDA) into (B, 3, H, W) uint8."""
    from torchvision.io import decode_jpeg
    data, lengths = packed
    jpegs = list(torch.split(data, lengths.tolist()))
    if device.type == "cuda":
        images = decode_jpeg(jpegs, device=device)  # batched form: torchvision >= 0.19
    else:
        images = [decode_jpeg(j) for j in jpegs]
    return torch.stack(images)


def gpu_augment(images: "torch.Tensor", size: int, generator: "torch.Generator") -> "torch.Tensor":
    """Random resized crop (scale 0.08-1, ratio 3/4-4/3) and flip of each image in one
    ``grid_sample``, brightness/contrast jitter, normalisation: uint8 (B,3,H,W) in, float out."""
    b, device = images.shape[0], images.device
    x = images.float().div_(255.0)
    rand = torch.rand(b, 4, device=device, generator=generator)
    area = 0.08 + 0.92 * rand[:, 0]
    log_ratio = math.log(3 / 4) + (math.log(4 / 3) - math.log(3 / 4)) * rand[:, 1]
    ratio = torch.exp(log_ratio)
    sx = torch.sqrt(area * ratio).clamp(max=1.0)
    sy = torch.sqrt(area / ratio).clamp(max=1.0)
    cx = (1 - sx) * (2 * rand[:, 2] - 1)
    cy = (1 - sy) * (2 * rand[:, 3] - 1)
    flip = torch.where(torch.rand(b, device=device, generator=generator) < 0.5, -1.0, 1.0)
    theta = torch.zeros(b, 2, 3, device=device)
    theta[:, 0, 0] = sx * flip
    theta[:, 0, 2] = cx
    theta[:, 1, 1] = sy
    theta[:, 1, 2] = cy
    grid = F.affine_grid(theta, [b, 3, size, size], align_corners=False)
    x = F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection", align_corners=False)
    jitter = 0.6 + 0.8 * torch.rand(b, 2, 1, 1, device=device, generator=generator)
    mean = x.mean(dim=(1, 2, 3), keepdim=True)
    x = ((x - mean) * jitter[:, 1:2] + mean) * jitter[:, 0:1]
    m = torch.tensor(MEAN, device=device).view(1, 3, 1, 1)
    s = torch.tensor(STD, device=device).view(1, 3, 1, 1)
    return ((x.clamp_(0, 1) - m) / s).contiguous(memory_format=torch.channels_last)


def make_loader(args: Any, jpegs: List[bytes]) -> torch.utils.data.DataLoader:
    if args.preprocess == "cpu":
        mode, collate = "cpu", None
    else:
        mode, collate = ("bytes", collate_bytes) if args.decode == "gpu" else ("decode", None)
    dataset = JpegDataset(jpegs, args.classes, mode, cpu_transform(args.augment, args.crop),
                          length=10 ** 8)
    extra = {"prefetch_factor": args.prefetch} if args.workers > 0 else {}
    return torch.utils.data.DataLoader(
        dataset, batch_size=args.batch_size, shuffle=False, num_workers=args.workers,
        pin_memory=args.pin_memory, drop_last=True, collate_fn=collate,
        worker_init_fn=J.ignore_stop_signals_in_worker if args.workers > 0 else None, **extra)


def parse_args() -> Any:
    parser = J.job_parser(__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=("resnet18", "resnet34", "resnet50"), default="resnet50")
    parser.add_argument("--batch-size", type=C.positive_int, default=256)
    parser.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
    parser.add_argument("--pin-memory", action="store_true", help="DataLoader(pin_memory=True)")
    parser.add_argument("--prefetch", type=C.positive_int, default=2, help="prefetch_factor")
    parser.add_argument("--preprocess", choices=("cpu", "gpu"), default="cpu",
                        help="where the augmentation runs")
    parser.add_argument("--decode", choices=("cpu", "gpu"), default="cpu",
                        help="where JPEGs are decoded with --preprocess gpu")
    parser.add_argument("--augment", choices=("light", "standard", "heavy"), default="standard",
                        help="CPU transforms: crop+flip, + ColorJitter, + hue and grayscale")
    parser.add_argument("--images", type=C.positive_int, default=256, help="distinct JPEGs")
    parser.add_argument("--image-size", default="320x240", help="source JPEG WIDTHxHEIGHT")
    parser.add_argument("--crop", type=C.positive_int, default=224, help="training crop side")
    parser.add_argument("--classes", type=C.positive_int, default=1000)
    parser.add_argument("--lr", type=C.positive_float, default=0.1)
    parser.add_argument("--cudnn-benchmark", action="store_true",
                        help="torch.backends.cudnn.benchmark = True (autotuning adds seconds of set-up)")
    args = parser.parse_args()
    if args.workers < 0:
        parser.error("--workers must be >= 0")
    try:
        args.width, args.height = (int(v) for v in args.image_size.lower().split("x"))
    except ValueError:
        parser.error(f"--image-size must be WIDTHxHEIGHT, got {args.image_size!r}")
    if args.cpu_smoke:
        args.arch, args.batch_size, args.images, args.crop = "resnet18", 4, 8, 32
        args.width, args.height, args.classes = 64, 48, 10
        args.workers = min(args.workers, 2)
    return args


def main() -> int:
    args = parse_args()
    job = J.Job(args, "image_classify")
    t_setup = time.perf_counter()
    jpegs = make_jpegs(args.images, args.width, args.height, args.classes, args.seed)
    model = getattr(torchvision.models, args.arch)(weights=None, num_classes=args.classes)
    model = model.to(job.device, memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-5)
    torch.backends.cudnn.benchmark = args.cudnn_benchmark
    generator = torch.Generator(device=job.device)
    generator.manual_seed(args.seed)

    def train_step(images: "torch.Tensor", labels: "torch.Tensor") -> "torch.Tensor":
        with job.autocast():
            loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss

    # Warm-up on a GPU-made batch (cuDNN, cuBLAS) while the workers fill their queues.
    loader = iter(make_loader(args, jpegs))
    warm = torch.randn(args.batch_size, 3, args.crop, args.crop, device=job.device)
    warm_labels = torch.randint(0, args.classes, (args.batch_size,), device=job.device)
    for _ in range(1 if job.smoke else 2):
        train_step(warm.contiguous(memory_format=torch.channels_last), warm_labels).item()
    del warm

    clock = J.GpuClock(job)
    reporter = job.reporter()
    with J.running(reporter, clock, **job.info(), setup_s=time.perf_counter() - t_setup,
                   jpeg_kib=sum(map(len, jpegs)) / len(jpegs) / 1024):
        last = time.perf_counter()
        while reporter.elapsed() < args.duration:
            job.check_stop()
            (batch, labels), data_ms = J.timed_next(loader)
            clock.begin()
            labels = J.to_device(labels, job.device)
            if args.preprocess == "cpu":
                images = J.to_device(batch, job.device).contiguous(memory_format=torch.channels_last)
            else:
                raw = gpu_decode(batch, job.device) if args.decode == "gpu" else J.to_device(batch, job.device)
                images = gpu_augment(raw, args.crop, generator)
            loss = train_step(images, labels)
            clock.end()
            loss_value = loss.item()
            gpu_ms = clock.collect()
            now = time.perf_counter()
            step_ms = (now - last) * 1e3
            last = now
            reporter.step(step_ms, data_ms=data_ms, gpu_ms=gpu_ms, loss=loss_value,
                          images_per_s=args.batch_size / max(step_ms, 1e-6) * 1e3)
    return C.EXIT_OK


if __name__ == "__main__":
    J.run(main)
