#!/usr/bin/env python3
"""Job "leaky_train": a training run that leaks device memory, then ends normally.

A GPT-style model trains on token windows held on the GPU, with a bug that real training scripts
have:

* ``--leak logits``: every ``--leak-every`` steps the step's logits are kept on the GPU in a list
  "for an epoch-level metric" (``predictions.append(logits.detach())``) and never freed;
* ``--leak graph``: every ``--leak-every`` steps a validation batch is evaluated without
  ``torch.no_grad()`` and its loss summed into a running total (``val_total = val_total +
  loss``), which keeps every validation graph, activations included, alive.

Device memory climbs steadily for the whole run; when the duration is over the script prints
its summary and exits normally, and the memory is released as the process ends. Growth stops at
``--cap-gib`` (lowered to keep 8 GiB free) and holds there (``{"event": "cap_reached"}``).

Step lines carry ``gpu_ms``, ``loss``, ``kept`` (tensors held by the bug), ``allocated_mib`` and
``reserved_mib``; the end line ``leaked_mib`` and ``leak_mib_per_s``.
"""
from __future__ import annotations

import time
from typing import Any

import _jobs as J
from _jobs import C, torch

import _models as M

KEEP_FREE_BYTES = 8 << 30


def parse_args() -> Any:
    parser = J.job_parser(__doc__.splitlines()[0])
    parser.add_argument("--leak", choices=("logits", "graph"), default="logits")
    parser.add_argument("--leak-every", type=C.positive_int, default=4,
                        help="steps between two leaked tensors (graphs)")
    parser.add_argument("--val-batch", type=C.positive_int, default=4,
                        help="validation batch size (--leak graph)")
    parser.add_argument("--cap-gib", type=C.positive_float, default=40.0,
                        help="stop leaking at this much allocated memory")
    parser.add_argument("--width", type=C.positive_int, default=1024)
    parser.add_argument("--layers", type=C.positive_int, default=8)
    parser.add_argument("--heads", type=C.positive_int, default=16)
    parser.add_argument("--context", type=C.positive_int, default=512)
    parser.add_argument("--batch-size", type=C.positive_int, default=16)
    parser.add_argument("--vocab", type=C.positive_int, default=16384)
    args = parser.parse_args()
    if args.cpu_smoke:
        args.width, args.layers, args.heads, args.context, args.batch_size = 64, 2, 4, 64, 4
        args.vocab, args.val_batch, args.leak_every = 512, 2, 1
    return args


def main() -> int:
    args = parse_args()
    job = J.Job(args, "leaky_train")
    t_setup = time.perf_counter()
    trainer = M.LmTrainer(job, args.vocab, args.width, args.layers, args.heads, args.context,
                          args.batch_size)
    val = torch.randint(0, args.vocab, (args.val_batch, args.context + 1), device=job.device)
    cap = int(args.cap_gib * (1 << 30))
    if job.cuda:
        free, _total = torch.cuda.mem_get_info(job.device)
        cap = min(cap, torch.cuda.memory_allocated(job.device) + free - KEEP_FREE_BYTES)
    for i in range(1 if job.smoke else 3):
        trainer.step(trainer.batch(i))[0].item()
    start_allocated = torch.cuda.memory_allocated(job.device) if job.cuda else 0

    predictions: list = []     # the leak of --leak logits
    val_total = None           # the leak of --leak graph
    kept = 0
    capped = False
    clock = J.GpuClock(job)
    reporter = job.reporter()
    with J.running(reporter, clock, **job.info(), setup_s=time.perf_counter() - t_setup,
                   parameters=trainer.parameters(), effective_cap_mib=C.mib(cap)):
        last = time.perf_counter()
        try:
            while reporter.elapsed() < args.duration:
                job.check_stop()
                step = reporter.steps
                clock.begin()
                loss, logits = trainer.step(trainer.batch(step))
                leak_now = step % args.leak_every == 0 and not capped
                kept += 1 if leak_now else 0
                if leak_now and args.leak == "logits":
                    predictions.append(logits.detach())
                elif leak_now:
                    with job.autocast():
                        val_loss, _ = trainer.model.loss(val)  # the bug: no torch.no_grad()
                    val_total = val_loss if val_total is None else val_total + val_loss
                clock.end()
                loss_value = loss.item()
                gpu_ms = clock.collect()
                memory = job.memory_fields()
                if not capped and job.cuda and torch.cuda.memory_allocated(job.device) >= cap:
                    capped = True
                    C.emit({"workload": "leaky_train", "event": "cap_reached",
                            "t": reporter.elapsed(), **memory})
                now = time.perf_counter()
                reporter.step((now - last) * 1e3, gpu_ms=gpu_ms, loss=loss_value, kept=kept,
                              capped=capped, **memory)
                last = now
        finally:
            leaked = (torch.cuda.memory_allocated(job.device) - start_allocated) if job.cuda else 0
            reporter.end_fields.update(leaked_mib=C.mib(leaked),
                                       leak_mib_per_s=C.mib(leaked) / max(reporter.elapsed(), 1e-9))
    return C.EXIT_OK


if __name__ == "__main__":
    J.run(main)
