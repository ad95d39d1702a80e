"""Figures that are tensors on a GPU, reported without making the host wait for the GPU.

``float(loss)`` or ``loss.item()`` on a CUDA tensor waits until the GPU has run every kernel
queued before it: a sync per report, which drains the queue the training loop keeps ahead. So a
figure that is a tensor on a device is not read when it is reported: it is detached (the step's
graph can go), an asynchronous copy to pinned host memory is queued behind the work that computes
it (``tensor.to("cpu", non_blocking=True)``) and a CUDA event is recorded after the copy. At each
later report, the values whose events have completed (``event.query()``, which never waits) are
read from host memory and reported on a line of their own that carries the ``step``, ``epoch``
and ``rank`` of the report they came with. The lag is how far the host runs ahead of the GPU:
usually one report, more when the loop queues several steps ahead.

- A value that is a plain number (``int``, ``float``, ...), or a tensor on the CPU, or a numpy
  scalar, is converted at once (none makes the host wait for a GPU).
- At most ``MAX_PENDING`` reports wait; past that, the oldest is waited for
  (``event.synchronize()``: only until its own copy is done, not the work queued after it).
- ``flush()`` (at exit, and when a ``Guard`` block ends normally) waits for the rest.
- A tensor on another device (no CUDA event), or a copy that could not be queued: read at the
  next report, which may wait for that device.

Duck-typed: torch is never imported here; a tensor is an object with ``detach`` and ``item`` on
a device other than the CPU, and the CUDA event comes from the torch module the program imported.
"""
from __future__ import annotations

import collections
import sys
import threading
from typing import Any, Deque, Dict, List, Optional, Tuple

MAX_PENDING = 64
# Keys of a report that a late line repeats: what tells which report its values came with.
CONTEXT_KEYS = ("step", "epoch", "rank")


def is_device_tensor(value: Any) -> bool:
    """A tensor whose reading would wait for a device: ``detach`` and ``item`` callable, on
    CUDA (``is_cuda``) or on a device whose ``type`` is not ``"cpu"``."""
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return False
    if not callable(getattr(value, "detach", None)) or not callable(getattr(value, "item", None)):
        return False
    if getattr(value, "is_cuda", False) is True:
        return True
    kind = getattr(getattr(value, "device", None), "type", None)
    return isinstance(kind, str) and kind != "cpu"


def _queue_copy(tensor: Any) -> Tuple[Any, Any]:
    """(what to read later, the event after which it is readable, or None)."""
    ref = tensor.detach()
    torch = sys.modules.get("torch")
    if torch is None or getattr(ref, "is_cuda", False) is not True:
        return ref, None
    try:
        host = ref.to("cpu", non_blocking=True)  # pinned host memory; the copy queued, not waited for
        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream(ref.device))
        return host, event
    except Exception:  # an old torch, a device error: read it at the next report instead
        return ref, None


def _read(value: Any) -> Any:
    """A host tensor as a number (a list for one of several elements); never raises."""
    for how in ("item", "tolist"):
        try:
            return getattr(value, how)()
        except Exception:
            continue
    return None


class _Pending:
    __slots__ = ("context", "values")

    def __init__(self, context: Dict[str, Any]) -> None:
        self.context = context
        self.values: List[Tuple[str, Any, Any]] = []  # (key, what to read, event or None)

    def ready(self) -> bool:
        for _, _, event in self.values:
            if event is None:
                continue
            try:
                if not event.query():
                    return False
            except Exception:  # a broken event: read it (reading tells what is wrong)
                pass
        return True

    def wait(self) -> None:
        for _, _, event in self.values:
            if event is not None:
                try:
                    event.synchronize()
                except Exception:
                    pass

    def line(self) -> Dict[str, Any]:
        out = dict(self.context)
        for key, value, _ in self.values:
            out[key] = _read(value)
        return out


class Deferred:
    """The reports whose device tensors are not read yet, oldest first. Thread-safe."""

    def __init__(self, max_pending: int = MAX_PENDING) -> None:
        self.max_pending = max_pending
        self.waited = 0  # reports waited for because more than max_pending were pending
        self._lock = threading.Lock()
        self._pending: Deque[_Pending] = collections.deque()

    def __len__(self) -> int:
        return len(self._pending)

    def take(self, figures: Dict[str, Any]) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
        """(the late lines ready now, oldest first; ``figures`` without its device tensors, which
        wait). Never waits for a device unless more than ``max_pending`` reports wait."""
        now: Dict[str, Any] = {}
        pending: Optional[_Pending] = None
        for key, value in figures.items():
            if is_device_tensor(value):
                if pending is None:
                    pending = _Pending({k: figures[k] for k in CONTEXT_KEYS if k in figures
                                        and not is_device_tensor(figures[k])})
                host, event = _queue_copy(value)
                pending.values.append((key, host, event))
            else:
                now[key] = value
        with self._lock:
            late = self._take_ready()
            if pending is not None:
                self._pending.append(pending)
            while len(self._pending) > self.max_pending:
                oldest = self._pending.popleft()
                oldest.wait()
                self.waited += 1
                late.append(oldest.line())
        return late, now

    def _take_ready(self) -> List[Dict[str, Any]]:
        late: List[Dict[str, Any]] = []
        # In order: events on one stream complete in order, and the lines keep the reports' order.
        while self._pending and self._pending[0].ready():
            late.append(self._pending.popleft().line())
        return late

    def flush(self, wait: bool = True) -> List[Dict[str, Any]]:
        """Every late line, waiting for the device (``wait``), or only those ready now."""
        with self._lock:
            if not wait:
                return self._take_ready()
            late = []
            while self._pending:
                oldest = self._pending.popleft()
                oldest.wait()
                late.append(oldest.line())
            return late
