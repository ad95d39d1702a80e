"""Serve a small transformer one request at a time, each request of its own length.

Requests (token ids, 8 to ``--max-len`` tokens, random lengths) wait in a queue; the server takes
them one by one (batch 1, no padding, no bucketing), runs a 6-layer transformer encoder (its
attention written out, as in many hand-written models) under
``torch.inference_mode`` and returns the predicted class with ``.cpu()``. Every new length is a
new shape for every kernel.

    python3 infer_dynamic_b1.py --duration 15 --max-len 384
"""
import argparse
import os
import random
import time
from collections import deque

import torch
import torch.nn as nn

from _truth import Truth


class Block(nn.Module):
    """A pre-norm transformer block with the attention written out."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                 nn.Linear(4 * width, width))

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(self.norm1(x)).view(b, n, 3, self.heads, c // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
        y = (att.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, c)
        x = x + self.proj(y)
        return x + self.mlp(self.norm2(x))


class Encoder(nn.Module):
    def __init__(self, vocab, width, layers, heads, classes, max_len):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(max_len, width)
        self.blocks = nn.Sequential(*[Block(width, heads) for _ in range(layers)])
        self.head = nn.Linear(width, classes)

    def forward(self, tokens):
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        h = self.blocks(self.embed(tokens) + self.pos(positions))
        return self.head(h[:, 0])


def kernel_time_ms(model, length, vocab, device, replays=100):
    """GPU time of one request of ``length`` tokens without launch gaps (a CUDA-graph replay)."""
    static = torch.randint(0, vocab, (1, length), device=device)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.inference_mode():
        for _ in range(3):
            model(static).argmax(-1)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.inference_mode():
        model(static).argmax(-1)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    graph.replay()
    start.record()
    for _ in range(replays):
        graph.replay()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / replays


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=15.0, help="seconds to serve")
    parser.add_argument("--max-len", type=int, default=384)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--cpu-smoke", action="store_true",
                        default=os.environ.get("GPUDOC_CPU_SMOKE", "") not in ("", "0"),
                        help="tiny sizes on the CPU for ~2 s")
    args = parser.parse_args()
    if args.cpu_smoke:
        args.duration, args.width, args.layers, args.max_len = min(args.duration, 2.0), 32, 1, 32
        device = torch.device("cpu")
    else:
        device = torch.device("cuda")
    torch.manual_seed(0)
    random.seed(0)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    model = Encoder(args.vocab, args.width, args.layers, 8, 20, args.max_len).to(device, dtype)
    model.eval()
    queue = deque(torch.randint(0, args.vocab, (1, random.randint(8, args.max_len)))
                  for _ in range(2000))

    truth = Truth("infer_dynamic_b1", vars(args), device)
    if truth.enabled and device.type == "cuda":
        truth.value("gpu_exec_ms_by_length",
                    {n: kernel_time_ms(model, n, args.vocab, device)
                     for n in (16, args.max_len // 2, args.max_len)})
    truth.value("mean_length", sum(r.shape[1] for r in queue) / len(queue))

    served = 0
    start = last = time.time()
    truth.start()
    while time.time() - start < args.duration:
        request = queue.popleft()
        truth.begin("gpu")
        with torch.inference_mode():
            label = model(request.to(device)).argmax(-1)
        truth.end("gpu")
        answer = label.cpu()
        queue.append(request)
        served += 1
        truth.step()
        now = time.time()
        if now - last >= 1.0:
            print(f"served {served} requests ({served / (now - start):.0f}/s), "
                  f"last length {request.shape[1]} -> class {int(answer)}", flush=True)
            last = now
    truth.stop(requests=served)
    print(f"done: {served} requests in {time.time() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
