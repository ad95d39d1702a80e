#!/usr/bin/env python3
"""Reference workload "thermal_steps": load steps on a schedule, for the guard's temperature
forecast (cold start to full load, load on and off, a long heat-up).

``--schedule`` is a comma-separated list of PHASE:SECONDS, run in order:

* ``idle``: nothing on the GPU (the host sleeps; the context stays);
* ``full``: back-to-back bf16 matmuls, pipelined so the queue never empties (full power);
* ``half``: matmul bursts of ``--half-ms`` then as long a pause: about half the power, a load
  level between idle and full that a model must interpolate.

Each phase change is printed as a ``::gpudoc`` step line with the phase's name and start time,
so the truth of what the job did, and when, is in the log beside the trace.
"""
from __future__ import annotations

import time

import _common as C
from _common import torch

PHASES = ("idle", "full", "half")


def parse_schedule(text: str) -> list:
    schedule = []
    for item in text.split(","):
        name, sep, seconds = item.strip().partition(":")
        if not sep or name not in PHASES:
            raise SystemExit(f"thermal_steps: bad phase {item!r}: expected PHASE:SECONDS with PHASE one of "
                             f"{', '.join(PHASES)}")
        try:
            duration = float(seconds)
        except ValueError:
            raise SystemExit(f"thermal_steps: bad seconds in {item!r}") from None
        if not duration > 0:
            raise SystemExit(f"thermal_steps: seconds must be > 0 in {item!r}")
        schedule.append((name, duration))
    return schedule


def run_full(matmul, batch: int, until: float) -> None:
    previous = None
    while time.monotonic() < until:
        for _ in range(batch):
            matmul()
        event = torch.cuda.Event()
        event.record()
        if previous is not None:
            previous.synchronize()
        previous = event
    if previous is not None:
        previous.synchronize()


def run_half(matmul, calls: int, pause_s: float, until: float) -> None:
    while time.monotonic() < until:
        for _ in range(calls):
            matmul()
        torch.cuda.synchronize()
        time.sleep(min(pause_s, max(0.0, until - time.monotonic())))


def main() -> int:
    parser = C.make_parser(__doc__.splitlines()[0])
    parser.add_argument("--schedule", default="idle:10,full:60,idle:20",
                        help="PHASE:SECONDS,... with PHASE idle, full or half")
    parser.add_argument("--half-ms", type=C.positive_float, default=50.0,
                        help="burst (and pause) length of a half-load phase, in ms")
    parser.add_argument("--size", type=C.positive_int, default=8192, help="matrix side M=N=K")
    args = parser.parse_args()
    schedule = parse_schedule(args.schedule)

    device = C.init_device(args.device)
    matmul = C.make_matmul(args.size, C.DTYPES["bf16"], device)
    per_call_ms = C.time_gpu_ms(matmul, iters=5)
    torch.cuda.synchronize()
    batch = C.calls_for(100.0, per_call_ms)
    half_calls = C.calls_for(args.half_ms, per_call_ms)

    reporter = C.Reporter("thermal_steps", C.params_of(args))
    with reporter.running(**C.device_info(device), matmul_ms=per_call_ms):
        start = time.monotonic()
        for step, (name, seconds) in enumerate(schedule):
            t0 = time.monotonic()
            C.emit({"step": step, "phase": name, "t_s": round(t0 - start, 3), "seconds": seconds})
            until = t0 + seconds
            if name == "full":
                run_full(matmul, batch, until)
            elif name == "half":
                run_half(matmul, half_calls, args.half_ms / 1000.0, until)
            else:
                time.sleep(max(0.0, until - time.monotonic()))
    return C.EXIT_OK


if __name__ == "__main__":
    C.run_main(main)
