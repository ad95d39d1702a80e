"""gpudoc's client for training loops: standard library only, Python 3.9 or newer.

- ``Guard``: advice from ``gpudoc guard`` (shrink the batch, checkpoint now, pause, stop) and the
  acknowledgements back (docs/guard-protocol.md); a no-op when no guard runs.
- ``BatchSizeController``: the micro-batch with the best measured throughput that fits memory,
  the effective batch kept with gradient accumulation; out-of-memory steps retried smaller.
- ``checkpoint`` / ``load_checkpoint``: written whole or not at all, checked before it replaces
  the last one.
- ``report(**figures)``: one ``::gpudoc {json}`` line on stdout, and the figures to the guard;
  with ``rank`` (``gpudoc.rank``) when the job has one; a tensor on a GPU comes on a later line,
  without a GPU sync (``gpudoc.deferred``; ``flush()`` writes what is left).

The client logs through ``logging`` (logger ``"gpudoc"``) and adds only a NullHandler to it: it
writes nothing to stderr unless the program configures logging (``logging.basicConfig()``).
"""
import logging as _logging

from .batch import BatchSizeController, Change, free_memory, is_oom_error
from .checkpoint import CheckpointError, checkpoint, load_checkpoint
from .guard import Advice, Guard
from .metrics import flush, report

__version__ = "0.1.0"

_logging.getLogger("gpudoc").addHandler(_logging.NullHandler())

__all__ = ["Advice", "BatchSizeController", "Change", "CheckpointError", "Guard", "checkpoint",
           "flush", "free_memory", "is_oom_error", "load_checkpoint", "report", "__version__"]
