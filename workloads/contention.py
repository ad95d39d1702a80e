#!/usr/bin/env python3
"""Reference workload "contention": two (or ``--workers``) processes sharing one GPU.

The script starts the workers as separate processes (``multiprocessing``, spawn), each with its
own CUDA context on the same GPU and its own bf16 matmul operands. After every worker has
initialized and warmed up, the parent fixes a shared start time and the pattern begins:

* ``--mode turns`` (default): time is cut into slots of ``--phase-s`` seconds; in slot j only
  worker j mod N runs matmuls flat out, the others sleep. The GPU as a whole stays ~100 % busy,
  but per-process utilization shows anti-correlated staircases: worker 0 high while worker 1 is
  at 0, then the reverse, every ``--phase-s``.
* ``--mode concurrent``: every worker runs matmuls flat out the whole time. Without MPS the
  contexts time-slice: GPU utilization ~100 %, each process's per-process utilization about 1/N,
  and each worker's step time about N times its solo time.

Each worker prints its own step lines (with ``"worker"`` and ``"pid"``) and, in turns mode, a
``{"event": "phase", ...}`` line whenever its slot changes; the parent prints the start line
(with the worker PIDs, to match NVML's per-process samples) and the end line.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import queue
import sys
import time

import _common as C
from _common import torch

READY_TIMEOUT_S = 300.0


def _worker(k: int, n: int, args: dict, messages: "mp.Queue", go: "mp.Event",
            t0: "mp.Value") -> None:
    """One worker: set up, report ready (with its PID and the GPU's identity), wait for the
    shared start time, then run its slots until ``duration`` seconds after it."""
    try:
        if not torch.cuda.is_available():
            messages.put(("error", k, "CUDA not available in worker"))
            sys.exit(C.EXIT_ENVIRONMENT)
        device = C.init_device(args["device"])
        matmul = C.make_matmul(args["size"], C.DTYPES[args["dtype"]], device)
        C.warm_up(matmul, 0.5)
        per_call_ms = C.time_gpu_ms(matmul, iters=10)
        messages.put(("ready", k, {**C.device_info(device), "pid": os.getpid()}))
        if not go.wait(READY_TIMEOUT_S):
            sys.exit(C.EXIT_FAILURE)
        start = t0.value
        duration = args["duration"]
        phase_s = args["phase_s"]
        turns = args["mode"] == "turns"
        max_batch_ms = args["batch_ms"]

        reporter = C.Reporter("contention", fixed={"worker": k, "pid": os.getpid()})
        while time.time() < start:
            time.sleep(min(0.01, max(0.0, start - time.time())))
        reporter.mark_start()
        phase = -1
        while True:
            elapsed = time.time() - start
            if elapsed >= duration:
                break
            if turns:
                current = int(elapsed // phase_s)
                active = current % n == k
                slot_end = min((current + 1) * phase_s, duration)
                if current != phase:
                    phase = current
                    reporter.flush()
                    C.emit({"workload": "contention", "event": "phase", "worker": k,
                            "pid": os.getpid(), "phase": current, "active": active,
                            "t": elapsed})
            else:
                active = True
                slot_end = duration
            remaining_ms = (slot_end - elapsed) * 1e3
            if not active:
                time.sleep(max(0.0, slot_end - elapsed))
                continue
            # Launch no more than fits before the slot ends, so turns barely overlap.
            count = min(C.calls_for(max_batch_ms, per_call_ms),
                        int(remaining_ms // max(per_call_ms, 1e-3)))
            if count < 1:
                time.sleep(max(0.0, slot_end - elapsed))
                continue
            t = time.perf_counter()
            for _ in range(count):
                matmul()
            torch.cuda.synchronize(device)
            step_ms = (time.perf_counter() - t) * 1e3
            per_call_ms = 0.8 * per_call_ms + 0.2 * (step_ms / count)
            reporter.step(step_ms, matmul_ms=step_ms / count, active=active)
        reporter.flush()
        messages.put(("done", k, reporter.steps))
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as error:
        messages.put(("error", k, f"{type(error).__name__}: {error}"))
        raise


def main() -> int:
    parser = C.make_parser(__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("turns", "concurrent"), default="turns")
    parser.add_argument("--workers", type=C.positive_int, default=2,
                        help="processes sharing the GPU")
    parser.add_argument("--phase-s", type=C.positive_float, default=2.0,
                        help="turns mode: seconds each worker's slot lasts")
    parser.add_argument("--size", type=C.positive_int, default=8192, help="matrix side")
    parser.add_argument("--dtype", choices=sorted(C.DTYPES), default="bf16")
    parser.add_argument("--batch-ms", type=C.positive_float, default=20.0,
                        help="matmuls launched between two synchronizations, in GPU ms")
    args = parser.parse_args()

    count = C.require_cuda()  # no context in the parent: only the workers use the GPU
    if not 0 <= args.device < count:
        C.log(f"--device {args.device} does not exist; {count} CUDA device(s) visible")
        return C.EXIT_ENVIRONMENT

    ctx = mp.get_context("spawn")
    messages = ctx.Queue()
    go = ctx.Event()
    t0 = ctx.Value("d", 0.0)
    worker_args = {"device": args.device, "size": args.size, "dtype": args.dtype,
                   "duration": args.duration, "phase_s": args.phase_s, "mode": args.mode,
                   "batch_ms": args.batch_ms}
    workers = [ctx.Process(target=_worker, args=(k, args.workers, worker_args, messages, go, t0),
                           name=f"contention-worker-{k}", daemon=True)
               for k in range(args.workers)]
    rc = C.EXIT_OK
    try:
        for w in workers:
            w.start()
        infos: dict = {}
        deadline = time.monotonic() + READY_TIMEOUT_S
        while len(infos) < args.workers:
            try:
                kind, k, payload = messages.get(timeout=1.0)
            except queue.Empty:
                dead = [w.name for w in workers if w.exitcode is not None]
                if dead or time.monotonic() > deadline:
                    C.log(f"workers failed to start: exited {dead}" if dead else "workers timed out")
                    return C.EXIT_ENVIRONMENT if any(
                        w.exitcode == C.EXIT_ENVIRONMENT for w in workers) else C.EXIT_FAILURE
                continue
            if kind == "error":
                C.log(f"worker {k}: {payload}")
                return C.EXIT_FAILURE
            if kind == "ready":
                infos[k] = payload

        t0.value = time.time() + 0.25
        go.set()
        time.sleep(max(0.0, t0.value - 0.01 - time.time()))  # start line just before t0
        reporter = C.Reporter("contention", C.params_of(args))
        info = dict(infos[0])  # the GPU's identity, as worker 0 read it
        info.pop("pid")
        info["worker_pids"] = [infos[k]["pid"] for k in range(args.workers)]
        info["t0_unix"] = t0.value  # the workers' shared start time
        with reporter.running(**info):
            steps = [0] * args.workers
            finished = set()
            deadline = time.monotonic() + args.duration + 60.0
            while len(finished) < args.workers and time.monotonic() < deadline:
                try:
                    kind, k, payload = messages.get(timeout=0.5)
                except queue.Empty:
                    if all(w.exitcode is not None for w in workers):
                        break
                    continue
                if kind == "done":
                    steps[k] = payload
                    finished.add(k)
                elif kind == "error":
                    C.log(f"worker {k}: {payload}")
                    rc = C.EXIT_FAILURE
                    finished.add(k)
            reporter.steps = sum(steps)
            reporter.end_fields = {"worker_steps": steps}
            if len(finished) < args.workers:
                C.log("not every worker reported its end")
                rc = C.EXIT_FAILURE
        for w in workers:
            w.join(timeout=30.0)
            if w.exitcode not in (0, None) and rc == C.EXIT_OK:
                C.log(f"{w.name} exited with {w.exitcode}")
                rc = C.EXIT_FAILURE
        return rc
    finally:
        for w in workers:
            if w.is_alive():
                w.terminate()
        for w in workers:
            w.join(timeout=10.0)


if __name__ == "__main__":
    C.run_main(main)
