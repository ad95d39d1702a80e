"""Shared plumbing of gpudoc's real-job workloads (``workloads/jobs/*.py``).

The programs in this folder are ordinary PyTorch jobs of the kinds users run (image
classification with a DataLoader, a transformer language model, DDP training, an inference
server, ...), not synthetic patterns. They reuse ``workloads/_common.py`` for the ``::gpudoc``
line protocol, the exit codes and the NVLink-multicast-off environment, and add here:

* ``--cpu-smoke``: run on the CPU with tiny sizes for about 2 s (no GPU needed), so that a
  contributor without a GPU can check that a job runs (also ``GPUDOC_CPU_SMOKE=1``);
* a soft stop: the first SIGINT/SIGTERM only sets a flag, and the job stops at the end of the
  current step (``Job.check_stop``), so that collectives, DataLoader workers and checkpoints are
  never torn mid-way; the end line still says ``"stopped_by"`` and the exit code is 128+signal;
* ``GpuClock``: the GPU time of each step from CUDA events, so every job reports the share of
  wall time the GPU worked (``gpu_busy_share`` in the end line): the ground truth a diagnosis of
  its trace is checked against.

Import it first in every job (``import _jobs as J``): it puts ``workloads/`` on ``sys.path``.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from contextlib import contextmanager
from typing import Any, Iterator, Optional

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import _common as C  # noqa: E402  (needs the path above)
from _common import torch  # noqa: E402

SMOKE_DURATION_S = 2.0
SMOKE_ENV = "GPUDOC_CPU_SMOKE"


def add_job_args(parser: argparse.ArgumentParser) -> None:
    """The options every job adds to ``C.make_parser``'s ``--duration`` and ``--device``."""
    parser.add_argument("--cpu-smoke", action="store_true",
                        default=os.environ.get(SMOKE_ENV, "") not in ("", "0"),
                        help=f"run ~{SMOKE_DURATION_S:g} s on the CPU with tiny sizes (no GPU); "
                             f"also {SMOKE_ENV}=1")
    parser.add_argument("--seed", type=int, default=0, help="random seed")


def job_parser(description: str) -> argparse.ArgumentParser:
    parser = C.make_parser(description)
    add_job_args(parser)
    return parser


def smoke_scale(args: argparse.Namespace, value: float, smoke_value: float) -> float:
    """``value``, or ``smoke_value`` in a CPU smoke run."""
    return smoke_value if args.cpu_smoke else value


class Job:
    """One job's device, stop flag and reporter.

    ``Job(args, "name")`` picks the device (CUDA ``--device``, or the CPU with ``--cpu-smoke``),
    caps the duration in a smoke run, and installs the soft stop handlers.
    """

    def __init__(self, args: argparse.Namespace, name: str, cuda_index: Optional[int] = None,
                 init_context: bool = True) -> None:
        self.args = args
        self.name = name
        self.smoke = bool(args.cpu_smoke)
        if self.smoke:
            args.duration = min(args.duration, SMOKE_DURATION_S)
        self.stop_signum: Optional[int] = None
        install_soft_stop(self)
        torch.manual_seed(args.seed)
        index = args.device if cuda_index is None else cuda_index
        if self.smoke:
            self.device = torch.device("cpu")
            torch.set_num_threads(1)
        elif init_context:
            self.device = C.init_device(index)
        else:
            C.require_cuda()
            self.device = torch.device("cuda", index)

    @property
    def cuda(self) -> bool:
        return self.device.type == "cuda"

    def info(self) -> dict:
        """Identity of the device for the start line."""
        if self.cuda:
            return C.device_info(self.device)
        return {"device": "cpu", "torch": torch.__version__, "cpu_smoke": True}

    def reporter(self, params: Optional[dict] = None, fixed: Optional[dict] = None) -> C.Reporter:
        """A reporter whose start line carries ``params`` (default: every option)."""
        params = C.params_of(self.args) if params is None else params
        # The line protocol rounds floats to 3 decimals: keep small ones (a learning rate) readable.
        params = {k: (f"{v:g}" if isinstance(v, float) and 0 < abs(v) < 0.01 else v)
                  for k, v in params.items()}
        return C.Reporter(self.name, params, fixed)

    def stopping(self) -> bool:
        return self.stop_signum is not None

    def check_stop(self) -> None:
        """Raise ``C.StopRequested`` at a safe point once a stop signal has come."""
        if self.stop_signum is not None:
            raise C.StopRequested(self.stop_signum)

    def sleep(self, seconds: float) -> None:
        """Sleep up to ``seconds``, waking early for a stop signal."""
        deadline = time.perf_counter() + seconds
        while self.stop_signum is None:
            left = deadline - time.perf_counter()
            if left <= 0:
                return
            time.sleep(min(left, 0.05))

    def autocast(self) -> Any:
        """bf16 autocast on CUDA; nothing on the CPU (torch 1.13's CPU bf16 is slow)."""
        return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16,
                              enabled=self.cuda)

    def synchronize(self) -> None:
        if self.cuda:
            torch.cuda.synchronize(self.device)

    def memory_fields(self) -> dict:
        """Allocated and reserved device memory in MiB (empty on the CPU)."""
        if not self.cuda:
            return {}
        return {"allocated_mib": int(C.mib(torch.cuda.memory_allocated(self.device))),
                "reserved_mib": int(C.mib(torch.cuda.memory_reserved(self.device)))}


_SOFT_STOP_JOBS: list = []
_FIRST_STOP_AT: list = []
# Signals this soon after the first are the same request (torchrun forwards the terminal's Ctrl-C
# as a SIGTERM to workers that got the SIGINT too); a later one stops the process at once.
SAME_REQUEST_S = 5.0


def _on_soft_stop(signum: int, _frame: Any) -> None:
    now = time.monotonic()
    if not _FIRST_STOP_AT:
        _FIRST_STOP_AT.append(now)
        for job in _SOFT_STOP_JOBS:
            job.stop_signum = signum
        C.log(f"{signal.Signals(signum).name}: stopping after this step")
    elif now - _FIRST_STOP_AT[0] > SAME_REQUEST_S:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def install_soft_stop(job: Job) -> None:
    """The first SIGINT/SIGTERM sets ``job.stop_signum``; the job stops at its next check. A
    signal more than ``SAME_REQUEST_S`` seconds after the first stops the process the default
    way."""
    _SOFT_STOP_JOBS.append(job)
    signal.signal(signal.SIGINT, _on_soft_stop)
    signal.signal(signal.SIGTERM, _on_soft_stop)


def ignore_stop_signals_in_worker(_worker_id: int = 0) -> None:
    """DataLoader ``worker_init_fn``: a Ctrl-C or a SIGTERM sent to the whole process group
    must not kill the workers under the main process (the DataLoader would then fail with
    "worker killed by signal"); they leave stopping to the main process, which shuts them down
    at its next safe point (and they exit by themselves when it is gone)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


class GpuClock:
    """GPU milliseconds of each step from a pair of CUDA events (wall time on the CPU).

    ``begin()`` before a step's first kernel, ``end()`` after its last; ``collect()`` after the
    step's synchronization point returns the step's GPU milliseconds (the span from the first to
    the last kernel, so short host gaps inside a step count as busy). Totals feed
    ``busy_share(wall_s)``.
    """

    def __init__(self, job: Job) -> None:
        self.cuda = job.cuda
        self.total_ms = 0.0
        self.steps = 0
        self._t0 = 0.0
        self._t1 = 0.0
        if self.cuda:
            self._start = torch.cuda.Event(enable_timing=True)
            self._stop = torch.cuda.Event(enable_timing=True)

    def begin(self) -> None:
        if self.cuda:
            self._start.record()
        else:
            self._t0 = time.perf_counter()

    def end(self) -> None:
        if self.cuda:
            self._stop.record()
        else:
            self._t1 = time.perf_counter()

    def collect(self) -> float:
        if self.cuda:
            self._stop.synchronize()
            ms = self._start.elapsed_time(self._stop)
        else:
            ms = (self._t1 - self._t0) * 1e3
        self.total_ms += ms
        self.steps += 1
        return ms

    def busy_share(self, wall_s: float) -> Optional[float]:
        return None if wall_s <= 0 else min(1.0, self.total_ms / 1e3 / wall_s)

    def end_fields(self, wall_s: float) -> dict:
        return {"gpu_busy_ms": self.total_ms, "gpu_busy_share": self.busy_share(wall_s)}


@contextmanager
def running(reporter: "C.Reporter", clock: Optional[GpuClock] = None,
            **start_extra: Any) -> Iterator["C.Reporter"]:
    """``reporter.running``, adding the clock's ``gpu_busy_share`` to the end line (also when the
    job is stopped or fails)."""
    with reporter.running(**start_extra):
        try:
            yield reporter
        finally:
            if clock is not None:
                reporter.end_fields.update(clock.end_fields(reporter.elapsed()))


def private_dir(parent: Optional[str], prefix: str) -> str:
    """A new folder only this user can enter (``mkdtemp``, mode 0700) under ``parent`` (default:
    the system's temporary folder); the caller removes it."""
    return tempfile.mkdtemp(prefix=prefix, dir=parent)


def save_checkpoint(folder: str, step: int, state: dict) -> int:
    """``torch.save`` ``state`` to ``folder/step-N.pt`` (a new file), flush it to the disk and
    drop the previous checkpoints, as a training script that keeps the last one does. Returns
    the file's size in bytes."""
    path = os.path.join(folder, f"step-{step:08d}.pt")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "wb") as out:
        torch.save(state, out)
        out.flush()
        os.fsync(out.fileno())
    for name in os.listdir(folder):
        if name.endswith(".pt") and name != os.path.basename(path):
            os.unlink(os.path.join(folder, name))
    return os.path.getsize(path)


def timed_next(iterator: Any) -> tuple:
    """``next(iterator)`` and the milliseconds the host waited for it."""
    t = time.perf_counter()
    item = next(iterator)
    return item, (time.perf_counter() - t) * 1e3


def to_device(tensor: "torch.Tensor", device: "torch.device") -> "torch.Tensor":
    """Host to device copy that does not block when the source is pinned."""
    return tensor.to(device, non_blocking=tensor.is_pinned() if device.type == "cuda" else False)


def run(main: Any) -> None:
    """``C.run_main`` (stop signals become exit 128+signal after the end line)."""
    C.run_main(main)
