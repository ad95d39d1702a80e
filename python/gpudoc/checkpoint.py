"""``checkpoint(state, path)``: a checkpoint that is whole or absent, never half written.

    from gpudoc import checkpoint, load_checkpoint
    checkpoint({"model": model.state_dict(), "optim": opt.state_dict(), "step": step}, "ckpt.pt")
    state = load_checkpoint("ckpt.pt")

The steps: wait for the GPU (when torch is loaded and CUDA in use), write to a private temporary
file in the same folder (``tempfile.mkstemp``: O_EXCL, mode 0600, a name nobody can guess),
flush and fsync it, check that it loads, then ``os.replace`` it over ``path`` (atomic on POSIX)
and fsync the folder so the rename survives a power loss. The check comes before the rename, so
a checkpoint that does not load never replaces the last good one.
"""
from __future__ import annotations

import os
import pickle
import sys
import tempfile
from typing import Any, BinaryIO, Callable, Optional

__all__ = ["CheckpointError", "checkpoint", "load_checkpoint"]

Saver = Callable[[Any, BinaryIO], None]
Loader = Callable[[BinaryIO], Any]


class CheckpointError(RuntimeError):
    """Writing or verifying a checkpoint failed; the previous file at the path is untouched."""


def _torch() -> Any:
    # Only a torch the job already imported: a checkpoint never pays for importing torch.
    return sys.modules.get("torch")


def _default_saver() -> Saver:
    torch = _torch()
    if torch is not None:
        return lambda state, f: torch.save(state, f)
    return lambda state, f: pickle.dump(state, f, protocol=pickle.HIGHEST_PROTOCOL)


def _default_loader() -> Loader:
    torch = _torch()
    if torch is not None:
        return lambda f: torch.load(f, map_location="cpu", weights_only=False)
    return pickle.load


def _synchronize_cuda() -> None:
    torch = _torch()
    cuda = getattr(torch, "cuda", None)
    try:
        if cuda is not None and cuda.is_available() and cuda.is_initialized():
            cuda.synchronize()
    except Exception as error:  # a broken CUDA context must say so, not write stale tensors
        raise CheckpointError(f"waiting for the GPU before the checkpoint failed: {error}") from error


def fsync_directory(directory: str) -> None:
    """Make a rename in ``directory`` durable (POSIX needs the folder itself synced)."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def checkpoint(state: Any, path: str, *, save: Optional[Saver] = None,
               load: Optional[Loader] = None, verify: Optional[Callable[[Any], None]] = None) -> str:
    """Write ``state`` to ``path`` atomically and return the absolute path.

    ``save(state, file)`` writes (default: ``torch.save`` when torch is loaded, else pickle);
    ``load(file)`` reads it back to check it (default: ``torch.load(map_location="cpu")`` or
    pickle); ``verify(loaded)`` may check more (raise to refuse). Raises CheckpointError with
    the reason; then ``path`` still holds what it held before and no temporary file is left."""
    path = os.path.abspath(os.fspath(path))
    directory = os.path.dirname(path)
    save = save or _default_saver()
    load = load or _default_loader()
    _synchronize_cuda()
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w+b") as f:
            save(state, f)
            f.flush()
            os.fsync(f.fileno())
            f.seek(0)
            try:
                loaded = load(f)
                if verify is not None:
                    verify(loaded)
            except Exception as error:
                raise CheckpointError(f"the checkpoint written for {path!r} does not load back: "
                                      f"{type(error).__name__}: {error}") from error
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    fsync_directory(directory)
    return path


def load_checkpoint(path: str, *, load: Optional[Loader] = None) -> Any:
    """Read a checkpoint written by ``checkpoint``. Raises CheckpointError naming the path when it
    does not load (FileNotFoundError when there is none)."""
    load = load or _default_loader()
    with open(path, "rb") as f:
        try:
            return load(f)
        except Exception as error:
            raise CheckpointError(f"the checkpoint {os.fspath(path)!r} does not load: "
                                  f"{type(error).__name__}: {error}") from error
