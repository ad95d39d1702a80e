#!/usr/bin/env python3
"""PyTorch's NCCL collectives, measured the way gpudoc's nccl.* benchmarks are, for comparison.

tools/compare_with_pytorch.py runs it with two or more GPUs; alone, one process per GPU:
    python3 -m torch.distributed.run --standalone --nproc-per-node=N tools/pytorch/collectives.py --out torch.json

For each collective (all_reduce, all_gather, reduce_scatter) and size S (bytes, nccl-tests' size
convention: all_reduce the whole buffer, all_gather the gathered output, reduce_scatter the whole
input), float32: `--warmup` untimed calls, then `--reps` samples of `--iters` back-to-back calls
between two CUDA events on each rank; a sample is the slowest rank's event time / iters (an
all_reduce MAX of the per-rank times). Reported: median time, algbw = S / t, and busbw = algbw x
2(n-1)/n (all_reduce) or x (n-1)/n (all_gather, reduce_scatter), as nccl-tests' PERFORMANCE.md.
PyTorch's all_reduce is in place (nccl-tests and gpudoc time out-of-place); inputs are zeros so
repeated sums stay finite. A correctness check (all_reduce of rank+1) runs first.
"""
import argparse
import json
import os
import statistics

import torch
import torch.distributed as dist

MiB = 1 << 20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--sizes", default=f"{64 << 10},{1 * MiB},{16 * MiB},{128 * MiB},{1024 * MiB}",
                    help="comma-separated sizes in bytes")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()

    # NVLink multicast stays off, however this was started: on a shared machine a program using it
    # can take the host's GPUs out of service. NCCL reads these when the process group starts.
    os.environ.update(NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1")
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("nccl", device_id=dev)
    rank, n = dist.get_rank(), dist.get_world_size()

    # Correctness before timing: the sum of (rank + 1) over ranks.
    x = torch.full((1 << 20,), float(rank + 1), device=dev)
    dist.all_reduce(x)
    want = n * (n + 1) / 2
    ok = bool(torch.all(x == want).item())

    factor = {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n, "reduce_scatter": (n - 1) / n}
    results = []
    for coll in ("all_reduce", "all_gather", "reduce_scatter"):
        for size in (int(s) for s in args.sizes.split(",")):
            if coll == "all_reduce":
                count = size // 4
                buf = torch.zeros(count, device=dev)
                fn = lambda: dist.all_reduce(buf)  # noqa: E731
                nbytes = count * 4
            elif coll == "all_gather":
                per = size // (4 * n)
                send = torch.zeros(per, device=dev)
                recv = torch.empty(per * n, device=dev)
                fn = lambda: dist.all_gather_into_tensor(recv, send)  # noqa: E731
                nbytes = per * n * 4
            else:
                per = size // (4 * n)
                send = torch.zeros(per * n, device=dev)
                recv = torch.empty(per, device=dev)
                fn = lambda: dist.reduce_scatter_tensor(recv, send)  # noqa: E731
                nbytes = per * n * 4
            if nbytes == 0:
                continue
            for _ in range(args.warmup):
                fn()
            torch.cuda.synchronize()
            dist.barrier(device_ids=[local])
            samples = []
            for _ in range(args.reps):
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(args.iters):
                    fn()
                end.record()
                end.synchronize()
                t = torch.tensor([start.elapsed_time(end) / 1e3 / args.iters], device=dev, dtype=torch.float64)
                dist.all_reduce(t, op=dist.ReduceOp.MAX)
                samples.append(t.item())
            med = statistics.median(samples)
            algbw = nbytes / med / 1e9
            results.append({"collective": coll, "bytes": nbytes, "time_us": med * 1e6, "algbw_gb_per_s": algbw,
                            "busbw_gb_per_s": algbw * factor[coll], "time_us_samples": [s * 1e6 for s in samples]})
            if rank == 0:
                print(f"torch {coll:14s} {nbytes:>12d} B  {med * 1e6:10.1f} us  algbw {algbw:8.2f}  "
                      f"busbw {algbw * factor[coll]:8.2f} GB/s", flush=True)
            del fn
            torch.cuda.empty_cache()

    if rank == 0:
        nccl = torch.cuda.nccl.version()
        out = {"torch_version": torch.__version__, "nccl_version": ".".join(str(v) for v in nccl) if isinstance(nccl, tuple) else str(nccl),
               "world_size": n, "gpu": torch.cuda.get_device_name(dev), "allreduce_check_ok": ok,
               "env": {k: os.environ.get(k) for k in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS")},
               "warmup": args.warmup, "iters": args.iters, "reps": args.reps, "results": results}
        with open(args.out, "w") as f:
            json.dump(out, f, indent=2)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
