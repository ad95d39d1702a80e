"""Train a GPT-like language model that keeps the GPU busy: the negative control of tuning.

Token batches are drawn on the GPU (no loader to wait for), the model (``--layers`` pre-norm
transformer blocks of ``--width``, attention through ``scaled_dot_product_attention``) runs under
bf16 autocast with AdamW (fused where the build has it) and gradient clipping; ``loss.item()``
every step; one ``::gpudoc {"step_ms": ..., "loss": ...}`` line per step. Nothing about the host,
the loader, the allocator or the launch rate holds it back.

    python3 healthy_lm.py --steps 400
    python3 healthy_lm.py --cpu-smoke
"""
import argparse
import json
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.n1, self.n2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.n1(x)).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        if hasattr(F, "scaled_dot_product_attention"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # torch before 2.0 (the CPU smoke on older builds)
            att = (q @ k.transpose(-2, -1)) / (q.shape[-1] ** 0.5)
            att = att.masked_fill(torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1), float("-inf"))
            y = att.softmax(-1) @ v
        x = x + self.out(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.n2(x))


class LM(nn.Module):
    def __init__(self, vocab, width, layers, heads, context):
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        return self.head(self.norm(x))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--context", type=int, default=512)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--vocab", type=int, default=16384)
    p.add_argument("--cpu-smoke", action="store_true", default=os.environ.get("GPUDOC_CPU_SMOKE", "") not in ("", "0"))
    a = p.parse_args()
    if a.cpu_smoke:
        a.steps, a.layers, a.width, a.heads, a.context, a.batch_size, a.vocab = min(a.steps, 3), 2, 64, 4, 32, 2, 256
    device = "cpu" if a.cpu_smoke else "cuda"
    torch.manual_seed(0)
    model = LM(a.vocab, a.width, a.layers, a.heads, a.context).to(device)
    fused = {"fused": True} if device == "cuda" else {}
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1, **fused)
    gen = torch.Generator(device=device).manual_seed(0)
    last = time.perf_counter()
    for step in range(1, a.steps + 1):
        idx = torch.randint(a.vocab, (a.batch_size, a.context + 1), device=device, generator=gen)
        with torch.autocast(device, dtype=torch.bfloat16, enabled=not a.cpu_smoke):
            logits = model(idx[:, :-1])
            loss = F.cross_entropy(logits.float().view(-1, a.vocab), idx[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        value = loss.item()
        now = time.perf_counter()
        print("::gpudoc " + json.dumps({"step": step, "step_ms": round((now - last) * 1000, 3), "loss": round(value, 4)}),
              flush=True)
        last = time.perf_counter()


if __name__ == "__main__":
    main()
