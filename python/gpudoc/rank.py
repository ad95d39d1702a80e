"""Which process of a distributed job this is: the rank, from the launcher's environment.

The first of these that holds a non-negative integer wins:

1. ``RANK``: torchrun / torch.distributed, DeepSpeed, Accelerate (the global rank);
2. ``OMPI_COMM_WORLD_RANK``: Open MPI's mpirun (global); before Slurm's, because processes that
   mpirun starts inside a Slurm allocation inherit a ``SLURM_PROCID`` that is not theirs;
3. ``SLURM_PROCID``: srun's task number (global);
4. ``LOCAL_RANK``: the rank on this node only, when nothing else is set (it still tells apart the
   processes on one node, which is what one ``gpudoc guard`` sees).

A value that is not a decimal integer from 0 to 2**31 - 1 is skipped (the next variable is tried).
"""
from __future__ import annotations

import os
from typing import Mapping, Optional, Tuple

RANK_VARIABLES = ("RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "LOCAL_RANK")
MAX_RANK = 2**31 - 1  # what the guard takes (a C int)


def rank_from_env(environ: Optional[Mapping[str, str]] = None) -> Optional[Tuple[int, str]]:
    """``(rank, variable)`` of the first of ``RANK_VARIABLES`` set to a non-negative integer in
    ``environ`` (default ``os.environ``), or None when none is (a single-process job)."""
    env = os.environ if environ is None else environ
    for name in RANK_VARIABLES:
        text = env.get(name, "").strip()
        if text.isascii() and text.isdigit() and int(text) <= MAX_RANK:
            return int(text), name
    return None


def rank() -> Optional[int]:
    """This process's rank (``rank_from_env``), or None."""
    found = rank_from_env()
    return found[0] if found else None
