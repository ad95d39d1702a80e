#!/usr/bin/env python3
"""Reference workload "sawtooth": bursts of GPU work separated by host-side waits, the
input-starved training loop (a data loader that cannot keep up).

Each period of ``--period-ms`` P starts with a burst of bf16 matmuls lasting about P*D ms
(``--duty`` D), ends the burst with a synchronize, then the host sleeps (``time.sleep``, the
stand-in for a data loader) until the period is over, about P*(1-D) ms.

Pattern, by period:
* P well above the 200 ms utilization sample (500-4000 ms): a clean square wave in GPU
  utilization between ~100 % and 0 %, mean ~D; SM/tensor activity and power follow it.
  P=1000, D=0.5 (the defaults) is the slow, clean "square wave" case.
* P near or below the sample (50-100 ms): the bursts are averaged inside each sample; the
  utilization curve wanders around ~D*100 % with no visible period ("below sensor
  resolution", aliasing). It must not be read as a steady partial load.

The burst is calibrated: one matmul is timed with CUDA events, the burst gets as many as fill
P*D ms, and the count is re-tuned every period from the measured burst (clocks drift with
power and temperature). Periods are scheduled on absolute deadlines, so the period stays P even
when a burst runs long; if a burst overruns its whole period, the schedule restarts from now.
"""
from __future__ import annotations

import time

import _common as C
from _common import torch


def main() -> int:
    parser = C.make_parser(__doc__.splitlines()[0])
    parser.add_argument("--period-ms", type=C.positive_float, default=1000.0,
                        help="period P of one burst + wait, in ms (50 .. 4000 tested)")
    parser.add_argument("--duty", type=float, default=0.5,
                        help="share D of the period spent in the GPU burst, 0 < D <= 1")
    parser.add_argument("--size", type=C.positive_int, default=8192,
                        help="matrix side of the burst's matmuls")
    parser.add_argument("--dtype", choices=sorted(C.DTYPES), default="bf16")
    args = parser.parse_args()
    if not 0.0 < args.duty <= 1.0:
        parser.error("--duty must be in (0, 1]")

    device = C.init_device(args.device)
    matmul = C.make_matmul(args.size, C.DTYPES[args.dtype], device)
    C.warm_up(matmul, 0.5)
    per_call_ms = C.time_gpu_ms(matmul, iters=20)
    burst_target_ms = args.period_ms * args.duty
    count = C.calls_for(burst_target_ms, per_call_ms)
    if per_call_ms > burst_target_ms * 1.5:
        C.log(f"one matmul takes {per_call_ms:.2f} ms, longer than the {burst_target_ms:.1f} ms "
              "burst; bursts will run long (use a smaller --size)")
    time.sleep(max(0.5, args.period_ms / 1e3))  # start the pattern from an idle GPU

    period_s = args.period_ms / 1e3
    reporter = C.Reporter("sawtooth", C.params_of(args))
    with reporter.running(**C.device_info(device), matmul_ms=per_call_ms,
                          burst_target_ms=burst_target_ms, matmuls_per_burst=count):
        next_start = time.perf_counter()
        overruns = 0
        while reporter.elapsed() < args.duration:
            period_start = next_start
            t_burst = time.perf_counter()
            for _ in range(count):
                matmul()
            torch.cuda.synchronize(device)
            t_burst_end = time.perf_counter()
            burst_ms = (t_burst_end - t_burst) * 1e3

            # Re-tune the burst length from what it really took (exponential average).
            per_call_ms = 0.7 * per_call_ms + 0.3 * (burst_ms / count)
            used = count
            count = C.calls_for(burst_target_ms, per_call_ms)

            next_start = period_start + period_s
            wait_s = next_start - time.perf_counter()
            if wait_s > 0:
                time.sleep(wait_s)  # the "data loader": the GPU has nothing to do
            else:
                overruns += 1
                next_start = time.perf_counter()
            now = time.perf_counter()
            reporter.step((now - period_start) * 1e3, burst_ms=burst_ms,
                          idle_ms=(now - t_burst_end) * 1e3, matmuls=used, overruns=overruns)
    return C.EXIT_OK


if __name__ == "__main__":
    C.run_main(main)
