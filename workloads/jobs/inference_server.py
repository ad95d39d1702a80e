#!/usr/bin/env python3
"""Job "inference_server": an inference loop with dynamic batching under a request stream.

A generator thread produces requests with Poisson arrivals at ``--rate`` requests/s (or, with
``--load F``, at F times the rate the model serves at full batches, measured at start-up). Each
request is a sequence of ``--seq-len`` token ids from a pool in host memory. The batcher
(the main thread) takes the oldest request, then waits until ``--max-batch`` requests are queued
or ``--max-wait-ms`` have passed since that request arrived, gathers the batch into pinned
memory, copies it to the GPU and runs
a transformer classifier's forward under ``torch.inference_mode`` (bf16 weights), then reads the
predictions back to answer the requests.

At a low rate the GPU runs a small forward now and then and is idle in between (the server waits
for requests); at a high rate batches fill up and the GPU is busy most of the time.

Step = one batch. Step lines carry ``batch`` (mean size), ``gpu_ms``, ``queue`` (requests
waiting), ``p50_us``/``p99_us`` (request latency, arrival to answer, over the line's interval);
the end line ``requests``, ``served_per_s``, ``gpu_busy_share`` and the latencies over the run.
"""
from __future__ import annotations

import collections
import random
import threading
import time
from typing import Any, List

import _jobs as J
from _jobs import C, torch

import _models as M


class RequestGenerator(threading.Thread):
    """Poisson arrivals at ``rate`` per second into ``queue`` (arrival times, pool indices).

    Arrivals are produced on their due times by a thread that wakes at least every
    millisecond; ``stop()`` ends it."""

    def __init__(self, rate: float, pool_size: int, seed: int) -> None:
        super().__init__(daemon=True)
        self.rate = rate
        self.pool_size = pool_size
        self.rng = random.Random(seed)
        self.queue: collections.deque = collections.deque()
        self.ready = threading.Condition()
        self.generated = 0
        self._halt = threading.Event()

    def run(self) -> None:
        next_at = time.perf_counter() + self.rng.expovariate(self.rate)
        while not self._halt.is_set():
            now = time.perf_counter()
            due = []
            while next_at <= now:
                due.append((next_at, self.rng.randrange(self.pool_size)))
                next_at += self.rng.expovariate(self.rate)
            if due:
                with self.ready:
                    self.queue.extend(due)
                    self.generated += len(due)
                    self.ready.notify()
            time.sleep(min(0.001, max(0.0, next_at - time.perf_counter())))

    def stop(self) -> None:
        self._halt.set()

    def take_batch(self, max_batch: int, max_wait_s: float, deadline: float) -> List[tuple]:
        """The next batch: wait for a first request (until ``deadline``), then until
        ``max_batch`` are queued or ``max_wait_s`` after the first one's arrival."""
        with self.ready:
            while not self.queue:
                left = deadline - time.perf_counter()
                if left <= 0:
                    return []
                self.ready.wait(min(left, 0.05))
            close_at = self.queue[0][0] + max_wait_s
            while len(self.queue) < max_batch:
                left = close_at - time.perf_counter()
                if left <= 0:
                    break
                self.ready.wait(left)
            n = min(max_batch, len(self.queue))
            return [self.queue.popleft() for _ in range(n)]


def percentile(values: List[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def parse_args() -> Any:
    parser = J.job_parser(__doc__.splitlines()[0])
    rate = parser.add_mutually_exclusive_group()
    rate.add_argument("--rate", type=C.positive_float, default=None, help="requests per second")
    rate.add_argument("--load", type=C.positive_float, default=None,
                      help="requests per second as a fraction of the full-batch capacity")
    parser.add_argument("--max-batch", type=C.positive_int, default=64)
    parser.add_argument("--max-wait-ms", type=C.positive_float, default=5.0)
    parser.add_argument("--seq-len", type=C.positive_int, default=256)
    parser.add_argument("--width", type=C.positive_int, default=1024)
    parser.add_argument("--layers", type=C.positive_int, default=12)
    parser.add_argument("--heads", type=C.positive_int, default=16)
    parser.add_argument("--vocab", type=C.positive_int, default=32000)
    parser.add_argument("--classes", type=C.positive_int, default=16)
    parser.add_argument("--pool", type=C.positive_int, default=4096, help="distinct requests")
    args = parser.parse_args()
    if args.rate is None and args.load is None:
        args.rate = 200.0
    if args.cpu_smoke:
        args.width, args.layers, args.heads, args.seq_len, args.vocab = 64, 2, 4, 32, 512
        args.max_batch, args.pool = min(args.max_batch, 8), 64
        if args.rate is not None:
            args.rate = min(args.rate, 50.0)
    return args


def main() -> int:
    args = parse_args()
    job = J.Job(args, "inference_server")
    t_setup = time.perf_counter()
    model = M.TransformerClassifier(args.vocab, args.width, args.layers, args.heads,
                                    args.seq_len, args.classes).to(job.device).eval()
    if job.cuda:
        model = model.to(torch.bfloat16)
    pool = torch.randint(0, args.vocab, (args.pool, args.seq_len), dtype=torch.int32)
    staging = torch.empty(args.max_batch, args.seq_len, dtype=torch.int32)
    if job.cuda:
        staging = staging.pin_memory()  # the batch is gathered here, then copied asynchronously

    def serve(indices: List[int]) -> "torch.Tensor":
        batch = staging[:len(indices)]
        torch.index_select(pool, 0, torch.tensor(indices), out=batch)
        with torch.inference_mode():
            logits = model(J.to_device(batch, job.device).long())
            return logits.argmax(dim=-1)

    full = list(range(args.max_batch))
    for _ in range(2 if job.smoke else 5):  # warm-up, then the full-batch time for --load
        serve(full).cpu()
    t = time.perf_counter()
    for _ in range(2 if job.smoke else 10):
        serve(full).cpu()
    full_batch_ms = (time.perf_counter() - t) * 1e3 / (2 if job.smoke else 10)
    capacity = args.max_batch / full_batch_ms * 1e3
    rate = args.rate if args.rate is not None else args.load * capacity

    generator = RequestGenerator(rate, args.pool, args.seed)
    clock = J.GpuClock(job)
    reporter = job.reporter()
    latencies: List[float] = []
    window: List[float] = []
    with J.running(reporter, clock, **job.info(), setup_s=time.perf_counter() - t_setup,
                   rate=rate, full_batch_ms=full_batch_ms, capacity_per_s=capacity):
        generator.start()
        start = time.perf_counter()
        last = start
        try:
            while reporter.elapsed() < args.duration:
                job.check_stop()
                deadline = start + args.duration
                requests = generator.take_batch(args.max_batch, args.max_wait_ms / 1e3, deadline)
                if not requests:
                    continue
                clock.begin()
                answers = serve([index for _, index in requests])
                clock.end()
                answers.cpu()
                gpu_ms = clock.collect()
                now = time.perf_counter()
                for arrived, _ in requests:
                    window.append((now - arrived) * 1e3)
                reporter.step((now - last) * 1e3, batch=float(len(requests)), gpu_ms=gpu_ms,
                              queue=len(generator.queue), served=len(latencies) + len(window),
                              p50_us=int(percentile(window, 0.5) * 1e3),
                              p99_us=int(percentile(window, 0.99) * 1e3))
                last = now
                if reporter.pending_steps == 0:  # a line went out: start the next window
                    latencies.extend(window)
                    window = []
        finally:
            generator.stop()
            latencies.extend(window)
            elapsed = max(reporter.elapsed(), 1e-9)
            reporter.end_fields.update(
                requests=generator.generated, served=len(latencies),
                served_per_s=len(latencies) / elapsed, left_in_queue=len(generator.queue),
                p50_ms=percentile(latencies, 0.5), p99_ms=percentile(latencies, 0.99))
    return C.EXIT_OK


if __name__ == "__main__":
    J.run(main)
