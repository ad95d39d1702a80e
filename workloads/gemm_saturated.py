#!/usr/bin/env python3
"""Reference workload "gemm_saturated": back-to-back large bf16 matmuls, the healthy case.

Pattern: GPU utilization ~100 % flat, GPM SM activity and occupancy high, tensor activity high,
DRAM activity moderate (8192^3 GEMM is compute-bound), power at or near the limit; on an H200 the
SM clock settles near 1515-1530 MHz with the software power-cap reason set. This is what a
well-fed GPU looks like; nothing should be diagnosed except, at most, the power cap.

The loop keeps the GPU queue non-empty at all times: it launches a batch of about ``--batch-ms``
of matmuls, then waits only for the *previous* batch (an event), so there is never a gap while
the host synchronizes.
"""
from __future__ import annotations

import _common as C
from _common import torch


def main() -> int:
    parser = C.make_parser(__doc__.splitlines()[0])
    parser.add_argument("--size", type=C.positive_int, default=8192, help="matrix side M=N=K")
    parser.add_argument("--dtype", choices=sorted(C.DTYPES), default="bf16")
    parser.add_argument("--batch-ms", type=C.positive_float, default=100.0,
                        help="GPU time per step (matmuls launched between two host waits)")
    args = parser.parse_args()

    device = C.init_device(args.device)
    matmul = C.make_matmul(args.size, C.DTYPES[args.dtype], device)
    C.warm_up(matmul, 1.0)
    per_call_ms = C.time_gpu_ms(matmul, iters=20)
    batch = C.calls_for(args.batch_ms, per_call_ms)
    flop_per_step = 2.0 * args.size ** 3 * batch

    reporter = C.Reporter("gemm_saturated", C.params_of(args))
    with reporter.running(**C.device_info(device), matmul_ms=per_call_ms,
                          matmuls_per_step=batch):
        C.run_pipelined(reporter, args.duration, matmul, batch,
                        lambda step_ms: {"tflops": flop_per_step / (step_ms * 1e-3) / 1e12})
    return C.EXIT_OK


if __name__ == "__main__":
    C.run_main(main)
