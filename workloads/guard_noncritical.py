#!/usr/bin/env python3
"""guard_noncritical: a non-critical process sharing the training job's GPU (an evaluation loop).

It runs a few small matrix products (``--size``, bf16 on CUDA, fp32 on the CPU) for about
``--duty`` of every ``--interval-ms`` (100 ms) and sleeps the rest, and prints one line per
interval with the wall time, so that a pause by ``gpudoc guard`` (SIGSTOP when a level with
``pause_noncritical`` is entered, SIGCONT when it clears) shows as a gap in its output:
``gap_ms`` (the time since the previous tick) jumps from ~100 to the length of the pause. A
SIGCONT is also caught and printed as its own line (``"event": "sigcont"``); SIGSTOP cannot be
caught, only seen as the gap.

How the guard finds it: before torch is imported the process names itself with
``prctl(PR_SET_NAME)`` (``--comm``, default ``gpudoc-noncrit``; at most 15 bytes), which is what
``/proc/PID/comm``, ``ps -o comm`` and the kernel's task name show (threads started later, torch's
included, inherit it). A guard policy names it with ``noncritical = gpudoc-noncrit``; a guard that
matches the command line instead can use ``noncritical = re:.*guard_noncritical.*``
(tools/guard_e2e.policy has both).

Stdout: ``::gpudoc {json}`` lines (workloads/README.md): a start line (every option, the device,
``pid``, ``comm`` as the kernel now reports it), ``{"event": "tick", "tick": i, "time_unix": ...,
"gap_ms": ..., "matmuls": n}`` every interval, ``{"event": "sigcont", ...}`` when continued, and an
end line (``ticks``, ``max_gap_ms``, ``stopped_by`` when a signal ended it).

Options: ``--device N|cpu`` (0), ``--duration S`` (600: it normally ends by SIGTERM from whoever
started it), ``--interval-ms`` (100), ``--duty`` (0.3), ``--size`` (1024; 256 on the CPU),
``--comm NAME``.

Exit codes: 0 the duration ran out; 2 bad usage; 3 no usable device or no torch; 128+signal when
stopped by SIGINT/SIGTERM (after the end line); 1 any other failure.
"""
from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os
import signal
import sys
import time
from typing import Any, Optional

PR_SET_NAME = 15
DEFAULT_COMM = "gpudoc-noncrit"


def set_process_name(name: str) -> Optional[str]:
    """Set the kernel's name of this task (``/proc/self/comm``); returns what it reads back, or
    None where prctl is not available (not Linux)."""
    encoded = name.encode()[:15]
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        if libc.prctl(PR_SET_NAME, ctypes.c_char_p(encoded), 0, 0, 0) != 0:
            return None
        with open("/proc/self/comm", encoding="utf-8") as f:
            return f.read().strip()
    except (OSError, AttributeError):
        return None


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--device", default="0", help="CUDA index, or cpu")
    p.add_argument("--duration", type=float, default=600.0, help="seconds, then it ends by itself")
    p.add_argument("--interval-ms", type=float, default=100.0, help="one tick line per interval")
    p.add_argument("--duty", type=float, default=0.3, help="share of each interval spent computing")
    p.add_argument("--size", type=int, default=0, help="matrix size (0: 1024 on CUDA, 256 on the CPU)")
    p.add_argument("--comm", default=DEFAULT_COMM, help="process name set with prctl (<= 15 bytes)")
    args = p.parse_args()
    if args.device != "cpu" and not args.device.isdigit():
        p.error("--device is a CUDA index or cpu")
    if not 0 < args.duty <= 1 or args.interval_ms <= 0 or args.duration <= 0 or args.size < 0:
        p.error("--duty in (0, 1], --interval-ms, --duration > 0, --size >= 0")
    if not args.comm or len(args.comm.encode()) > 15:
        p.error("--comm must be 1 to 15 bytes (the kernel's limit for a task name)")
    return args


def main(args: argparse.Namespace, comm: Optional[str]) -> int:
    import _common as C
    from _common import torch

    if args.device == "cpu":
        device = torch.device("cpu")
        torch.set_num_threads(1)
        dtype, size = torch.float32, args.size or 256
    else:
        device = C.init_device(int(args.device))
        dtype, size = torch.bfloat16, args.size or 1024
    matmul = C.make_matmul(size, dtype, device)
    matmul()
    sigconts = []
    signal.signal(signal.SIGCONT, lambda *_: sigconts.append(time.time()))
    info = C.device_info(device) if device.type == "cuda" else {"device": "cpu", "torch": torch.__version__}
    C.emit({"workload": "guard_noncritical", "event": "start", **vars(args), **info, "size": size,
            "comm": comm, "pid": os.getpid(), "time_unix": time.time()})
    interval = args.interval_ms / 1e3
    ticks, max_gap_ms, stopped_by = 0, 0.0, None
    t0 = last = next_tick = time.perf_counter()
    try:
        while time.perf_counter() - t0 < args.duration:
            busy_until = time.perf_counter() + interval * args.duty
            n = 0
            while n == 0 or time.perf_counter() < busy_until:
                matmul()
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                n += 1
            while sigconts:
                C.emit({"event": "sigcont", "time_unix": sigconts.pop(0)})
            now = time.perf_counter()
            gap_ms = (now - last) * 1e3
            max_gap_ms = max(max_gap_ms, gap_ms) if ticks else 0.0
            ticks += 1
            C.emit({"event": "tick", "tick": ticks, "time_unix": time.time(), "gap_ms": gap_ms,
                    "matmuls": n})
            last = now
            # The next tick on the grid; after a pause the grid restarts (no burst of late ticks).
            next_tick = max(next_tick + interval, now + interval * (1 - args.duty))
            time.sleep(max(0.0, next_tick - time.perf_counter() - interval * args.duty))
    except C.StopRequested as stop:
        stopped_by = stop.name
        raise
    finally:
        C.emit({"workload": "guard_noncritical", "event": "end", "ticks": ticks, "max_gap_ms": max_gap_ms,
                **({"stopped_by": stopped_by} if stopped_by else {}),
                "elapsed_s": time.perf_counter() - t0, "time_unix": time.time()})
    return 0


def run() -> Any:
    args = parse_args()
    comm = set_process_name(args.comm)  # before torch is imported: its threads inherit the name
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _common as C  # imports torch
    C.run_main(lambda: main(args, comm))


if __name__ == "__main__":
    run()
