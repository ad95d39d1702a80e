#!/usr/bin/env python3
"""Job "transformer_lm": a small GPT-style language model trained on text tokenized on the fly.

At start-up a byte-level BPE tokenizer (``--merges`` merges, plain Python) is trained on
generated English-like text; then DataLoader workers (``--workers``) each generate text and
tokenize it into windows of ``--context`` + 1 tokens as training runs, as a streaming
pre-training pipeline does. The model (``--layers`` pre-norm blocks of ``--width``, causal
attention) trains with AdamW, bf16 autocast, gradient clipping, and the loss logged every step.

With enough workers the GPU is the bottleneck (steady high load). With ``--no-cache`` (every word
run through the BPE merges, as a tokenizer without a word cache does) or few workers, the
workers cannot keep up and the GPU waits for each batch.

Step lines carry ``data_ms``, ``gpu_ms``, ``tokens_per_s`` and ``loss``; the end line
``gpu_busy_share``.
"""
from __future__ import annotations

import time
from typing import Any

import _jobs as J
from _jobs import C, torch

import _models as M


def parse_args() -> Any:
    parser = J.job_parser(__doc__.splitlines()[0])
    parser.add_argument("--width", type=C.positive_int, default=1024)
    parser.add_argument("--layers", type=C.positive_int, default=12)
    parser.add_argument("--heads", type=C.positive_int, default=16)
    parser.add_argument("--context", type=C.positive_int, default=1024, help="tokens per sample")
    parser.add_argument("--batch-size", type=C.positive_int, default=16)
    parser.add_argument("--merges", type=C.positive_int, default=512, help="BPE merges")
    parser.add_argument("--workers", type=int, default=4, help="DataLoader worker processes")
    parser.add_argument("--pin-memory", action="store_true")
    parser.add_argument("--no-cache", action="store_true",
                        help="tokenize every word through the merges (no per-word cache)")
    parser.add_argument("--lr", type=C.positive_float, default=3e-4)
    args = parser.parse_args()
    if args.workers < 0:
        parser.error("--workers must be >= 0")
    if args.width % args.heads:
        parser.error("--width must be a multiple of --heads")
    if args.cpu_smoke:
        args.width, args.layers, args.heads, args.context, args.batch_size = 64, 2, 4, 64, 4
        args.merges, args.workers = 64, min(args.workers, 2)
    return args


def main() -> int:
    args = parse_args()
    job = J.Job(args, "transformer_lm")
    t_setup = time.perf_counter()
    tokenizer = M.train_tokenizer(args.merges, cache=not args.no_cache,
                                  chars=20_000 if job.smoke else 60_000)
    stream = M.TokenStream(tokenizer, args.context, seed=args.seed + 1)
    workers = args.workers
    loader = iter(torch.utils.data.DataLoader(
        stream, batch_size=args.batch_size, num_workers=workers, pin_memory=args.pin_memory,
        worker_init_fn=J.ignore_stop_signals_in_worker if workers > 0 else None))
    model = M.TransformerLM(tokenizer.vocab_size, args.width, args.layers, args.heads,
                            args.context).to(job.device)
    optimizer = M.make_adamw(model, args.lr)

    def train_step(tokens: "torch.Tensor") -> "torch.Tensor":
        with job.autocast():
            loss, _ = model.loss(tokens)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss

    warm = torch.randint(0, tokenizer.vocab_size, (args.batch_size, args.context + 1),
                         device=job.device)
    for _ in range(1 if job.smoke else 3):
        train_step(warm).item()

    clock = J.GpuClock(job)
    reporter = job.reporter()
    tokens_per_step = args.batch_size * args.context
    with J.running(reporter, clock, **job.info(), setup_s=time.perf_counter() - t_setup,
                   parameters=M.parameter_count(model), vocab=tokenizer.vocab_size):
        last = time.perf_counter()
        while reporter.elapsed() < args.duration:
            job.check_stop()
            tokens, data_ms = J.timed_next(loader)
            clock.begin()
            loss = train_step(J.to_device(tokens, job.device))
            clock.end()
            loss_value = loss.item()
            gpu_ms = clock.collect()
            now = time.perf_counter()
            step_ms = (now - last) * 1e3
            last = now
            reporter.step(step_ms, data_ms=data_ms, gpu_ms=gpu_ms, loss=loss_value,
                          tokens_per_s=tokens_per_step / max(step_ms, 1e-6) * 1e3)
    return C.EXIT_OK


if __name__ == "__main__":
    J.run(main)
