"""``report(**figures)``: the ``::gpudoc`` metrics protocol (README, "The ::gpudoc metrics
protocol"): one line ``::gpudoc {json}`` on stdout, flushed, and the same figures to the guard
when one is connected.

Each line carries ``rank`` when the launcher set one (``gpudoc.rank``: RANK, OMPI_COMM_WORLD_RANK,
SLURM_PROCID, LOCAL_RANK), so that the lines of a distributed job's processes can be told apart."""
from __future__ import annotations

import json
import math
import sys
from typing import Any, Dict, Optional, TextIO

from . import guard as _guard
from .rank import rank as _rank

PREFIX = "::gpudoc "


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    item = getattr(value, "item", None)  # numpy scalars, 0-d tensors
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


def report(stream: Optional[TextIO] = None, **figures: Any) -> None:
    """Print ``figures`` as one ``::gpudoc`` line on stdout (one write, flushed) and send them to
    the guard when one is connected. A closed stdout never stops the training loop."""
    figures = with_rank(figures)
    line = format_line(figures)
    out = stream if stream is not None else sys.stdout
    try:
        out.write(line)
        out.flush()
    except (BrokenPipeError, ValueError):
        pass
    active = _guard.active_guard()
    if active is not None:
        active.report(**figures)
