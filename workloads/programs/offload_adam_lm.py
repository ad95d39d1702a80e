"""Train a transformer language model whose AdamW runs on the CPU, with pinned transfer buffers.

A better-written offload than the naive one: gradients go to pinned host buffers with
``non_blocking=True`` and one ``torch.cuda.synchronize()``, AdamW updates fp32 master weights on
the CPU, and the new weights return through pinned buffers, again asynchronously. The copies
overlap each other; the CPU optimizer still dominates the step.

    python3 offload_adam_lm.py --duration 15 --width 1536 --layers 12 --batch-size 8
"""
import argparse
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from _truth import Truth


class LM(nn.Module):
    def __init__(self, vocab, width, layers, heads):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, vocab)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(tokens)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=15.0, help="seconds to train")
    parser.add_argument("--width", type=int, default=1536)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=16384)
    parser.add_argument("--cpu-smoke", action="store_true",
                        default=os.environ.get("GPUDOC_CPU_SMOKE", "") not in ("", "0"),
                        help="tiny sizes on the CPU for ~2 s")
    args = parser.parse_args()
    if args.cpu_smoke:
        args.duration, args.width, args.layers, args.seq = min(args.duration, 2.0), 32, 1, 16
        args.batch_size, args.vocab = 2, 100
        device = torch.device("cpu")
    else:
        device = torch.device("cuda")
    torch.manual_seed(0)
    cuda = device.type == "cuda"
    model = LM(args.vocab, args.width, args.layers, max(1, args.width // 128)).to(device)
    model = model.to(torch.bfloat16) if cuda else model
    params = list(model.parameters())
    master = [p.detach().float().cpu() for p in params]
    grad_buf = [torch.empty(p.shape, dtype=p.dtype, pin_memory=cuda) for p in params]
    weight_buf = [torch.empty(p.shape, dtype=p.dtype, pin_memory=cuda) for p in params]
    for m in master:
        m.grad = torch.zeros_like(m)
    optimizer = torch.optim.AdamW(master, lr=2e-4, weight_decay=0.1)
    n_params = sum(p.numel() for p in params)
    print(f"LM {args.layers} x {args.width}: {n_params / 1e6:.0f} M parameters; AdamW on the "
          f"CPU ({torch.get_num_threads()} threads)", flush=True)

    truth = Truth("offload_adam_lm", vars(args), device)
    truth.value("parameters", n_params)
    truth.value("bytes_each_way_per_step", n_params * params[0].element_size())

    step = 0
    start = time.time()
    truth.start()
    while time.time() - start < args.duration:
        tokens = torch.randint(0, args.vocab, (args.batch_size, args.seq + 1), device=device)
        truth.begin("gpu")
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.float().flatten(0, 1), tokens[:, 1:].flatten())
        loss.backward()
        truth.end("gpu")
        with truth.host("grads_to_host"):
            for p, buf in zip(params, grad_buf):
                buf.copy_(p.grad, non_blocking=True)
                p.grad = None
            if cuda:
                torch.cuda.synchronize()
            for m, buf in zip(master, grad_buf):
                m.grad.copy_(buf)
        with truth.host("cpu_adam"):
            optimizer.step()
        with truth.host("weights_to_gpu"):
            for p, m, buf in zip(params, master, weight_buf):
                buf.copy_(m)
                with torch.no_grad():
                    p.copy_(buf, non_blocking=True)
        step += 1
        truth.step()
        print(f"step {step} loss {loss.item():.4f} ({(time.time() - start) / step:.2f} s/step)",
              flush=True)
    truth.stop()
    print(f"done: {step} steps in {time.time() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
