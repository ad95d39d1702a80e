"""Train a transformer language model with gradient accumulation.

Micro-batches of token sequences (made on the GPU) go through a 6-layer transformer encoder with
a causal mask under bf16 autocast; the loss of each is divided by the number of accumulation
steps and back-propagated; every ``--accum`` micro-batches the gradients are clipped and AdamW
steps. The mean loss is read (``.item()``) once per optimizer step.

    python3 grad_accum_train.py --duration 15 --accum 4 --micro-batch 32 --seq 512
"""
import argparse
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from _truth import Truth


class LM(nn.Module):
    def __init__(self, vocab, width, layers, heads, seq):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.zeros(seq, width))
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.1,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, vocab)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

    def forward(self, tokens):
        h = self.embed(tokens) + self.pos[: tokens.shape[1]]
        return self.head(self.encoder(h, mask=self.mask))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=15.0, help="seconds to train")
    parser.add_argument("--accum", type=int, default=4, help="micro-batches per optimizer step")
    parser.add_argument("--micro-batch", type=int, default=32)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--vocab", type=int, default=16384)
    parser.add_argument("--cpu-smoke", action="store_true",
                        default=os.environ.get("GPUDOC_CPU_SMOKE", "") not in ("", "0"),
                        help="tiny sizes on the CPU for ~2 s")
    args = parser.parse_args()
    if args.cpu_smoke:
        args.duration, args.width, args.layers, args.seq = min(args.duration, 2.0), 32, 1, 16
        args.micro_batch, args.vocab = 2, 100
        device = torch.device("cpu")
    else:
        device = torch.device("cuda")
    torch.manual_seed(0)
    model = LM(args.vocab, args.width, args.layers, max(1, args.width // 64), args.seq).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)

    truth = Truth("grad_accum_train", vars(args), device)
    truth.value("syncs_per_step", 1)

    step = 0
    start = time.time()
    truth.start()
    while time.time() - start < args.duration:
        truth.begin("gpu")
        total = torch.zeros((), device=device)
        for _ in range(args.accum):
            tokens = torch.randint(0, args.vocab, (args.micro_batch, args.seq + 1), device=device)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
                logits = model(tokens[:, :-1])
                loss = F.cross_entropy(logits.float().flatten(0, 1), tokens[:, 1:].flatten())
            (loss / args.accum).backward()
            total += loss.detach() / args.accum
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        truth.end("gpu")
        mean_loss = total.item()
        step += 1
        truth.step()
        if step % 10 == 0:
            print(f"step {step} loss {mean_loss:.4f} "
                  f"({(time.time() - start) / step * 1e3:.0f} ms/step)", flush=True)
    truth.stop()
    print(f"done: {step} optimizer steps in {time.time() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
