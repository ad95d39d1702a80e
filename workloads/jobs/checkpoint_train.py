#!/usr/bin/env python3
"""Job "checkpoint_train": a healthy training run that checkpoints every few seconds.

A GPT-style model (AdamW, bf16 autocast) trains on token windows held on the GPU, so the GPU is
the bottleneck. Every ``--ckpt-every-s`` seconds the loop stops to save the model and optimizer
``state_dict`` with ``torch.save`` into a private folder (``--ckpt-dir``'s, default the system's
temporary folder; a new file each time, flushed to the disk with fsync, the previous one
deleted; the folder is removed at exit). While it saves, the GPU has nothing to do: the load
drops to zero for the save's duration, once per interval (the pause grows with the model:
``--width``/``--layers``).

Step lines carry ``gpu_ms``, ``loss`` and, on the step that saved, ``ckpt_ms`` and ``ckpt_mib``;
the end line ``checkpoints``, ``ckpt_ms_mean`` and ``gpu_busy_share``.
"""
from __future__ import annotations

import shutil
import time
from typing import Any

import _jobs as J
from _jobs import C

import _models as M


def parse_args() -> Any:
    parser = J.job_parser(__doc__.splitlines()[0])
    parser.add_argument("--ckpt-every-s", type=C.positive_float, default=5.0,
                        help="seconds of training between two checkpoints")
    parser.add_argument("--ckpt-dir", default=None, help="parent of the private checkpoint folder")
    parser.add_argument("--width", type=C.positive_int, default=1024)
    parser.add_argument("--layers", type=C.positive_int, default=12)
    parser.add_argument("--heads", type=C.positive_int, default=16)
    parser.add_argument("--context", type=C.positive_int, default=1024)
    parser.add_argument("--batch-size", type=C.positive_int, default=16)
    parser.add_argument("--vocab", type=C.positive_int, default=16384)
    args = parser.parse_args()
    if args.cpu_smoke:
        args.width, args.layers, args.heads, args.context, args.batch_size = 64, 2, 4, 64, 4
        args.vocab, args.ckpt_every_s = 512, min(args.ckpt_every_s, 0.6)
    return args


def main() -> int:
    args = parse_args()
    job = J.Job(args, "checkpoint_train")
    t_setup = time.perf_counter()
    trainer = M.LmTrainer(job, args.vocab, args.width, args.layers, args.heads, args.context,
                          args.batch_size)
    for i in range(1 if job.smoke else 3):
        trainer.step(trainer.batch(i))[0].item()
    folder = J.private_dir(args.ckpt_dir, "gpudoc-ckpt-")
    saves_ms: list = []
    clock = J.GpuClock(job)
    reporter = job.reporter()
    try:
        with J.running(reporter, clock, **job.info(), setup_s=time.perf_counter() - t_setup,
                       parameters=trainer.parameters(), ckpt_folder=folder):
            last = time.perf_counter()
            last_save = last
            try:
                while reporter.elapsed() < args.duration:
                    job.check_stop()
                    clock.begin()
                    loss, _ = trainer.step(trainer.batch(reporter.steps))
                    clock.end()
                    loss_value = loss.item()
                    gpu_ms = clock.collect()
                    extra: dict = {}
                    if time.perf_counter() - last_save >= args.ckpt_every_s:
                        reporter.flush()  # the saving step gets a line of its own
                        t = time.perf_counter()
                        size = J.save_checkpoint(folder, reporter.steps, trainer.state())
                        last_save = time.perf_counter()
                        saves_ms.append((last_save - t) * 1e3)
                        extra = {"ckpt_ms": saves_ms[-1], "ckpt_mib": C.mib(size)}
                    now = time.perf_counter()
                    reporter.step((now - last) * 1e3, gpu_ms=gpu_ms, loss=loss_value, **extra)
                    if extra:
                        reporter.flush()
                    last = now
            finally:
                reporter.end_fields.update(
                    checkpoints=len(saves_ms),
                    ckpt_ms_mean=sum(saves_ms) / len(saves_ms) if saves_ms else None)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return C.EXIT_OK


if __name__ == "__main__":
    J.run(main)
