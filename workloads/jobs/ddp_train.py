#!/usr/bin/env python3
"""Job "ddp_train": data-parallel training (DistributedDataParallel) with one slow rank.

Launch it as users do, one process per GPU::

    torchrun --standalone --nproc_per_node=2 workloads/jobs/ddp_train.py --slow-rank 1 --slow-kind host

(run directly, ``python3 ddp_train.py`` starts ``--nproc`` ranks itself the way torchrun does;
that is also how ``--cpu-smoke`` runs two gloo ranks on a machine without GPUs). Every rank trains the same GPT-style
model on text tokenized on the fly by its own DataLoader; DDP all-reduces the gradients during
``backward`` (NCCL; gloo on the CPU), and the mean loss is all-reduced and logged every step.
NVLink multicast stays off (``NCCL_NVLS_ENABLE=0`` etc., forced by ``_common``).

``--slow-rank R`` (-1: a balanced run) makes rank R the straggler, by ``--slow-kind``:

* ``host``: after each step rank R runs ``--slow-ms`` of CPU-bound Python (metrics computed in
  a Python loop), so its GPU idles while the other ranks reach the next all-reduce and spin in
  the NCCL kernel waiting for it;
* ``input``: rank R's DataLoader is starved: ``--slow-workers`` workers and a tokenizer without
  a per-word cache (a shard of long, rare words), so it waits for every batch;
* ``checkpoint``: rank R saves the model and optimizer ``state_dict`` to disk (``torch.save``,
  fsync) every ``--ckpt-every-s`` seconds; the other ranks wait in the next all-reduce;
* ``gpu``: after each step rank R runs ``--slow-ms`` of extra GPU work (bf16 matmuls, as an
  auxiliary loss or a metric computed on the GPU would), so its GPU computes while the other ranks
  wait in the next all-reduce (a compute straggler: its GPU is the busy one).

Rank 0 prints the start and end lines; every rank prints a ``rank_start`` line (its GPU and PID)
and step lines with ``"rank"``: ``data_ms``, ``gpu_ms``, ``slow_ms`` (host work or checkpoint);
each rank's ``rank_end`` line has its ``gpu_busy_share``. Every rank stops at the same step.
"""
from __future__ import annotations

import datetime
import os
import shutil
import signal
import sys
import time
from typing import Any

import _jobs as J
from _jobs import C, torch

import _models as M
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def parse_args() -> Any:
    parser = J.job_parser(__doc__.splitlines()[0])
    parser.add_argument("--nproc", type=C.positive_int, default=2,
                        help="ranks when not started by torchrun")
    parser.add_argument("--slow-rank", type=int, default=-1, help="the straggler; -1 = balanced")
    parser.add_argument("--slow-kind", choices=("host", "input", "checkpoint", "gpu"), default="host")
    parser.add_argument("--slow-ms", type=C.positive_float, default=150.0,
                        help="host (or GPU) work per step on the slow rank (--slow-kind host|gpu)")
    parser.add_argument("--slow-workers", type=int, default=1,
                        help="DataLoader workers of the slow rank (--slow-kind input)")
    parser.add_argument("--ckpt-every-s", type=C.positive_float, default=3.0,
                        help="seconds between checkpoints on the slow rank (--slow-kind checkpoint)")
    parser.add_argument("--ckpt-dir", default=None, help="parent of the private checkpoint folder")
    parser.add_argument("--width", type=C.positive_int, default=1024)
    parser.add_argument("--layers", type=C.positive_int, default=8)
    parser.add_argument("--heads", type=C.positive_int, default=16)
    parser.add_argument("--context", type=C.positive_int, default=512)
    parser.add_argument("--batch-size", type=C.positive_int, default=16, help="per rank")
    parser.add_argument("--merges", type=C.positive_int, default=512)
    parser.add_argument("--workers", type=int, default=3, help="DataLoader workers per rank")
    parser.add_argument("--nccl-timeout-s", type=C.positive_float, default=180.0)
    args = parser.parse_args()
    if args.workers < 0 or args.slow_workers < 0:
        parser.error("--workers and --slow-workers must be >= 0")
    if args.cpu_smoke:
        args.width, args.layers, args.heads, args.context, args.batch_size = 64, 2, 4, 64, 4
        args.merges, args.workers, args.slow_workers = 64, min(args.workers, 1), min(args.slow_workers, 1)
        args.slow_ms = min(args.slow_ms, 100.0)
        args.ckpt_every_s = min(args.ckpt_every_s, 0.5)
    return args


def launch_ranks(args: Any) -> int:
    """Not started by torchrun: start ``--nproc`` ranks as torchrun would (spawned processes
    with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set) and wait for them. A stop
    signal is passed on to the ranks, which stop together at the end of a step."""
    import torch.multiprocessing as tmp
    port = _free_port()
    context = tmp.start_processes(_spawned_rank, args=(args.nproc, port, sys.argv[1:]),
                                  nprocs=args.nproc, join=False, start_method="spawn")
    try:
        while not context.join(timeout=1.0):
            pass
    except C.StopRequested as stop:
        for process in context.processes:
            if process.is_alive():
                os.kill(process.pid, stop.signum)
        for process in context.processes:
            process.join(timeout=120.0)
        raise
    except Exception as error:  # a rank failed; torch has terminated the others
        C.log(f"a rank failed: {error}")
        code = getattr(error, "exit_code", None)
        return code if code in (C.EXIT_ENVIRONMENT, 2) else C.EXIT_FAILURE
    return C.EXIT_OK


def _free_port() -> int:
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawned_rank(rank: int, world: int, port: int, argv: list) -> None:
    os.environ.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world),
                       "LOCAL_WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1",
                       "MASTER_PORT": str(port)})
    sys.argv = [os.path.abspath(__file__), *argv]
    C.enforce_safe_multi_gpu_env()
    C.install_stop_handlers()
    try:
        code = main()
    except C.StopRequested as stop:
        code = 128 + stop.signum
    sys.stdout.flush()
    sys.exit(code)


def calibrate_host_work(ms: float) -> int:
    """Iterations of ``host_work`` that take about ``ms`` milliseconds on this CPU."""
    n = 20_000
    while True:
        t = time.perf_counter()
        host_work(n)
        took = (time.perf_counter() - t) * 1e3
        if took > 20 or n > 50_000_000:
            return max(1, int(n * ms / max(took, 1e-3)))
        n *= 4


def calibrate_gpu_work(job: J.Job, ms: float) -> tuple:
    """Operands and the number of bf16 matmuls that take about ``ms`` milliseconds on this GPU."""
    size = 256 if job.smoke else 4096
    dtype = torch.float32 if job.smoke else torch.bfloat16
    a = torch.randn(size, size, device=job.device, dtype=dtype)
    b = torch.randn(size, size, device=job.device, dtype=dtype)
    c = torch.empty(size, size, device=job.device, dtype=dtype)
    n = 8
    while True:
        gpu_work((a, b, c), n)
        if job.cuda:
            torch.cuda.synchronize(job.device)
        t = time.perf_counter()
        gpu_work((a, b, c), n)
        if job.cuda:
            torch.cuda.synchronize(job.device)
        took = (time.perf_counter() - t) * 1e3
        if took > 20 or n > 1_000_000:
            return (a, b, c), max(1, int(n * ms / max(took, 1e-3)))
        n *= 4


def gpu_work(operands: tuple, n: int) -> None:
    """``n`` matmuls on the GPU, queued (the host does not wait for them)."""
    a, b, c = operands
    for _ in range(n):
        torch.matmul(a, b, out=c)


def host_work(n: int) -> float:
    """CPU-bound Python: running statistics over a stream of values, as hand-written metrics
    code does."""
    mean = 0.0
    m2 = 0.0
    for i in range(1, n + 1):
        x = (i * 2654435761 % 1000) / 1000.0
        delta = x - mean
        mean += delta / i
        m2 += delta * (x - mean)
    return m2 / n


def make_loader(args: Any, rank: int, slow: bool) -> Any:
    starved = slow and args.slow_kind == "input"
    tokenizer = M.train_tokenizer(args.merges, cache=not starved,
                                  chars=20_000 if args.cpu_smoke else 60_000)
    workers = args.slow_workers if starved else args.workers
    stream = M.TokenStream(tokenizer, args.context, seed=args.seed * 100 + rank + 1)
    loader = torch.utils.data.DataLoader(
        stream, batch_size=args.batch_size, num_workers=workers, pin_memory=not args.cpu_smoke,
        worker_init_fn=J.ignore_stop_signals_in_worker if workers > 0 else None)
    return iter(loader), tokenizer.vocab_size


def main() -> int:
    args = parse_args()
    if "LOCAL_RANK" not in os.environ:
        return launch_ranks(args)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])
    if world < 2:
        C.log(f"ddp_train needs at least 2 ranks; WORLD_SIZE={world}")
        return C.EXIT_ENVIRONMENT
    if args.slow_rank >= world:
        C.log(f"--slow-rank {args.slow_rank} >= world size {world}")
        return 2
    if not args.cpu_smoke and C.require_cuda() < args.device + local_rank + 1:
        C.log(f"rank {rank} needs GPU {args.device + local_rank}; "
              f"{torch.cuda.device_count()} visible")
        return C.EXIT_ENVIRONMENT
    job = J.Job(args, "ddp_train", cuda_index=args.device + local_rank)
    backend = "nccl" if job.cuda else "gloo"
    dist.init_process_group(backend=backend, init_method="env://", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=args.nccl_timeout_s))
    try:
        train(args, job, rank, world)
    finally:
        dist.destroy_process_group()
    return C.EXIT_OK


def train(args: Any, job: J.Job, rank: int, world: int) -> None:
    t_setup = time.perf_counter()
    slow = rank == args.slow_rank
    loader, vocab = make_loader(args, rank, slow)
    torch.manual_seed(args.seed)  # the same initial weights on every rank
    model = M.TransformerLM(vocab, args.width, args.layers, args.heads, args.context).to(job.device)
    ddp = DistributedDataParallel(model, device_ids=[job.device.index] if job.cuda else None)
    optimizer = M.make_adamw(ddp)
    host_iters = calibrate_host_work(args.slow_ms) if slow and args.slow_kind == "host" else 0
    gpu_extra = calibrate_gpu_work(job, args.slow_ms) if slow and args.slow_kind == "gpu" else None
    ckpt_dir = None
    if slow and args.slow_kind == "checkpoint":
        ckpt_dir = J.private_dir(args.ckpt_dir, "gpudoc-ddp-ckpt-")
    sync = torch.zeros(2, device=job.device)  # [loss sum, stop flag]

    def train_step(tokens: "torch.Tensor", stop: bool) -> tuple:
        with job.autocast():
            loss, _ = model_loss(ddp, tokens)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # DDP all-reduces the gradients here
        optimizer.step()
        sync[0] = loss.detach().float()
        sync[1] = 1.0 if stop else 0.0
        dist.all_reduce(sync)
        return sync[0] / world, sync[1]

    warm = torch.randint(0, vocab, (args.batch_size, args.context + 1), device=job.device)
    for _ in range(1 if job.smoke else 3):  # NCCL connects lazily; keep it out of the pattern
        train_step(warm, False)[1].item()
    if job.cuda:
        dist.barrier(device_ids=[job.device.index])
    else:
        dist.barrier()

    clock = J.GpuClock(job)
    reporter = job.reporter(fixed={"rank": rank})
    info = {**job.info(), "rank": rank, "world_size": world, "slow": slow,
            "setup_s": time.perf_counter() - t_setup, "parameters": M.parameter_count(model),
            "host_work_iterations": host_iters,
            "gpu_work_matmuls": gpu_extra[1] if gpu_extra else 0,
            "nccl_nvls_enable": os.environ.get("NCCL_NVLS_ENABLE")}
    try:
        run_steps(args, job, rank, reporter, clock, info, loader, train_step, (host_iters, gpu_extra),
                  ckpt_dir, (ddp, optimizer))
    finally:
        if ckpt_dir is not None:
            shutil.rmtree(ckpt_dir, ignore_errors=True)


def model_loss(ddp: Any, tokens: "torch.Tensor") -> tuple:
    """The LM loss through the DDP wrapper (so that its backward hooks all-reduce)."""
    logits = ddp(tokens[:, :-1])
    loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                                             tokens[:, 1:].reshape(-1))
    return loss, logits


def run_steps(args: Any, job: J.Job, rank: int, reporter: C.Reporter, clock: J.GpuClock,
              info: dict, loader: Any, train_step: Any, extra: tuple, ckpt_dir: Any,
              state: tuple) -> None:
    """The timed loop of one rank; every rank leaves it at the same step. ``extra``: the host
    work iterations and the (operands, matmuls) of GPU work of a slow rank."""
    host_iters, gpu_extra = extra
    if rank == 0:
        reporter.start(**info)
    else:
        reporter.mark_start()
        C.emit({"workload": "ddp_train", "event": "rank_start", "pid": os.getpid(), **info})
    last = time.perf_counter()
    last_ckpt = last
    stopped = False
    try:
        while True:
            tokens, data_ms = J.timed_next(loader)
            clock.begin()
            time_up = reporter.elapsed() >= args.duration or job.stopping()
            loss, stop = train_step(J.to_device(tokens, job.device), time_up)
            clock.end()
            loss_value, stop_value = loss.item(), stop.item()
            gpu_ms = clock.collect()
            slow_ms = 0.0
            if host_iters:
                t = time.perf_counter()
                host_work(host_iters)
                slow_ms = (time.perf_counter() - t) * 1e3
            elif gpu_extra is not None:
                gpu_work(*gpu_extra)  # queued: the next step's all-reduce waits for it
                slow_ms = args.slow_ms
            elif ckpt_dir is not None and time.perf_counter() - last_ckpt >= args.ckpt_every_s:
                t = time.perf_counter()
                ddp, optimizer = state
                J.save_checkpoint(ckpt_dir, reporter.steps,
                                  {"model": ddp.module.state_dict(), "optimizer": optimizer.state_dict()})
                last_ckpt = time.perf_counter()
                slow_ms = (last_ckpt - t) * 1e3
            now = time.perf_counter()
            reporter.step((now - last) * 1e3, data_ms=data_ms, gpu_ms=gpu_ms, slow_ms=slow_ms,
                          loss=loss_value)
            last = now
            if stop_value > 0.5:
                break
    finally:
        reporter.flush()
        end = {"stopped_by": signal.Signals(job.stop_signum).name} if job.stopping() else {}
        fields = {**clock.end_fields(reporter.elapsed()), **end}
        if rank == 0:
            reporter.end_fields.update(fields)
            reporter.end()
        else:
            C.emit({"workload": "ddp_train", "event": "rank_end", "rank": rank,
                    "steps": reporter.steps, **fields})
        stopped = job.stopping()
    if stopped:
        job.check_stop()


if __name__ == "__main__":
    J.run(main)
