"""Ground truth of a program's run, written only when ``GPUDOC_TRUTH_FILE`` is set.

The programs in this folder are written the way people write training and inference loops;
they know nothing of gpudoc. To judge a diagnosis of their telemetry we still need to know what
the GPU really did, so each program creates one ``Truth`` and marks its loop with it. With
``GPUDOC_TRUTH_FILE`` unset every method does nothing (no CUDA call, no event, no timer): the
program is then exactly the plain loop. With it set, the program writes one JSON object to that
path when it ends:

``{"program", "params", "device", "torch", "steps", "loop_wall_s", "gpu_busy_ms",
"gpu_busy_share", "spans": {NAME: {"total_ms", "count", "mean_ms", "share"}},
"host": {NAME: {"total_ms", "count", "mean_ms", "share"}}, "values": {...}, "method"}``

How the GPU time is measured (``Truth.span``): a pair of CUDA events with timing, the start
recorded on the current stream just before the first kernel of the GPU part of a step and the
stop just after its last; ``elapsed_time`` of the pair is that part's GPU milliseconds. The
pairs are read without adding a synchronisation: each is read once its stop event has completed
(``Event.query``, non-blocking), which is at the latest at the step's own sync point
(``loss.item()``, a ``.cpu()``, ``torch.cuda.synchronize``) or at the end of the run. So the
program keeps its own sync structure, the way ``workloads/jobs/_jobs.py``'s ``GpuClock`` reads
its pairs after the step's sync.

What it measures, and its bias:

* the span from the start event to the stop event on the stream. If the host launches slower
  than the GPU runs (launch-bound loops, Python between kernels, a pageable copy waited for
  inside the span), the GPU idles *inside* the span and that idle time counts as busy: the share
  is an upper bound of the time a kernel ran (what NVML's utilization counts). Programs where
  this matters measure the kernels alone too (e.g. a CUDA-graph replay of the same work at
  start-up: ``values["gpu_exec_ms_per_request"]``);
* the gaps *between* spans (waiting for data, a CPU optimizer, a sleep, the host launching the
  next step after a sync) count as idle, which is what the diagnosis must find;
* a span that queues behind the previous step's kernels starts when the stream reaches it, so
  back-to-back spans tile without overlap; spans on one stream never count twice.

Because of that bias, a second, independent figure comes from the kernels themselves: over the
last ``PROFILE_WINDOW_S`` seconds of the loop (from ``--duration`` minus that, read from the
program's parameters) ``torch.profiler`` records the CUDA activity (CUPTI); the union of the
kernels' intervals over that window's wall time is ``kernel_busy_share`` (what NVML's
utilization counts: the share of time a kernel runs), with ``kernel_ms_per_step``,
``kernels_per_step`` and ``memcpy_share`` (copies are not kernels) under ``"kernels"``. The
profiler is initialised once before the loop (CUPTI's start-up takes seconds) and its events are
read after the loop, so the loop sees no stall; while it records, each launch costs the host a
little more, so in launch-bound loops this share is a slight underestimate. It covers one window,
not the whole run (absent when the loop ends before it).

``gpu_busy_share`` = the ``"gpu"`` span's total ÷ the loop's wall time (``loop_wall_s``, from
``start()`` to ``stop()``). Other spans (e.g. ``"copy"``) and host timers (``host("cpu_adam")``:
``time.perf_counter`` around CPU work) are reported beside it with their share of the wall time.
On the CPU (``--cpu-smoke``) spans use ``time.perf_counter`` instead of events.
"""
from __future__ import annotations

import atexit
import json
import os
import sys
import time
from collections import deque
from contextlib import contextmanager
from typing import Any, Iterator, Optional

ENV = "GPUDOC_TRUTH_FILE"
# Unread event pairs kept at most; beyond it the oldest is read blocking (never reached by a loop
# that syncs at least every few thousand steps).
MAX_PENDING = 4096
# Seconds of whole steps whose kernels torch.profiler records.
PROFILE_WINDOW_S = 1.0


class _Span:
    """One named GPU span: pairs of timing events, summed once they have completed."""

    def __init__(self, torch_mod: Any, on_gpu: bool) -> None:
        self.torch = torch_mod
        self.on_gpu = on_gpu
        self.total_ms = 0.0
        self.count = 0
        self._pending: deque = deque()
        self._pool: list = []
        self._open: Optional[Any] = None
        self._t0 = 0.0

    def _event(self) -> Any:
        return self._pool.pop() if self._pool else self.torch.cuda.Event(enable_timing=True)

    def begin(self) -> None:
        if self.on_gpu:
            self.poll()
            self._open = self._event()
            self._open.record()
        else:
            self._t0 = time.perf_counter()

    def end(self) -> None:
        if self.on_gpu:
            if self._open is None:
                return
            stop = self._event()
            stop.record()
            self._pending.append((self._open, stop))
            self._open = None
            if len(self._pending) > MAX_PENDING:
                self._read(*self._pending.popleft(), block=True)
        else:
            self.total_ms += (time.perf_counter() - self._t0) * 1e3
            self.count += 1

    def _read(self, start: Any, stop: Any, block: bool) -> None:
        if block:
            stop.synchronize()
        self.total_ms += start.elapsed_time(stop)
        self.count += 1
        self._pool += [start, stop]

    def poll(self) -> None:
        """Sum every pair whose stop has completed (non-blocking)."""
        while self._pending and self._pending[0][1].query():
            self._read(*self._pending.popleft(), block=False)

    def drain(self) -> None:
        while self._pending:
            self._read(*self._pending.popleft(), block=True)


class Truth:
    """The run's ground truth; inert unless ``GPUDOC_TRUTH_FILE`` is set.

    ``truth = Truth("name", vars(args), device)``; ``truth.start()`` when the loop starts;
    ``with truth.span("gpu"):`` around the GPU part of each step (or ``truth.begin("gpu")`` /
    ``truth.end("gpu")``); ``with truth.host("cpu_adam"):`` around host work worth naming;
    ``truth.step()`` once per step; ``truth.value(k, v)`` / ``truth.add(k, n)`` for figures that
    define the truth; ``truth.stop()`` when the loop ends (writes the file; also at exit).
    """

    def __init__(self, program: str, params: dict, device: Any = None) -> None:
        self.path = os.environ.get(ENV, "")
        self.enabled = bool(self.path)
        self.program = program
        if not self.enabled:
            return
        import torch  # the program has imported it already
        self.torch = torch
        self.params = {k: v for k, v in params.items() if _jsonable(v)}
        self.device = device
        self.on_gpu = device is not None and getattr(device, "type", str(device)) == "cuda"
        self.spans: dict = {}
        self.hosts: dict = {}
        self.values: dict = {}
        self.steps = 0
        self.t_start: Optional[float] = None
        self.t_stop: Optional[float] = None
        self.written = False
        duration = params.get("duration")
        self.profile_at_s = (max(0.0, float(duration) - PROFILE_WINDOW_S)
                             if isinstance(duration, (int, float)) else None)
        self._prof: Any = None
        self._prof_wall_us = 0.0
        self._prof_steps = 0
        self._prof_t0 = 0.0
        self._prof_steps0 = 0
        self.kernels: Optional[dict] = None
        if self.on_gpu and self.profile_at_s is not None:
            self._init_profiler()
        atexit.register(self._at_exit)

    # -- spans -------------------------------------------------------------------------------
    def _span(self, name: str) -> Any:
        span = self.spans.get(name)
        if span is None:
            span = self.spans[name] = _Span(self.torch, self.on_gpu)
        return span

    def begin(self, name: str = "gpu") -> None:
        if self.enabled and self.t_start is not None and self.t_stop is None:
            self._span(name).begin()

    def end(self, name: str = "gpu") -> None:
        if self.enabled and name in self.spans:
            self.spans[name].end()

    @contextmanager
    def span(self, name: str = "gpu") -> Iterator[None]:
        self.begin(name)
        try:
            yield
        finally:
            self.end(name)

    @contextmanager
    def host(self, name: str) -> Iterator[None]:
        if not self.enabled or self.t_start is None:
            yield
            return
        t = time.perf_counter()
        try:
            yield
        finally:
            total, count = self.hosts.get(name, (0.0, 0))
            self.hosts[name] = (total + (time.perf_counter() - t) * 1e3, count + 1)

    # -- counters ----------------------------------------------------------------------------
    def start(self) -> None:
        if self.enabled:
            self.t_start = time.perf_counter()

    def _init_profiler(self) -> None:
        """Start and stop the profiler once at construction (before the loop), so that CUPTI's start-up (seconds)
        does not stall the loop when the window opens."""
        try:
            from torch.profiler import ProfilerActivity, profile
            with profile(activities=[ProfilerActivity.CUDA]):
                self.torch.zeros(1, device=self.device).add_(1)
                self.torch.cuda.synchronize()
        except Exception as err:  # a build without Kineto/CUPTI: no kernel figures
            self.kernels = {"error": repr(err)}

    def step(self, n: int = 1) -> None:
        if self.enabled:
            self.steps += n
            if self.on_gpu and self.kernels is None and self.t_start is not None:
                self._profile_window()

    # -- the kernels of one window (torch.profiler, CUDA activity only) ----------------------
    def _profile_window(self) -> None:
        now = time.perf_counter()
        elapsed = now - self.t_start
        if self._prof is None:
            if self.profile_at_s is None or elapsed < self.profile_at_s:
                return
            try:
                from torch.profiler import ProfilerActivity, profile
                self.torch.cuda.synchronize()
                self._prof = profile(activities=[ProfilerActivity.CUDA])
                self._prof.__enter__()
            except Exception as err:  # a build without Kineto/CUPTI: no kernel figures
                self.kernels = {"error": repr(err)}
                self._prof = None
                return
            self._prof_t0 = time.perf_counter()
            self._prof_steps0 = self.steps

    def _close_window(self) -> None:
        """At the end of the loop (the GPU synchronised): the window's wall time and steps."""
        if self._prof is not None:
            self._prof_wall_us = (time.perf_counter() - self._prof_t0) * 1e6
            self._prof_steps = self.steps - self._prof_steps0

    def _finish_profile(self) -> None:
        """After the loop: stop the profiler and read its kernels."""
        prof, self._prof = self._prof, None
        if prof is None:
            return
        try:
            wall_us, steps = self._prof_wall_us, self._prof_steps
            prof.__exit__(None, None, None)
            import tempfile
            fd, path = tempfile.mkstemp(suffix=".json")
            os.close(fd)
            try:
                prof.export_chrome_trace(path)
                with open(path) as src:
                    events = json.load(src).get("traceEvents", [])
            finally:
                os.unlink(path)
            kernels = [(e["ts"], e["ts"] + e.get("dur", 0)) for e in events
                       if e.get("ph") == "X" and e.get("cat") == "kernel"]
            copies = [(e["ts"], e["ts"] + e.get("dur", 0)) for e in events
                      if e.get("ph") == "X" and e.get("cat") == "gpu_memcpy"]
            busy_us = _union_us(kernels)
            self.kernels = {
                "window_s": round(wall_us / 1e6, 4),
                "window_steps": steps,
                "kernels": len(kernels),
                "kernels_per_step": round(len(kernels) / steps, 2) if steps else None,
                "kernel_ms": round(busy_us / 1e3, 3),
                "kernel_ms_per_step": round(busy_us / 1e3 / steps, 4) if steps else None,
                "kernel_busy_share": round(min(1.0, busy_us / wall_us), 4) if wall_us else None,
                "memcpy_share": round(min(1.0, _union_us(copies) / wall_us), 4) if wall_us else None,
            }
        except Exception as err:
            self.kernels = {"error": repr(err)}

    def value(self, key: str, value: Any) -> None:
        if self.enabled:
            self.values[key] = value

    def add(self, key: str, amount: float) -> None:
        if self.enabled:
            self.values[key] = self.values.get(key, 0) + amount

    def elapsed(self) -> float:
        """Seconds since ``start()`` (0 when inert)."""
        if not self.enabled or self.t_start is None:
            return 0.0
        return (self.t_stop or time.perf_counter()) - self.t_start

    # -- the file ----------------------------------------------------------------------------
    def stop(self, **extra: Any) -> None:
        if not self.enabled or self.written:
            return
        if self.t_start is not None and self.t_stop is None:
            if self.on_gpu:  # the loop ends when the GPU has run what the host queued
                self.torch.cuda.synchronize()
            self.t_stop = time.perf_counter()
            self._close_window()
        if self._prof is not None:
            self._finish_profile()
        self.values.update(extra)
        self._write()

    def _at_exit(self) -> None:
        if not self.written:
            self.values.setdefault("ended", "at exit without stop() (an error or an early exit)")
            self.stop()

    def _write(self) -> None:
        for span in self.spans.values():
            if isinstance(span, _Span) and span.on_gpu:
                span.drain()
        wall_s = self.elapsed()

        def table(items: dict) -> dict:
            out = {}
            for name, (total, count) in items.items():
                out[name] = {"total_ms": round(total, 3), "count": count,
                             "mean_ms": round(total / count, 4) if count else None,
                             "share": round(total / 1e3 / wall_s, 4) if wall_s > 0 else None}
            return out

        spans = table({k: (s.total_ms, s.count) for k, s in self.spans.items()})
        gpu = self.spans.get("gpu")
        busy_ms = gpu.total_ms if gpu is not None else 0.0
        record = {
            "program": self.program,
            "params": self.params,
            "device": self._device_name(),
            "torch": self.torch.__version__,
            "steps": self.steps,
            "loop_wall_s": round(wall_s, 4),
            "step_ms": round(wall_s * 1e3 / self.steps, 4) if self.steps else None,
            "gpu_busy_ms": round(busy_ms, 3),
            "gpu_busy_share": (round(min(1.0, busy_ms / 1e3 / wall_s), 4) if wall_s > 0 else None),
            "steady_busy_share": _steady_share(self.values, self.spans.get("gpu"), wall_s),
            "kernel_busy_share": (self.kernels or {}).get("kernel_busy_share"),
            "kernels": self.kernels,
            "spans": spans,
            "host": table(self.hosts),
            "values": self.values,
            "method": ("gpu spans: CUDA timing events around the GPU part of each step, read "
                       "after the step's own sync point; host gaps inside a span count as busy"
                       if self.on_gpu else "cpu smoke: time.perf_counter around each span"),
            "pid": os.getpid(),
            "time_unix": time.time(),
        }
        tmp = f"{self.path}.tmp.{os.getpid()}"
        try:
            with open(tmp, "w") as out:
                json.dump(record, out, indent=1, sort_keys=False)
                out.write("\n")
            os.replace(tmp, self.path)
        except OSError as err:
            print(f"cannot write {self.path}: {err}", file=sys.stderr)
        self.written = True

    def _device_name(self) -> str:
        if self.on_gpu:
            return self.torch.cuda.get_device_name(self.device)
        return "cpu"


def _jsonable(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool, type(None), list, tuple))


def _steady_share(values: dict, gpu: Any, wall_s: float) -> Optional[float]:
    """The ``"gpu"`` span's share of the wall time after ``values["warmup_s"]`` (for programs whose
    first steps are a warm-up timed in another span); None when there is no warm-up."""
    warm = values.get("warmup_s")
    if warm is None or gpu is None or wall_s - warm <= 0:
        return None
    return round(min(1.0, gpu.total_ms / 1e3 / (wall_s - warm)), 4)


def _union_us(intervals: list) -> float:
    """Length of the union of (start, end) intervals."""
    total, end = 0.0, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total
