"""``BatchSizeController``: the micro-batch with the best measured throughput that fits memory.

    from gpudoc import BatchSizeController
    ctl = BatchSizeController(target_batch=256)       # the effective batch to keep
    for batch in loader:                              # batches of 256 samples
        ctl.run_step(lambda part, weight: (model(part).loss * weight).backward(), batch,
                     zero_grad=opt.zero_grad)         # micro-batches, OOM caught and retried
        opt.step(); opt.zero_grad()
        for advice in guard.poll():
            if advice.action == "shrink_batch":
                change = ctl.shrink(advice.factor)
                guard.ack(advice, batch_size=ctl.micro_batch, accumulation_steps=ctl.accumulation_steps)

The search is deterministic. Each micro-batch size is measured over ``window`` steps (after
``warmup`` steps that are not counted: allocator and autotuning settle there), by a trimmed mean
of samples/s, robust to outliers. Coarse phase: grow by ``growth`` (x2) while the throughput
improves by more than ``min_gain`` (3 %). Fine phase: from the best size, grow by
``fine_growth`` (x1.25) below the first size that did not improve or did not fit, while it still
improves. Then it settles on the best measured size and makes no move of its own. A size that ran
out of memory, or that would leave less than ``memory_headroom`` of the GPU's memory free (when
the loop reports memory), is never tried again. Throughout, ``micro_batch * accumulation_steps >=
target_batch``: the effective batch is kept with gradient accumulation.

Forced changes: out of memory (``on_oom``: shrink at once, to the largest size known to fit or by
``oom_factor``) and the guard's ``shrink_batch`` advice (``shrink(factor)``: at once; the size
then stays under that cap). Lifting the cap (``release()``) is held back until ``hold_steps``
steps have passed since the last change, so shrink and regrowth never alternate faster.

This module never imports torch; ``run_step`` finds torch only if the job imported it.
"""
from __future__ import annotations

import gc
import math
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

__all__ = ["BatchSizeController", "Change", "free_memory", "is_oom_error", "robust_mean"]


@dataclass(frozen=True)
class Change:
    """A change of the micro-batch: from ``old`` to ``new`` samples, ``accumulation_steps`` after."""

    old: int
    new: int
    accumulation_steps: int
    reason: str  # "search", "settle", "oom", "advice", "release"


def robust_mean(values: List[float], trim: float = 0.2) -> float:
    """The mean of ``values`` without the lowest and highest ``trim`` share of them."""
    ordered = sorted(values)
    cut = int(len(ordered) * trim)
    kept = ordered[cut:len(ordered) - cut] or ordered
    return sum(kept) / len(kept)


def is_oom_error(error: BaseException) -> bool:
    """True for torch's ``OutOfMemoryError`` and the ``RuntimeError``s CUDA raises out of memory,
    recognized without importing torch."""
    if any(c.__name__ == "OutOfMemoryError" for c in type(error).__mro__):
        return True
    if isinstance(error, (RuntimeError, MemoryError)):
        text = str(error)
        return "out of memory" in text.lower() or "CUBLAS_STATUS_ALLOC_FAILED" in text
    return False


def free_memory() -> None:
    """Release what an out-of-memory step left: Python's garbage, then torch's cached blocks
    (only if the job imported torch)."""
    gc.collect()
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    try:
        if cuda is not None and cuda.is_available() and cuda.is_initialized():
            cuda.empty_cache()
    except Exception:  # freeing is best effort; the retry will say if memory is still short
        pass


def _synchronize() -> None:
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and cuda.is_available() and cuda.is_initialized():
        cuda.synchronize()


def _is_fraction(value: Any) -> bool:
    """A real number strictly between 0 and 1 (not a bool, not NaN; numpy scalars pass)."""
    if isinstance(value, (bool, str, bytes)) or value is None:
        return False
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        return False
    return math.isfinite(number) and 0.0 < number < 1.0


def _length(batch: Any) -> int:
    if isinstance(batch, dict):
        return _length(next(iter(batch.values())))
    if isinstance(batch, tuple):
        return _length(batch[0])
    return len(batch)


def _slice(batch: Any, start: int, stop: int) -> Any:
    if isinstance(batch, dict):
        return {k: _slice(v, start, stop) for k, v in batch.items()}
    if isinstance(batch, tuple):
        return tuple(_slice(v, start, stop) for v in batch)
    return batch[start:stop]


class BatchSizeController:
    """Pure logic: feed it measurements, it says which micro-batch to run. Not thread-safe (one
    training loop owns it)."""

    def __init__(self, target_batch: int, micro_batch: Optional[int] = None, *,
                 min_micro_batch: int = 1, max_micro_batch: Optional[int] = None,
                 multiple_of: int = 1, growth: float = 2.0, fine_growth: float = 1.25,
                 min_gain: float = 0.03, window: int = 8, warmup: int = 2, hold_steps: int = 100,
                 oom_factor: float = 0.5, memory_headroom: float = 0.10) -> None:
        if target_batch < 1 or min_micro_batch < 1 or multiple_of < 1:
            raise ValueError("target_batch, min_micro_batch and multiple_of must be at least 1")
        if growth <= 1 or fine_growth <= 1 or not 0 < oom_factor < 1 or window < 1:
            raise ValueError("growth and fine_growth must exceed 1, oom_factor lie in (0, 1), window >= 1")
        self.target_batch = target_batch
        self.min_micro_batch = min_micro_batch
        self.max_micro_batch = max_micro_batch if max_micro_batch is not None else target_batch
        self.multiple_of = multiple_of
        self.growth, self.fine_growth, self.min_gain = growth, fine_growth, min_gain
        self.window, self.warmup, self.hold_steps = window, warmup, hold_steps
        self.oom_factor, self.memory_headroom = oom_factor, memory_headroom
        first = micro_batch if micro_batch is not None else max(min_micro_batch, multiple_of)
        self.micro_batch = max(min_micro_batch, min(first, self.max_micro_batch))
        self.state = "search"            # "search", then "settled"
        self.phase = "coarse"            # of the search: "coarse", then "fine"
        self.throughput: Dict[int, float] = {}       # size -> samples/s (trimmed mean)
        self.memory_fraction: Dict[int, float] = {}  # size -> peak share of the GPU's memory
        self.ceiling: Optional[int] = None           # smallest size known not to fit
        self.cap: Optional[int] = None               # the guard's shrink: no size above it
        self.history: List[Change] = []
        self.steps = 0
        self._upper: Optional[int] = None            # fine phase: stay below this size
        self._best: Optional[int] = None
        self._samples: List[float] = []
        self._memory: List[float] = []
        self._since_change = 0
        self._last_change_step = 0
        self._release_wanted = False
        self._before_cap: Optional[int] = None

    # -- what the loop reads ------------------------------------------------------------------

    @property
    def accumulation_steps(self) -> int:
        """Micro-batches per optimizer step, so that the effective batch reaches the target."""
        return max(1, math.ceil(self.target_batch / self.micro_batch))

    @property
    def effective_batch(self) -> int:
        return self.micro_batch * self.accumulation_steps

    @property
    def settled(self) -> bool:
        return self.state == "settled"

    def micro_batch_sizes(self, total: Optional[int] = None) -> List[int]:
        """Split ``total`` samples (default: the target) into micro-batches of at most
        ``micro_batch``: exactly ``total`` samples in ``ceil(total / micro_batch)`` parts."""
        total = self.target_batch if total is None else total
        full, rest = divmod(total, self.micro_batch)
        return [self.micro_batch] * full + ([rest] if rest else [])

    # -- measurements -------------------------------------------------------------------------

    def step(self, samples: float, seconds: float, memory_used_bytes: Optional[float] = None,
             memory_total_bytes: Optional[float] = None) -> Optional[Change]:
        """One measured step: ``samples`` processed in ``seconds`` (wall time, GPU work included)
        at the current micro-batch, optionally the peak memory used and the GPU's total. Returns
        the change to apply before the next step, or None."""
        self.steps += 1
        self._since_change += 1
        if self._release_wanted and self.steps - self._last_change_step >= self.hold_steps:
            return self._apply_release()
        if self.state != "search" or self._since_change <= self.warmup or seconds <= 0:
            return None
        self._samples.append(samples / seconds)
        if memory_used_bytes is not None and memory_total_bytes:
            self._memory.append(memory_used_bytes / memory_total_bytes)
        if len(self._samples) < self.window:
            return None
        size = self.micro_batch
        self.throughput[size] = robust_mean(self._samples)
        if self._memory:
            self.memory_fraction[size] = max(self._memory)
        return self._decide(size)

    def _decide(self, size: int) -> Optional[Change]:
        previous = self.throughput.get(self._best) if self._best is not None else None
        improved = previous is None or self.throughput[size] > previous * (1 + self.min_gain)
        if improved:
            self._best = size
        else:
            self._upper = size if self._upper is None else min(self._upper, size)
        switched = False
        if self.phase == "coarse":
            bigger = self._grow(size, self.growth) if improved else None
            if bigger is not None:
                return self._move(bigger, "search")
            self.phase, switched = "fine", True
        if improved or switched:
            # Fine steps above the best, below the first size that did not improve or fit.
            bigger = self._grow(self._best, self.fine_growth)
            if bigger is not None and bigger not in self.throughput:
                return self._move(bigger, "search")
        return self._settle()

    def _settle(self) -> Optional[Change]:
        self.state = "settled"
        best = self._best if self._best is not None else self.micro_batch
        if best != self.micro_batch:
            return self._move(best, "settle")
        return None

    # -- sizes --------------------------------------------------------------------------------

    def _round_down(self, size: float) -> int:
        n = int(size) // self.multiple_of * self.multiple_of
        return max(self.min_micro_batch, n)

    def _limit(self) -> int:
        """The largest size allowed now."""
        top = self.max_micro_batch
        if self.cap is not None:
            top = min(top, self.cap)
        if self.ceiling is not None:
            top = min(top, self.ceiling - 1)
        if self._upper is not None and self.phase == "fine":
            top = min(top, self._upper - 1)
        fit = self._memory_limit()
        if fit is not None:
            top = min(top, fit)
        return top

    def _memory_limit(self) -> Optional[int]:
        """The largest size predicted to leave ``memory_headroom`` free: a line through the two
        largest sizes measured (one size: memory taken as proportional, which overestimates)."""
        known = sorted(self.memory_fraction.items())
        if not known:
            return None
        allowed = 1.0 - self.memory_headroom
        if len(known) == 1:
            size, fraction = known[0]
            per_sample = fraction / size
            fixed = 0.0
        else:
            (s0, f0), (s1, f1) = known[-2], known[-1]
            per_sample = max((f1 - f0) / (s1 - s0), 1e-12)
            fixed = f1 - per_sample * s1
        return int((allowed - fixed) / per_sample) if per_sample > 0 else None

    def _grow(self, size: Optional[int], factor: float) -> Optional[int]:
        if size is None:
            return None
        wanted = max(size + 1, math.ceil(size * factor))
        wanted = math.ceil(wanted / self.multiple_of) * self.multiple_of
        bigger = min(wanted, self._round_down(self._limit()) if self._limit() >= self.min_micro_batch else 0)
        return bigger if bigger > size else None

    def _move(self, size: int, reason: str) -> Change:
        change = Change(self.micro_batch, size, max(1, math.ceil(self.target_batch / size)), reason)
        self.micro_batch = size
        self.history.append(change)
        self._samples, self._memory = [], []
        self._since_change = 0
        self._last_change_step = self.steps
        return change

    # -- forced changes -----------------------------------------------------------------------

    def on_oom(self) -> Optional[Change]:
        """The step ran out of memory at the current size: shrink now (to the largest size that
        ran before, else by ``oom_factor``). None when it cannot shrink further."""
        size = self.micro_batch
        self.ceiling = size if self.ceiling is None else min(self.ceiling, size)
        fitted = [s for s in self.throughput if s < size]
        smaller = max(fitted) if fitted else self._round_down(size * self.oom_factor)
        if smaller >= size:
            return None
        if self.state == "search":
            self.phase = "fine"
            self._upper = size if self._upper is None else min(self._upper, size)
            if self._best is not None and self._best < size:
                bigger = self._grow(self._best, self.fine_growth)
                if bigger is not None and bigger not in self.throughput:
                    return self._move(bigger, "oom")
                self.state = "settled"
                return self._move(self._best, "oom")
        return self._move(smaller, "oom")

    def shrink(self, factor: float, reason: str = "advice") -> Optional[Change]:
        """The guard's ``shrink_batch``: the micro-batch times ``factor`` (0 < factor < 1) at
        once, the effective batch kept by more accumulation; no size above it until ``release``.
        None when it is at its minimum already.

        A factor that is not a finite number in (0, 1) (NaN, infinity, 2, None, "0.5", True) is
        refused with ValueError and changes nothing. A ``Guard`` never delivers such an advice (it
        checks every advice on arrival), so ``ctl.shrink(advice.factor)`` in the loop above
        cannot raise."""
        if not _is_fraction(factor):
            raise ValueError(f"a shrink factor is a finite number in (0, 1), not {factor!r}"[:200])
        factor = float(factor)
        smaller = self._round_down(self.micro_batch * factor)
        if self._before_cap is None:
            self._before_cap = self.micro_batch
        self._release_wanted = False
        self.cap = smaller
        self.state = "settled"
        if smaller >= self.micro_batch:
            return None
        return self._move(smaller, reason)

    def release(self) -> Optional[Change]:
        """Lift the guard's cap and go back to the size before it, but not sooner than
        ``hold_steps`` steps after the last change (then the change comes from ``step``)."""
        if self.cap is None:
            return None
        self._release_wanted = True
        if self.steps - self._last_change_step >= self.hold_steps:
            return self._apply_release()
        return None

    def _apply_release(self) -> Optional[Change]:
        self._release_wanted = False
        self.cap = None
        back, self._before_cap = self._before_cap, None
        if back is None or back <= self.micro_batch:
            return None
        if self.ceiling is not None and back >= self.ceiling:
            back = self._round_down(self.ceiling - 1)
        return self._move(back, "release") if back > self.micro_batch else None

    # -- running a step -----------------------------------------------------------------------

    def run_step(self, fn: Callable[[Any, float], Any], batch: Any,
                 zero_grad: Optional[Callable[[], Any]] = None, measure: bool = True) -> List[Any]:
        """Run one optimizer step's worth of ``batch`` (a sequence, a tensor, or a tuple or dict of
        them) as micro-batches: ``fn(part, weight)`` per part, ``weight`` = its share of the batch
        (scale the loss by it). Out of memory: free, ``zero_grad()`` (the partial gradients are
        dropped), shrink, and run the whole step again; re-raised when it cannot shrink. With
        ``measure``, the step's samples and time (GPU work waited for) feed ``step``. Returns
        what ``fn`` returned for each part."""
        total = _length(batch)
        while True:
            started = time.perf_counter()
            try:
                results = []
                begin = 0
                for size in self.micro_batch_sizes(total):
                    results.append(fn(_slice(batch, begin, begin + size), size / total))
                    begin += size
                if measure:
                    _synchronize()
            except BaseException as error:
                if not is_oom_error(error) or self.on_oom() is None:
                    raise
                error.__traceback__ = None  # its frames hold the step's tensors
                del error
                results = []
                free_memory()
                if zero_grad is not None:
                    zero_grad()
                continue
            if measure:
                self.step(total, time.perf_counter() - started, *_memory_reading())
            return results


def _memory_reading() -> tuple:
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    try:
        if cuda is not None and cuda.is_available() and cuda.is_initialized():
            device = cuda.current_device()
            peak = cuda.max_memory_reserved(device)
            cuda.reset_peak_memory_stats(device)
            return peak, cuda.get_device_properties(device).total_memory
    except Exception:
        pass
    return None, None
