#!/usr/bin/env python3
"""Reference workload "memory_bound": a stream of large fp32 elementwise ops.

``torch.add(a, b, out=c)`` (or ``c.copy_(a)`` with ``--op copy``) on ``--gib``-GiB tensors,
back to back. Each op reads and writes gigabytes and does one add per 12 bytes moved, so it is
limited by HBM bandwidth (an H200 moves ~4.2 TB/s device-to-device through PyTorch).

Pattern: GPU utilization ~100 %, NVML memory utilization high, GPM DRAM activity high
(most of peak), tensor activity zero, SM activity high (the elementwise kernels occupy every SM
while they wait on memory) but little compute per byte; power well below the GEMM level. This
is the "memory-bound" case: the fix is fusion or less data movement, not more FLOP/s.

Like ``gemm_saturated``, the loop waits only for the previous batch, so the queue never runs dry.
"""
from __future__ import annotations

import _common as C
from _common import torch


def main() -> int:
    parser = C.make_parser(__doc__.splitlines()[0])
    parser.add_argument("--gib", type=C.positive_float, default=4.0,
                        help="size of each fp32 tensor (three for add, two for copy)")
    parser.add_argument("--op", choices=("add", "copy"), default="add",
                        help="add: c = a + b (reads 2, writes 1); copy: c = a (reads 1, writes 1)")
    parser.add_argument("--batch-ms", type=C.positive_float, default=100.0,
                        help="GPU time per step")
    args = parser.parse_args()

    device = C.init_device(args.device)
    numel = int(args.gib * (1 << 30)) // 4
    tensors = 3 if args.op == "add" else 2
    free, _total = torch.cuda.mem_get_info(device)
    if numel * 4 * tensors > free - (2 << 30):
        C.log(f"needs {tensors} x {args.gib} GiB but only {free / (1 << 30):.1f} GiB is free; "
              "use a smaller --gib")
        return C.EXIT_ENVIRONMENT
    a = torch.randn(numel, dtype=torch.float32, device=device)
    c = torch.empty_like(a)
    if args.op == "add":
        b = torch.randn(numel, dtype=torch.float32, device=device)

        def op() -> None:
            torch.add(a, b, out=c)
        bytes_per_op = 3 * numel * 4
    else:
        def op() -> None:
            c.copy_(a)
        bytes_per_op = 2 * numel * 4

    per_op_ms = C.time_gpu_ms(op, iters=10)
    batch = C.calls_for(args.batch_ms, per_op_ms)
    bytes_per_step = bytes_per_op * batch

    reporter = C.Reporter("memory_bound", C.params_of(args))
    with reporter.running(**C.device_info(device), op_ms=per_op_ms, ops_per_step=batch,
                          op_gbps=bytes_per_op / (per_op_ms * 1e-3) / 1e9):
        C.run_pipelined(reporter, args.duration, op, batch,
                        lambda step_ms: {"gbps": bytes_per_step / (step_ms * 1e-3) / 1e9})
    return C.EXIT_OK


if __name__ == "__main__":
    C.run_main(main)
