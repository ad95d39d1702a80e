#!/usr/bin/env python3
"""Reference workload "allreduce_straggler": data-parallel steps across GPUs where one rank is
slow, so the others wait for it inside NCCL (the "pulse" / straggler pattern).

One process per GPU (``torch.multiprocessing``, spawn; NCCL backend; rendezvous through a TCP
store on 127.0.0.1 at a free port). Every step, on every rank: bf16 matmuls for about
``--compute-ms`` (default 50 ms), then ``dist.all_reduce`` (average) of a ``--allreduce-mib``
(default 256 MiB) fp32 tensor, then a host synchronize. The rank ``--slow-rank`` (default 1;
-1 = none, balanced) adds ``--slow-ms`` (default 150 ms) per step before its all-reduce:

* ``--slow-kind compute`` (default): more matmuls. The slow rank's GPU reads ~100 %
  utilization with high SM and tensor activity; each fast rank finishes its compute and then
  spins in the NCCL kernel for ~``--slow-ms``: its utilization still reads ~100 %, but SM
  activity is low (a few channels' worth of SMs), tensor activity 0, DRAM ~0 while it waits.
* ``--slow-kind sleep``: the slow rank synchronizes and its host sleeps (a slow data loader or
  a CPU-side stall on one node). The slow rank's GPU then reads low utilization during the
  sleep, while the fast ranks spin in NCCL as above.
* balanced (``--slow-rank -1``): all ranks compute ~50 ms and meet in a short all-reduce;
  utilization ~100 % everywhere with brief NVLink bursts each step.

NVLink multicast (NVLS) stays off: ``NCCL_NVLS_ENABLE=0``, ``TORCH_SYMM_MEM_DISABLE_MULTICAST=1``
and ``NVSHMEM_DISABLE_NVLS=1`` are forced in the environment before anything starts.

``--device`` is the first GPU: rank r uses GPU ``device + r``. ``--world-size`` defaults to every
visible GPU from there on; at least 2 are needed (exit 3 otherwise). Every rank stops at the same
step: each step ends with a tiny all-reduce (MAX) of the ranks' "my time is up" flags.
Rank 0 prints the start and end lines; every rank prints step lines with ``"rank"``, including
the GPU-timed split of a step: ``compute_ms``, ``slow_ms`` and ``allreduce_ms`` (wait + transfer).
"""
from __future__ import annotations

import datetime
import os
import socket
import sys
import time

import _common as C
from _common import torch

import torch.distributed as dist
import torch.multiprocessing as tmp

WARMUP_STEPS = 3


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_main(rank: int, args: dict) -> None:
    """One rank: init NCCL on GPU ``device + rank``, warm up, run steps, shut down cleanly."""
    C.enforce_safe_multi_gpu_env()
    world = args["world_size"]
    device = C.init_device(args["device"] + rank)
    dist.init_process_group(
        backend="nccl", init_method=f"tcp://127.0.0.1:{args['port']}", rank=rank,
        world_size=world, timeout=datetime.timedelta(seconds=args["nccl_timeout_s"]),
        device_id=device)
    try:
        _run_rank(rank, world, device, args)
    finally:
        dist.destroy_process_group()


def _run_rank(rank: int, world: int, device: "torch.device", args: dict) -> None:
    matmul = C.make_matmul(args["size"], torch.bfloat16, device)
    C.warm_up(matmul, 0.5)
    per_call_ms = C.time_gpu_ms(matmul, iters=20)
    compute_calls = C.calls_for(args["compute_ms"], per_call_ms)
    is_slow = rank == args["slow_rank"]
    slow_kind = args["slow_kind"]
    slow_calls = 0
    if is_slow and slow_kind == "compute" and args["slow_ms"] > 0:
        slow_calls = C.calls_for(args["slow_ms"], per_call_ms)

    grad = torch.randn(args["allreduce_mib"] * (1 << 20) // 4, dtype=torch.float32, device=device)
    flag = torch.ones(1, dtype=torch.float32, device=device)
    marks = [torch.cuda.Event(enable_timing=True) for _ in range(4)]

    def one_step(time_is_up: bool) -> bool:
        """One step; True when any rank's time is up (the same answer on every rank)."""
        marks[0].record()
        for _ in range(compute_calls):
            matmul()
        marks[1].record()
        if is_slow and args["slow_ms"] > 0:
            if slow_kind == "compute":
                for _ in range(slow_calls):
                    matmul()
            else:
                torch.cuda.synchronize(device)
                time.sleep(args["slow_ms"] / 1e3)
        marks[2].record()
        dist.all_reduce(grad, op=dist.ReduceOp.AVG)
        marks[3].record()
        flag.fill_(1.0 if time_is_up else 0.0)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return flag.item() > 0.5  # synchronizes the host with this step

    for _ in range(WARMUP_STEPS):  # NCCL connects lazily; keep that out of the pattern
        one_step(False)
    dist.barrier(device_ids=[device.index])
    torch.cuda.synchronize(device)

    params = {k: v for k, v in args.items() if k not in ("port", "nccl_timeout_s")}
    reporter = C.Reporter("allreduce_straggler", params, fixed={"rank": rank})
    info = {**C.device_info(device), "matmul_ms": per_call_ms, "compute_matmuls": compute_calls,
            "slow_matmuls": slow_calls, "nccl_nvls_enable": os.environ.get("NCCL_NVLS_ENABLE")}
    if rank == 0:
        reporter.start(**info)
    else:
        reporter.mark_start()
        C.emit({"workload": "allreduce_straggler", "event": "rank_start", "rank": rank,
                "pid": os.getpid(), **info})
    last = time.perf_counter()
    while True:
        stop = one_step(reporter.elapsed() >= args["duration"])
        now = time.perf_counter()
        reporter.step((now - last) * 1e3,
                      compute_ms=marks[0].elapsed_time(marks[1]),
                      slow_ms=marks[1].elapsed_time(marks[2]),
                      allreduce_ms=marks[2].elapsed_time(marks[3]))
        last = now
        if stop:
            break
    reporter.flush()
    if rank == 0:
        reporter.end()


def main() -> int:
    parser = C.make_parser(__doc__.splitlines()[0])
    parser.add_argument("--world-size", type=int, default=0,
                        help="ranks (one GPU each); 0 = every visible GPU from --device on")
    parser.add_argument("--slow-rank", type=int, default=1, help="the straggler; -1 = balanced")
    parser.add_argument("--slow-kind", choices=("compute", "sleep"), default="compute")
    parser.add_argument("--slow-ms", type=float, default=150.0,
                        help="extra time per step on the slow rank")
    parser.add_argument("--compute-ms", type=C.positive_float, default=50.0,
                        help="matmul time per step on every rank")
    parser.add_argument("--allreduce-mib", type=C.positive_int, default=256,
                        help="size of the all-reduced fp32 tensor")
    parser.add_argument("--size", type=C.positive_int, default=8192, help="matrix side")
    parser.add_argument("--nccl-timeout-s", type=C.positive_float, default=120.0,
                        help="abort a collective stuck this long")
    args = parser.parse_args()
    if args.slow_ms < 0:
        parser.error("--slow-ms must be >= 0")

    count = C.require_cuda()
    world = args.world_size or (count - args.device)
    if world < 2 or args.device < 0 or args.device + world > count:
        C.log(f"needs at least 2 GPUs from --device {args.device} on "
              f"(world size {world}); {count} visible")
        return C.EXIT_ENVIRONMENT
    if not dist.is_available() or not dist.is_nccl_available():
        C.log("this torch build has no NCCL backend")
        return C.EXIT_ENVIRONMENT
    if args.slow_rank >= world:
        parser.error(f"--slow-rank {args.slow_rank} >= world size {world}")

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    port = _free_port()
    os.environ["MASTER_PORT"] = str(port)
    rank_args = {"duration": args.duration, "device": args.device, "world_size": world,
                 "slow_rank": args.slow_rank, "slow_kind": args.slow_kind,
                 "slow_ms": args.slow_ms if args.slow_rank >= 0 else 0.0,
                 "compute_ms": args.compute_ms, "allreduce_mib": args.allreduce_mib,
                 "size": args.size, "port": port, "nccl_timeout_s": args.nccl_timeout_s}

    context = tmp.start_processes(_rank_main, args=(rank_args,), nprocs=world, join=False,
                                  start_method="spawn")
    try:
        while not context.join(timeout=1.0):
            pass
    except C.StopRequested:
        raise
    except Exception as error:  # a rank failed; torch has terminated the others
        C.log(f"a rank failed: {error}")
        if getattr(error, "exit_code", None) == C.EXIT_ENVIRONMENT:
            return C.EXIT_ENVIRONMENT
        return C.EXIT_FAILURE
    finally:
        for process in context.processes:
            if process.is_alive():
                process.terminate()
        for process in context.processes:
            process.join(timeout=10.0)
    return C.EXIT_OK


if __name__ == "__main__":
    C.run_main(main)
