#!/usr/bin/env python3
"""Job "shared_gpu": a training job sharing its GPU with another process that runs GEMMs.

The job trains a GPT-style model (AdamW, bf16 autocast) on token windows held on the GPU. A
second process (another user's job, as far as the GPU can tell: its own PID and CUDA context)
runs bf16 ``--gemm-size``-cubed matrix products back to back on the same GPU, from
``--intruder-start-s`` seconds after the start line (0: the whole time) until the job ends. It is
started (Python and torch imported) during set-up, and creates its CUDA context and operands
when its time comes, as a newly started job would. Without MPS the two contexts time-slice the
GPU: it reads ~100 % busy, each process gets a share, and the job's step time grows by about the
share the other takes.

The job's step lines carry ``gpu_ms``, ``loss`` and ``intruder`` (whether the other process is
running); the other process prints ``{"event": "intruder_start"}`` (with its PID) when its
products begin and step lines with ``"process": "intruder"`` and ``tflops``.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from typing import Any

import _jobs as J
from _jobs import C, torch

import _models as M

STARTUP_TIMEOUT_S = 180.0


def intruder(args: dict, ready: Any, go: Any, running: Any, stop: Any) -> None:
    """The other process: say ``ready`` (torch imported), wait for ``go``, then matrix products
    (``running`` set once they began) until ``stop`` (or the parent is gone, or the run's time
    is long over)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # the job stops it through ``stop``
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    ready.set()
    parent = os.getppid()
    give_up_at = time.time() + args["duration"] + 600
    while not go.wait(0.2):
        if stop.is_set() or os.getppid() != parent or time.time() > give_up_at:
            return
    if args["cpu"]:
        device = torch.device("cpu")
        torch.set_num_threads(1)
    else:
        device = C.init_device(args["device"])
    dtype = torch.float32 if args["cpu"] else torch.bfloat16
    matmul = C.make_matmul(args["gemm_size"], dtype, device)
    reporter = C.Reporter("shared_gpu", fixed={"process": "intruder", "pid": os.getpid()})
    reporter.mark_start()
    C.emit({"workload": "shared_gpu", "event": "intruder_start", "pid": os.getpid(),
            "time_unix": time.time()})
    flop = 2.0 * args["gemm_size"] ** 3
    running.set()
    while not stop.is_set() and os.getppid() == parent and time.time() < give_up_at:
        t = time.perf_counter()
        for _ in range(args["gemms_per_batch"]):
            matmul()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        ms = (time.perf_counter() - t) * 1e3
        reporter.step(ms, tflops=flop * args["gemms_per_batch"] / (ms / 1e3) / 1e12)
    reporter.flush()


def parse_args() -> Any:
    parser = J.job_parser(__doc__.splitlines()[0])
    parser.add_argument("--intruder-start-s", type=float, default=0.0,
                        help="seconds after the start line when the other process starts its work")
    parser.add_argument("--gemm-size", type=C.positive_int, default=8192)
    parser.add_argument("--gemms-per-batch", type=C.positive_int, default=8,
                        help="products between two synchronizations of the other process")
    parser.add_argument("--width", type=C.positive_int, default=1024)
    parser.add_argument("--layers", type=C.positive_int, default=12)
    parser.add_argument("--heads", type=C.positive_int, default=16)
    parser.add_argument("--context", type=C.positive_int, default=1024)
    parser.add_argument("--batch-size", type=C.positive_int, default=16)
    parser.add_argument("--vocab", type=C.positive_int, default=16384)
    args = parser.parse_args()
    if args.intruder_start_s < 0:
        parser.error("--intruder-start-s must be >= 0")
    if args.cpu_smoke:
        args.width, args.layers, args.heads, args.context, args.batch_size = 64, 2, 4, 64, 4
        args.vocab, args.gemm_size, args.gemms_per_batch = 512, 256, 2
        args.intruder_start_s = min(args.intruder_start_s, 1.0)
    return args


def main() -> int:
    args = parse_args()
    job = J.Job(args, "shared_gpu")
    t_setup = time.perf_counter()
    ctx = mp.get_context("spawn")
    events = [ctx.Event() for _ in range(4)]
    ready, go, running, stop = events
    other = ctx.Process(target=intruder, daemon=True, args=(
        {"duration": args.duration, "device": args.device, "cpu": job.smoke,
         "gemm_size": args.gemm_size, "gemms_per_batch": args.gemms_per_batch}, *events))
    other.start()
    try:
        trainer = M.LmTrainer(job, args.vocab, args.width, args.layers, args.heads, args.context,
                              args.batch_size)
        for i in range(1 if job.smoke else 3):
            trainer.step(trainer.batch(i))[0].item()
        if not wait_for(job, other, ready, STARTUP_TIMEOUT_S):
            return C.EXIT_FAILURE
        if args.intruder_start_s == 0:  # sharing from the first step on
            go.set()
            if not wait_for(job, other, running, STARTUP_TIMEOUT_S):
                return C.EXIT_FAILURE
        train(args, job, trainer, (other, go, stop), t_setup)
    finally:
        stop.set()
        other.join(timeout=30.0)
        if other.is_alive():
            other.terminate()
            other.join(timeout=10.0)
    return C.EXIT_OK


def wait_for(job: J.Job, other: Any, event: Any, timeout_s: float) -> bool:
    """Wait for the other process's ``event``; False (with a message) if it died or timed out."""
    deadline = time.perf_counter() + timeout_s
    while not event.wait(0.1):
        job.check_stop()
        if not other.is_alive() or time.perf_counter() > deadline:
            C.log(f"the other process (pid {other.pid}) did not start its work "
                  f"(exit code {other.exitcode})")
            return False
    return True


def train(args: Any, job: J.Job, trainer: M.LmTrainer, intruder_control: tuple,
          t_setup: float) -> None:
    """The job's timed loop; the other process is stopped before the end line."""
    other, go, stop = intruder_control
    clock = J.GpuClock(job)
    reporter = job.reporter(fixed={"process": "job"})
    with J.running(reporter, clock, **job.info(), setup_s=time.perf_counter() - t_setup,
                   parameters=trainer.parameters(), intruder_pid=other.pid):
        try:
            loop(args, job, trainer, reporter, clock, go)
        finally:
            stop.set()
            other.join(timeout=30.0)


def loop(args: Any, job: J.Job, trainer: M.LmTrainer, reporter: C.Reporter, clock: J.GpuClock,
         go: Any) -> None:
    last = time.perf_counter()
    while reporter.elapsed() < args.duration:
        job.check_stop()
        if not go.is_set() and reporter.elapsed() >= args.intruder_start_s:
            go.set()
        clock.begin()
        loss, _ = trainer.step(trainer.batch(reporter.steps))
        clock.end()
        loss_value = loss.item()
        gpu_ms = clock.collect()
        now = time.perf_counter()
        reporter.step((now - last) * 1e3, gpu_ms=gpu_ms, loss=loss_value, intruder=go.is_set())
        last = now


if __name__ == "__main__":
    J.run(main)
