"""gpudoc tune's shim: run a Python program with named PyTorch patches, no edit of the program.

    python3 -m gpudoc.tune --patch workers=8,persistent_workers,pin_memory,prefetch=4 -- train.py --epochs 1
    python3 -m gpudoc.tune --patch cudnn_benchmark,channels_last -- -m mypkg.train

`gpudoc tune` measures each patch on the job (docs/tune.md) and prints the line to apply the ones
worth keeping. The program runs as ``python3 PROGRAM`` would run it (``__main__``, ``sys.argv``,
``sys.path[0]``); its exit status and output are its own. The patches take effect when the program
imports torch; each one says whether it changed anything:

  workers=N           a DataLoader made with fewer than N workers gets N (map-style datasets only:
                      an IterableDataset would yield its data once per worker)
  persistent_workers  a DataLoader with workers keeps them between epochs
  pin_memory          a DataLoader copies its batches into pinned memory (when CUDA is available)
  prefetch=K          a DataLoader with workers has K batches in flight per worker
  cudnn_benchmark     torch.backends.cudnn.benchmark = True (cuDNN times its algorithms per shape)
  channels_last       a module with 2-D convolutions moved to a CUDA device is made channels-last
  compile=MODE        the first module with parameters moved to a CUDA device (``.to``/``.cuda``)
                      comes back wrapped in torch.compile(mode=MODE); the program must keep what
                      ``.to``/``.cuda`` returns (``model = Net().to("cuda")``)
  tf32                float32 matmuls and convolutions on TF32 tensor cores (changes results)
  bf16_autocast       that first module runs its forward under torch.autocast("cuda", bfloat16)
                      (changes results)
  observe             changes nothing: reports the torch version, each DataLoader made (its workers,
                      pinning, dataset kind) and each module with parameters moved to a CUDA device
                      (its 2-D convolutions): what gpudoc tune's plain run learns of the job

When $GPUDOC_TUNE_REPORT names a file, each patch appends one JSON line there each time it acts
(at most 5 a patch): {"patch": NAME, "applied": true|false, "detail": "..."}, and `observe` one per
thing seen (at most 5 a kind): {"seen": "torch"|"dataloader"|"module", ...}. Standard library only.
"""
from __future__ import annotations

import importlib.abc
import inspect
import json
import os
import runpy
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

PATCHES = ("workers", "persistent_workers", "pin_memory", "prefetch", "cudnn_benchmark", "channels_last",
           "compile", "tf32", "bf16_autocast", "observe")
_WITH_VALUE = {"workers": int, "prefetch": int, "compile": str}
_MAX_EVENTS = 5


class UsageError(Exception):
    pass


class HelpRequested(Exception):
    pass


def parse_patches(text: str) -> Dict[str, Any]:
    """``"workers=8,pin_memory"`` -> ``{"workers": 8, "pin_memory": True}``; a later value wins."""
    out: Dict[str, Any] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = item.partition("=")
        if name not in PATCHES:
            raise UsageError(f"unknown patch {name!r}; the patches are {', '.join(PATCHES)}")
        if name in _WITH_VALUE:
            if not value:
                raise UsageError(f"patch {name} needs a value ({name}=...)")
            try:
                out[name] = _WITH_VALUE[name](value)
            except ValueError:
                raise UsageError(f"patch {name}={value}: not a {_WITH_VALUE[name].__name__}") from None
            if name in ("workers", "prefetch") and out[name] < 1:
                raise UsageError(f"patch {name}={value}: must be 1 or more")
        elif value:
            raise UsageError(f"patch {name} takes no value")
        else:
            out[name] = True
    return out


def parse_args(argv: Sequence[str]) -> Tuple[Dict[str, Any], List[str]]:
    """The patches and the program (``[SCRIPT, ARGS...]`` or ``["-m", MODULE, ARGS...]``)."""
    patches: Dict[str, Any] = {}
    args = list(argv)
    while args and args[0] != "--":
        a = args.pop(0)
        if a == "--patch" and args:
            patches.update(parse_patches(args.pop(0)))
        elif a.startswith("--patch="):
            patches.update(parse_patches(a[len("--patch="):]))
        elif a in ("-h", "--help"):
            raise HelpRequested()
        else:
            raise UsageError(f"unexpected {a!r}: usage: python3 -m gpudoc.tune --patch P[,P...] -- PROGRAM [ARGS...]")
    if not args or len(args) < 2:
        raise UsageError("no program after --: python3 -m gpudoc.tune --patch P[,P...] -- train.py [ARGS...]")
    program = args[1:]
    if program[0] == "-m" and len(program) < 2:
        raise UsageError("-m without a module")
    return patches, program


class Reporter:
    """Appends what each patch did to $GPUDOC_TUNE_REPORT (when set), at most 5 lines a patch."""

    def __init__(self, path: Optional[str]) -> None:
        self.path = path
        self.counts: Dict[str, int] = {}

    def __call__(self, patch: str, applied: bool, detail: str) -> None:
        n = self.counts.get(patch, 0)
        if n >= _MAX_EVENTS:
            return
        self.counts[patch] = n + 1
        if not self.path:
            return
        line = json.dumps({"patch": patch, "applied": bool(applied), "detail": detail}) + "\n"
        try:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line)
        except OSError:
            pass  # the report is gpudoc's, never the program's problem

    def seen(self, kind: str, **fields: Any) -> None:
        """One thing `observe` saw: {"seen": kind, ...fields}."""
        key = "seen:" + kind
        n = self.counts.get(key, 0)
        if n >= _MAX_EVENTS or not self.path:
            self.counts[key] = n + 1
            return
        self.counts[key] = n + 1
        try:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(dict(seen=kind, **fields)) + "\n")
        except OSError:
            pass


def _patch_dataloader(torch: Any, patches: Dict[str, Any], report: Reporter) -> None:
    loader_patches = [p for p in ("workers", "persistent_workers", "pin_memory", "prefetch") if p in patches]
    if not loader_patches:
        return
    data = torch.utils.data
    cls = data.DataLoader
    original = cls.__init__
    signature = inspect.signature(original)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError:
            return original(self, *args, **kwargs)  # let DataLoader say what is wrong
        a = bound.arguments
        dataset = a.get("dataset")
        workers = a.get("num_workers", 0) or 0
        if "workers" in patches:
            if isinstance(dataset, data.IterableDataset):
                report("workers", False, "an IterableDataset: more workers would repeat its data")
            elif workers < patches["workers"]:
                report("workers", True, f"DataLoader num_workers {workers} -> {patches['workers']}")
                workers = a["num_workers"] = patches["workers"]
            else:
                report("workers", False, f"DataLoader already has {workers} workers")
        if "persistent_workers" in patches:
            if workers > 0 and not a.get("persistent_workers", False):
                a["persistent_workers"] = True
                report("persistent_workers", True, "DataLoader persistent_workers False -> True")
            else:
                report("persistent_workers", False, "no workers, or already persistent")
        if "prefetch" in patches:
            if workers > 0:
                a["prefetch_factor"] = patches["prefetch"]
                report("prefetch", True, f"DataLoader prefetch_factor -> {patches['prefetch']}")
            else:
                report("prefetch", False, "no workers: nothing prefetches")
        if "pin_memory" in patches:
            if not torch.cuda.is_available():
                report("pin_memory", False, "CUDA is not available: nothing to pin for")
            elif not a.get("pin_memory", False):
                a["pin_memory"] = True
                report("pin_memory", True, "DataLoader pin_memory False -> True")
            else:
                report("pin_memory", False, "DataLoader already pins memory")
        return original(*bound.args, **bound.kwargs)

    __init__.__wrapped__ = original  # type: ignore[attr-defined]
    cls.__init__ = __init__


def _on_cuda(module: Any) -> bool:
    for p in module.parameters():
        return bool(getattr(p, "is_cuda", False))
    return False


def _has_params(module: Any) -> bool:
    for _ in module.parameters():
        return True
    return False


def _patch_modules(torch: Any, patches: Dict[str, Any], report: Reporter) -> None:
    wanted = [p for p in ("channels_last", "compile", "bf16_autocast") if p in patches]
    if not wanted:
        return
    module_cls = torch.nn.Module
    original_to = module_cls.to
    original_cuda = module_cls.cuda
    state = {"first": False, "converted": set()}

    def after_move(module: Any) -> Any:
        if not _on_cuda(module):
            return module
        if "channels_last" in patches and id(module) not in state["converted"]:
            convs = sum(1 for m in module.modules() if isinstance(m, torch.nn.Conv2d))
            state["converted"].add(id(module))
            if convs:
                original_to(module, memory_format=torch.channels_last)
                report("channels_last", True, f"{type(module).__name__}: {convs} 2-D convolutions, channels-last")
            else:
                report("channels_last", False, f"{type(module).__name__} has no 2-D convolution")
        if state["first"] or not _has_params(module):
            return module
        state["first"] = True
        if "bf16_autocast" in patches:
            forward = module.forward

            def autocast_forward(*args: Any, **kwargs: Any) -> Any:
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    return forward(*args, **kwargs)

            module.forward = autocast_forward
            report("bf16_autocast", True, f"{type(module).__name__}.forward under bf16 autocast")
        if "compile" in patches:
            if not hasattr(torch, "compile"):
                report("compile", False, f"torch {getattr(torch, '__version__', '?')} has no torch.compile (2.0+)")
            else:
                report("compile", True, f"{type(module).__name__} in torch.compile(mode={patches['compile']!r})")
                return torch.compile(module, mode=patches["compile"])
        return module

    def to(self: Any, *args: Any, **kwargs: Any) -> Any:
        return after_move(original_to(self, *args, **kwargs))

    def cuda(self: Any, *args: Any, **kwargs: Any) -> Any:
        return after_move(original_cuda(self, *args, **kwargs))

    module_cls.to = to
    module_cls.cuda = cuda


def _observe(torch: Any, report: Reporter) -> None:
    """Reports what the program does with torch, changing nothing (installed after the patches, so
    that it sees what they made)."""
    report.seen("torch", version=str(getattr(torch, "__version__", "?")), compile=hasattr(torch, "compile"))
    import torch.utils.data  # noqa: F401
    data = torch.utils.data
    loader_init = data.DataLoader.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        loader_init(self, *args, **kwargs)
        report.seen("dataloader", num_workers=int(getattr(self, "num_workers", 0) or 0),
                    pin_memory=bool(getattr(self, "pin_memory", False)),
                    iterable=isinstance(getattr(self, "dataset", None), data.IterableDataset))

    data.DataLoader.__init__ = __init__
    module_cls = torch.nn.Module
    moved = {"to": module_cls.to, "cuda": module_cls.cuda}

    def seen_after(name: str) -> Callable[..., Any]:
        original = moved[name]

        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            out = original(self, *args, **kwargs)
            module = out if isinstance(out, module_cls) else self
            if _has_params(module) and _on_cuda(module):
                convs = sum(1 for m in module.modules() if isinstance(m, torch.nn.Conv2d))
                report.seen("module", name=type(module).__name__, convs=convs)
            return out

        return method

    module_cls.to = seen_after("to")
    module_cls.cuda = seen_after("cuda")


def apply(torch: Any, patches: Dict[str, Any], report: Reporter) -> None:
    """Every patch on an imported torch module."""
    if "cudnn_benchmark" in patches:
        torch.backends.cudnn.benchmark = True
        report("cudnn_benchmark", True, "torch.backends.cudnn.benchmark = True")
    if "tf32" in patches:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        report("tf32", True, "TF32 for float32 matmuls and convolutions")
    if any(p in patches for p in ("workers", "persistent_workers", "pin_memory", "prefetch")):
        import torch.utils.data  # noqa: F401  (torch's own import has made it; this names it)
        _patch_dataloader(torch, patches, report)
    _patch_modules(torch, patches, report)
    if "observe" in patches:
        _observe(torch, report)


class _Wrapped(importlib.abc.Loader):
    """A module's own loader, with `then` called once the module has run."""

    def __init__(self, loader: Any, then: Callable[[Any], None]) -> None:
        self._loader = loader
        self._then = then

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        self._then(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class AfterImport(importlib.abc.MetaPathFinder):
    """Calls `then(module)` once `name` has been imported, before the importer sees it."""

    def __init__(self, name: str, then: Callable[[Any], None]) -> None:
        self.name = name
        self.then = then
        self.done = False

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.name or self.done:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec

        def then(module: Any) -> None:
            self.done = True
            self.then(module)

        spec.loader = _Wrapped(spec.loader, then)
        return spec


def install(patches: Dict[str, Any], report: Reporter) -> None:
    """The patches, applied when the program imports torch (at once when it is imported already)."""
    if not patches:
        return
    if "torch" in sys.modules:
        apply(sys.modules["torch"], patches, report)
        return
    sys.meta_path.insert(0, AfterImport("torch", lambda torch: apply(torch, patches, report)))


def run_program(program: List[str]) -> None:
    """Runs the program as ``python3 PROGRAM`` would: ``__main__``, ``sys.argv``, ``sys.path[0]``."""
    if program[0] == "-m":
        sys.argv = [program[1]] + program[2:]
        sys.path[0] = os.getcwd()
        runpy.run_module(program[1], run_name="__main__", alter_sys=True)
        return
    script = program[0]
    sys.argv = list(program)
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    runpy.run_path(script, run_name="__main__")


def main(argv: Optional[Sequence[str]] = None) -> None:
    try:
        patches, program = parse_args(sys.argv[1:] if argv is None else argv)
    except HelpRequested:
        print(__doc__)
        raise SystemExit(0) from None
    except UsageError as e:
        print(f"gpudoc.tune: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    report = Reporter(os.environ.get("GPUDOC_TUNE_REPORT"))
    install(patches, report)
    run_program(program)


if __name__ == "__main__":
    main()
