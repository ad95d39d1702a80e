"""``report(**figures)``: the ``::gpudoc`` metrics protocol (README, "The ::gpudoc metrics
protocol"): one line ``::gpudoc {json}`` on stdout, flushed, and the same figures to the guard
when one is connected.

Each line carries ``rank`` when the launcher set one (``gpudoc.rank``: RANK, OMPI_COMM_WORLD_RANK,
SLURM_PROCID, LOCAL_RANK), so that the lines of a distributed job's processes can be told apart.
A figure that is a tensor on a GPU is not read at once (that would make the host wait for the
GPU): it comes later, on a line of its own that repeats the report's ``step``, ``epoch`` and
``rank`` (``gpudoc.deferred``); ``flush()`` writes what is left (it runs at exit)."""
from __future__ import annotations

import atexit
import json
import math
import sys
import threading
from typing import Any, Dict, Optional, TextIO

from . import deferred as _deferred
from . import guard as _guard
from .rank import rank as _rank

PREFIX = "::gpudoc "

_pending = _deferred.Deferred()
_atexit_lock = threading.Lock()
_atexit_registered = False


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    item = getattr(value, "item", None)  # numpy scalars, 0-d tensors on the CPU
    if callable(item) and not isinstance(value, (str, bytes, int, bool)):
        return _clean(item())
    return value


def format_line(figures: Dict[str, Any]) -> str:
    """The ``::gpudoc`` line for ``figures`` (non-finite floats become null)."""
    return PREFIX + json.dumps(_clean(figures), allow_nan=False, default=str) + "\n"


def with_rank(figures: Dict[str, Any]) -> Dict[str, Any]:
    """``figures`` with ``rank`` first when the environment names one and they have none."""
    if "rank" in figures:
        return figures
    rank = _rank()
    return figures if rank is None else {"rank": rank, **figures}


def _emit(figures: Dict[str, Any], stream: Optional[TextIO]) -> None:
    line = format_line(figures)
    out = stream if stream is not None else sys.stdout
    try:
        out.write(line)
        out.flush()
    except (BrokenPipeError, ValueError, AttributeError):
        pass
    active = _guard.active_guard()
    if active is not None:
        active.report(**figures)


def report(stream: Optional[TextIO] = None, **figures: Any) -> None:
    """Print ``figures`` as one ``::gpudoc`` line on stdout (one write, flushed) and send them to
    the guard when one is connected. A closed stdout never stops the training loop. Tensors on a
    GPU come on a later line (module docstring); earlier steps' lines that are ready come first.

    The work done gives gpudoc the cost per step, sample and token (docs/cost.md): ``step`` the
    steps done so far, ``samples`` and ``tokens`` those processed since the previous report
    (gpudoc adds them up): ``report(step=i, samples=batch, tokens=batch * seq)``."""
    global _atexit_registered
    late, now = _pending.take(with_rank(figures))
    if len(_pending) and not _atexit_registered:
        with _atexit_lock:
            if not _atexit_registered:
                atexit.register(flush)
                _atexit_registered = True
    for line in late:
        _emit(line, stream)
    _emit(now, stream)


def flush(stream: Optional[TextIO] = None, wait: bool = True) -> int:
    """Write the lines of the figures still waiting for a GPU (``wait``: waiting for it; else only
    those ready now). Returns how many lines were written. Runs at exit, and when a ``Guard``
    block ends normally; never raises."""
    try:
        late = _pending.flush(wait)
        for line in late:
            _emit(line, stream)
        return len(late)
    except Exception:
        return 0
