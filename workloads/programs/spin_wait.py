"""A worker whose GPU spins while it waits.

Each step the worker waits on the device for the next piece of work with a spin-wait kernel
(one thread polling the SM clock, ``torch.cuda._sleep``, the spin kernel PyTorch itself uses to
hold a stream), the way persistent kernels and device-side flags wait, then does a short piece of
real work (bf16 matmuls). The GPU is never idle: a kernel is always running, but for most of the
time it is one thread on one SM.

    python3 spin_wait.py --duration 15 --wait-ms 45 --work-ms 5
"""
import argparse
import os
import time

import torch

from _truth import Truth


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=15.0, help="seconds to run")
    parser.add_argument("--wait-ms", type=float, default=45.0, help="spin per step")
    parser.add_argument("--work-ms", type=float, default=5.0, help="real work per step")
    parser.add_argument("--size", type=int, default=4096, help="matmul size of the work")
    parser.add_argument("--cpu-smoke", action="store_true",
                        default=os.environ.get("GPUDOC_CPU_SMOKE", "") not in ("", "0"),
                        help="tiny sizes on the CPU for ~2 s")
    args = parser.parse_args()
    if args.cpu_smoke:
        args.duration, args.size = min(args.duration, 2.0), 64
        device = torch.device("cpu")
    else:
        device = torch.device("cuda")
    torch.manual_seed(0)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    a = torch.randn(args.size, args.size, device=device, dtype=dtype)
    b = torch.randn(args.size, args.size, device=device, dtype=dtype)

    if device.type == "cuda":
        # how many clock cycles make a millisecond, and how long one matmul takes
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1_000_000)
        start.record()
        torch.cuda._sleep(10_000_000)
        stop.record()
        stop.synchronize()
        cycles_per_ms = 10_000_000 / start.elapsed_time(stop)
        for _ in range(3):
            a @ b
        start.record()
        for _ in range(10):
            a @ b
        stop.record()
        stop.synchronize()
        matmul_ms = start.elapsed_time(stop) / 10

        def spin(ms):
            torch.cuda._sleep(int(ms * cycles_per_ms))
    else:
        cycles_per_ms, matmul_ms = 0.0, 0.05

        def spin(ms):
            time.sleep(ms / 1e3)
    matmuls = max(1, round(args.work_ms / matmul_ms))
    print(f"spin {args.wait_ms} ms then {matmuls} matmuls of {args.size} per step", flush=True)

    truth = Truth("spin_wait", vars(args), device)
    truth.value("cycles_per_ms", cycles_per_ms)
    truth.value("matmul_ms", matmul_ms)
    truth.value("matmuls_per_step", matmuls)

    step = 0
    start_t = time.time()
    truth.start()
    while time.time() - start_t < args.duration:
        truth.begin("gpu")
        truth.begin("spin")
        spin(args.wait_ms)
        truth.end("spin")
        truth.begin("work")
        for _ in range(matmuls):
            c = a @ b
        truth.end("work")
        truth.end("gpu")
        total = float(c[0, 0])
        step += 1
        truth.step()
        if step % 20 == 0:
            print(f"step {step} checksum {total:.3f} "
                  f"({(time.time() - start_t) / step * 1e3:.1f} ms/step)", flush=True)
    truth.stop()
    print(f"done: {step} steps in {time.time() - start_t:.1f} s", flush=True)


if __name__ == "__main__":
    main()
