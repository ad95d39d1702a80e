"""Shared helpers for gpudoc's reference workloads.

Every workload in this folder is a small PyTorch program that produces ONE known telemetry
pattern on a real GPU, so that ``gpudoc record`` can capture it as a test fixture. They share:

* the command line: ``--duration SECONDS`` (default 20) and ``--device N`` (default 0), plus
  workload-specific options (``add_common_args`` / ``parse_args``);
* machine-readable progress on stdout, one line each, prefixed with ``::gpudoc ``:
  a start line ``{"workload": ..., "event": "start", ...params}``, step lines
  ``{"step": i, "step_ms": ...}`` at most about once per second, and an end line
  ``{"workload": ..., "event": "end", "steps": N, "elapsed_s": ...}`` (``Reporter``);
* exit codes: 0 done, 2 bad usage (argparse), 3 no usable GPU / no torch, 128+signal when
  stopped by SIGINT/SIGTERM (after printing the end line), 1 anything else;
* the multi-GPU safety variables (NVLink multicast off), set at import time so that every
  workload and every child process it starts inherits them.

Run a workload as ``python3 workloads/NAME.py``; Python then puts this folder on ``sys.path``,
which is how ``import _common`` resolves (also in ``spawn``-ed children, which receive the
parent's ``sys.path``).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, NoReturn, Optional

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_ENVIRONMENT = 3

# NVLink multicast (NVLS) must stay off on the machines these workloads run on: a program that
# uses it can put a shared host's GPUs out of service. We force the safe values (and say so if
# the environment asked for something else) before torch, NCCL or NVSHMEM can read them.
SAFE_MULTI_GPU_ENV = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}


def log(message: str) -> None:
    """Human-readable diagnostics go to stderr so that stdout stays machine-readable."""
    sys.stderr.write(f"[{os.path.basename(sys.argv[0]) or 'workload'} pid {os.getpid()}] {message}\n")
    sys.stderr.flush()


def enforce_safe_multi_gpu_env() -> None:
    """Set NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1."""
    for key, value in SAFE_MULTI_GPU_ENV.items():
        current = os.environ.get(key)
        if current is not None and current != value:
            log(f"{key}={current} overridden to {value}: NVLink multicast must stay off here")
        os.environ[key] = value


enforce_safe_multi_gpu_env()

try:
    import torch
except ImportError as _error:  # pragma: no cover - depends on the machine
    sys.stderr.write(f"gpudoc workload: PyTorch is not importable ({_error}); "
                     "run with the python3 that has torch installed\n")
    sys.exit(EXIT_ENVIRONMENT)


# --------------------------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------------------------

def _clean(value: Any) -> Any:
    """Round floats so the JSON lines stay short; map non-finite floats to null."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return round(value, 3)
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def emit(record: dict) -> None:
    """Print one ``::gpudoc {json}`` line and flush it (one write, so lines of concurrent
    processes sharing stdout do not interleave)."""
    line = "::gpudoc " + json.dumps(_clean(record)) + "\n"
    try:
        sys.stdout.write(line)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (e.g. `| head`); keep running to the end quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


class Reporter:
    """Counts steps and prints the start, step and end lines of one workload (or one worker).

    ``step(step_ms, **extra)`` may be called at any rate; a step line goes out at most about once
    per ``interval_s``, carrying the mean ``step_ms`` of the steps since the previous line, how many
    they were (``"n"``), the time since start (``"t"``), and ``extra``: float values are
    averaged over those steps, any other value (int, bool, str) is the latest one.
    ``fixed`` fields (e.g. ``{"worker": 1}``) are added to every line this reporter prints.
    """

    def __init__(self, workload: str, params: Optional[dict] = None,
                 fixed: Optional[dict] = None, interval_s: float = 1.0) -> None:
        self.workload = workload
        self.params = dict(params or {})
        self.fixed = dict(fixed or {})
        self.interval_s = interval_s
        self.steps = 0
        self.end_fields: dict = {}  # a workload may add fields for its end line here
        self.t0: Optional[float] = None
        self._last_emit = 0.0
        self._pending_n = 0
        self._pending_ms = 0.0
        self._float_sums: dict = {}
        self._latest: dict = {}

    def start(self, **extra: Any) -> None:
        """Print the start line; the workload's timed pattern begins now."""
        self.mark_start()
        emit({"workload": self.workload, "event": "start", **self.fixed, **self.params,
              **extra, "pid": os.getpid(), "time_unix": time.time()})

    def mark_start(self) -> None:
        """Start the clock without printing a start line (for workers of a workload whose
        parent prints the start line)."""
        self.t0 = time.perf_counter()
        self._last_emit = self.t0

    def elapsed(self) -> float:
        """Seconds since ``start`` (or since the first step when ``start`` was never called)."""
        if self.t0 is None:
            self.mark_start()
        return time.perf_counter() - self.t0

    def step(self, step_ms: float, **extra: Any) -> None:
        """Count one step of ``step_ms`` milliseconds; print a step line if one is due."""
        self.elapsed()  # sets t0 on first use
        self.steps += 1
        self._pending_n += 1
        self._pending_ms += step_ms
        for key, value in extra.items():
            if isinstance(value, float):
                self._float_sums[key] = self._float_sums.get(key, 0.0) + value
            else:
                self._latest[key] = value
        now = time.perf_counter()
        # 10 % slack so that steps of exactly interval_s are not skipped for a microsecond.
        if now - self._last_emit >= 0.9 * self.interval_s:
            self.flush(now)

    @property
    def pending_steps(self) -> int:
        """Steps counted since the last step line (0 right after a line went out)."""
        return self._pending_n

    def flush(self, now: Optional[float] = None) -> None:
        """Print the pending step line now (if any steps are pending)."""
        if self._pending_n == 0:
            return
        now = time.perf_counter() if now is None else now
        n = self._pending_n
        record = {"step": self.steps, **self.fixed, "step_ms": self._pending_ms / n, "n": n,
                  "t": now - (self.t0 or now)}
        for key, total in self._float_sums.items():
            record[key] = total / n
        record.update(self._latest)
        emit(record)
        self._last_emit = now
        self._pending_n = 0
        self._pending_ms = 0.0
        self._float_sums = {}
        self._latest = {}

    def end(self, **extra: Any) -> None:
        """Print the end line with the step count and the seconds since ``start``."""
        emit({"workload": self.workload, "event": "end", **self.fixed, "steps": self.steps,
              "elapsed_s": self.elapsed(), **self.end_fields, **extra,
              "time_unix": time.time()})

    @contextmanager
    def running(self, **start_extra: Any) -> Iterator["Reporter"]:
        """``with reporter.running(): loop`` prints start, then end (also on a stop signal or
        an error, which it records in the end line and re-raises)."""
        self.start(**start_extra)
        end_extra: dict = {}
        try:
            yield self
        except StopRequested as stop:
            end_extra["stopped_by"] = stop.name
            raise
        except BaseException as error:
            end_extra["error"] = f"{type(error).__name__}: {error}"[:500]
            raise
        finally:
            self.flush()
            self.end(**end_extra)


# --------------------------------------------------------------------------------------------
# Signals and the main wrapper
# --------------------------------------------------------------------------------------------

class StopRequested(Exception):
    """Raised in the main thread by the first SIGINT/SIGTERM."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.name = signal.Signals(signum).name
        super().__init__(self.name)


def _on_stop_signal(signum: int, _frame: Any) -> None:
    # A second signal kills the process the default way.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise StopRequested(signum)


def install_stop_handlers() -> None:
    """Turn the first SIGINT/SIGTERM into ``StopRequested`` so the end line still prints."""
    signal.signal(signal.SIGINT, _on_stop_signal)
    signal.signal(signal.SIGTERM, _on_stop_signal)


def run_main(main: Callable[[], Optional[int]]) -> NoReturn:
    """Run ``main`` with stop handlers installed and exit with its code (see module doc)."""
    install_stop_handlers()
    try:
        rc = main() or EXIT_OK
    except StopRequested as stop:
        log(f"stopped by {stop.name}")
        rc = 128 + stop.signum
    sys.stdout.flush()
    sys.exit(rc)


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------

def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0 or not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def positive_int(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def make_parser(description: str) -> argparse.ArgumentParser:
    """A parser with the common options ``--duration`` and ``--device``."""
    parser = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--duration", type=positive_float, default=20.0,
                        help="seconds the pattern runs (after setup)")
    parser.add_argument("--device", type=int, default=0,
                        help="CUDA device index (as torch numbers them)")
    return parser


def params_of(args: argparse.Namespace, exclude: tuple = ()) -> dict:
    """The parsed options as a dict for the start line."""
    return {k: v for k, v in vars(args).items() if k not in exclude}


# --------------------------------------------------------------------------------------------
# CUDA
# --------------------------------------------------------------------------------------------

def require_cuda(min_devices: int = 1) -> int:
    """Exit 3 with a clear message unless CUDA works and at least ``min_devices`` GPUs are
    visible. Does not create a CUDA context. Returns the number of visible devices."""
    if not torch.cuda.is_available():
        log("CUDA is not available to PyTorch (no GPU, no driver, or a CPU-only torch build); "
            f"torch {torch.__version__}, CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')!r}")
        sys.exit(EXIT_ENVIRONMENT)
    count = torch.cuda.device_count()
    if count < min_devices:
        log(f"this workload needs {min_devices} GPU(s); {count} visible")
        sys.exit(EXIT_ENVIRONMENT)
    return count


def init_device(index: int) -> "torch.device":
    """Check CUDA, select device ``index`` and create its context. Exits 3 if unusable."""
    count = require_cuda()
    if not 0 <= index < count:
        log(f"--device {index} does not exist; {count} CUDA device(s) visible")
        sys.exit(EXIT_ENVIRONMENT)
    torch.cuda.set_device(index)
    device = torch.device("cuda", index)
    torch.empty(1, device=device)  # creates the context now, not inside the timed loop
    torch.cuda.synchronize(device)
    return device


def device_info(device: "torch.device") -> dict:
    """Identity of the GPU for the start line (name, UUID and PCI address when torch has them),
    so a trace can be matched to the NVML device even if CUDA and NVML number GPUs differently."""
    info: dict = {"device": device.index}
    try:
        props = torch.cuda.get_device_properties(device)
        info["gpu"] = props.name
        uuid = getattr(props, "uuid", None)
        if uuid is not None:
            text = str(uuid)
            info["gpu_uuid"] = text if text.startswith(("GPU-", "MIG-")) else "GPU-" + text
        bus = getattr(props, "pci_bus_id", None)
        if bus is not None:
            info["pci"] = "%04x:%02x:%02x.0" % (getattr(props, "pci_domain_id", 0), bus,
                                               getattr(props, "pci_device_id", 0))
    except Exception as error:  # identity is a nicety; never fail the workload for it
        log(f"could not read device properties: {error}")
    info["torch"] = torch.__version__
    info["cuda_visible_devices"] = os.environ.get("CUDA_VISIBLE_DEVICES")
    return info


DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def make_matmul(size: int, dtype: "torch.dtype", device: "torch.device") -> Callable[[], None]:
    """Preallocate random ``size``x``size`` operands and return a function that runs one
    ``C = A @ B`` into the preallocated output (2*size**3 FLOP per call)."""
    a = torch.randn(size, size, dtype=dtype, device=device)
    b = torch.randn(size, size, dtype=dtype, device=device)
    c = torch.empty(size, size, dtype=dtype, device=device)

    def matmul() -> None:
        torch.matmul(a, b, out=c)

    return matmul


def time_gpu_ms(fn: Callable[[], None], iters: int = 10, warmup: int = 3) -> float:
    """Mean GPU milliseconds per call of ``fn``, timed with CUDA events after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    stop = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / iters


def warm_up(fn: Callable[[], None], seconds: float) -> None:
    """Run ``fn`` back to back for about ``seconds`` (cuBLAS heuristics, clocks, power settle)."""
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for _ in range(8):
            fn()
        torch.cuda.synchronize()


def run_pipelined(reporter: "Reporter", duration: float, fn: Callable[[], None], batch: int,
                  figures: Callable[[float], dict]) -> None:
    """Run ``batch`` calls of ``fn`` per step until ``duration`` s have passed, keeping the GPU
    queue non-empty: after launching a batch, wait only for the *previous* one (an event), so the
    host never leaves a gap. Each step reports its time and ``figures(step_ms)``."""
    previous = None
    last_done = time.perf_counter()
    while reporter.elapsed() < duration:
        for _ in range(batch):
            fn()
        done = torch.cuda.Event()
        done.record()
        if previous is not None:
            previous.synchronize()
            now = time.perf_counter()
            step_ms = (now - last_done) * 1e3
            last_done = now
            reporter.step(step_ms, **figures(step_ms))
        previous = done
    torch.cuda.synchronize()


def calls_for(target_ms: float, per_call_ms: float) -> int:
    """How many calls of ``per_call_ms`` fill ``target_ms`` (at least one)."""
    if per_call_ms <= 0:
        return 1
    return max(1, int(round(target_ms / per_call_ms)))


def mib(n_bytes: float) -> float:
    return n_bytes / (1 << 20)
