#!/usr/bin/env python3
"""guard_train: a real training loop that listens to ``gpudoc guard`` and acts on its advice.

A GPT-style language model (pre-norm blocks, dropout, tied head; attention by
``scaled_dot_product_attention`` or written out by hand, ``--attention``) trains with AdamW and
bf16 autocast (on CUDA) on synthetic token sequences that a ``torch.utils.data.DataLoader`` with
worker processes makes on the fly (sample i depends only on ``--seed`` and i, so a resumed run sees
the same data). Every optimizer step takes ``--effective-batch`` samples; the gpudoc client's
``BatchSizeController`` splits them into micro-batches (``--batch-size`` to start) with gradient
accumulation, so the effective batch never changes when the micro-batch does.

The gpudoc client (``python/gpudoc``, found next to this repository when not installed):

* ``Guard(signals=True)``: advice from ``gpudoc guard`` (``GPUDOC_GUARD_SOCKET``), polled between
  optimizer steps, never blocking; SIGUSR1 (checkpoint now) and SIGTERM (stop) arrive the same way.
  Without a guard the loop runs unchanged. Every advice is acted on and acknowledged with what was
  done: ``shrink_batch`` (``batch_size``, ``accumulation_steps``, the previous ones, the effective
  batch), ``checkpoint_now`` (``checkpoint_path``, ``step``, ``ckpt_ms``), ``pause_noncritical`` /
  ``resume_noncritical`` (this job's own periodic evaluation stops and its step lines thin out to
  one every ``--paused-log-every-s``; ``paused``), ``stop`` (a checkpoint unless the last one is of
  this step, then the end line with ``"stopped": true`` and exit 0). Unknown actions are
  acknowledged ``unsupported``; a failed checkpoint ``failed`` with the error.
* ``BatchSizeController``: ``--controller seek`` searches the micro-batch with the best measured
  throughput that fits (out-of-memory steps retried smaller); ``fixed`` keeps ``--batch-size``
  (only the guard's shrink changes it) and an out-of-memory step ends the run with exit 5 and
  ``"oom": true`` in the end line: a result for a batch sweep, not a crash.
* ``checkpoint()``: written whole or not at all, only between optimizer steps (consistent by
  construction): model, optimizer, step, samples seen, RNG states (torch CPU, CUDA, Python) and the
  controller's state. ``--resume PATH`` restores all of them.
* ``report()``: the step lines below, also sent to the guard.

Stdout: ``::gpudoc {json}`` lines only (workloads/README.md): a start line (every option, the
device, ``parameters``, ``guard_connected``, ``resumed_from``), step lines at most every
``--log-every-s`` (``step``, ``samples_per_s`` over the interval, ``batch_size`` (the micro-batch),
``accumulation_steps``, ``effective_batch``, ``loss``, ``step_ms``, ``data_ms``,
``controller``/``settled``, ``paused``), event lines (``advice``: one per advice handled, with
``source`` guard or signal and what was done; ``batch_change``: every change of the micro-batch
with its reason; ``checkpoint``; ``eval``; ``oom``), and an end line (``steps``, ``stopped``,
``stopped_by``, ``oom``, ``checkpoint_path``, ``elapsed_s``).

Options (defaults in ``--help``): ``--device N|cpu``, ``--duration S`` (seconds of training after
the start line), ``--max-steps N`` (stop after optimizer step N, counted from the first run),
``--batch-size`` (first micro-batch), ``--effective-batch``, ``--max-batch`` (largest micro-batch
the search may try), ``--controller seek|fixed``, ``--window``/``--warmup`` (the controller's
measurement), ``--width``, ``--layers``, ``--heads``, ``--context``, ``--vocab``, ``--dropout``,
``--attention sdpa|naive``, ``--lr``, ``--workers``, ``--seed``, ``--ckpt-dir`` (default: a new
private folder under the system's temporary folder), ``--ckpt-every-s``/``--ckpt-every-steps``
(periodic checkpoints, 0 = only on advice), ``--save-at-end``, ``--resume PATH``,
``--state-digest FILE`` (after every checkpoint written and right after a resume, one JSON line
``{"event": "checkpoint"|"resume", "step": N, "sha256": ..., "path": ...}``: SHA-256 over every
model and optimizer tensor's bytes, dtype and shape in a fixed order, and the optimizer's
hyper-parameters), ``--eval-every-s``, ``--log-every-s``, ``--paused-log-every-s``, ``--guard-gpu``
(the GPU named to the guard; default the CUDA index, 0 on the CPU), ``--simulate-oom-above N``
(for tests without a GPU: a micro-batch of more than N samples fails as out of memory).

Notes. ``effective_batch`` in lines and acks is the samples per optimizer step (always
``--effective-batch``; the last micro-batch of a step may be smaller, so ``batch_size *
accumulation_steps`` may exceed it). The guard's shrink caps the micro-batch for the rest of the
run (protocol version 1 has no advice to grow back; the controller's ``release`` is not called).
Acks carry ``work_ms``, the time the job spent acting, so a slow ack can be told from a slow
guard. The DataLoader's workers are started before the guard's socket is opened, so they never
hold it, and they ignore SIGINT, SIGTERM and SIGUSR1 (stopping is the training process's).

Exit codes: 0 done (duration or step count reached, or stopped by the guard's ``stop`` / SIGTERM
after its checkpoint); 1 any other failure; 2 bad usage; 3 no usable device or no torch; 5 out of
memory at a fixed batch (``--controller fixed``, or the search could shrink no further); 130 SIGINT
(after a checkpoint).
"""
from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import math
import os
import random
import signal
import sys
import tempfile
import time
from typing import Any, Dict, Iterator, List, Optional

_HERE = os.path.dirname(os.path.abspath(__file__))
_CLIENT = os.path.join(os.path.dirname(_HERE), "python")
if os.path.isdir(os.path.join(_CLIENT, "gpudoc")):
    sys.path.insert(0, _CLIENT)  # the client of this checkout (the GPU machine has no pip)

import _common as C  # noqa: E402  (workloads/ is on sys.path: this script's folder)
from _common import torch  # noqa: E402

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from gpudoc import (Advice, BatchSizeController, CheckpointError, Guard,  # noqa: E402
                    checkpoint, free_memory, is_oom_error, load_checkpoint, report)

EXIT_OOM = 5
EXIT_SIGINT = 130
CHECKPOINT_FORMAT = "gpudoc-guard-train/1"
CHECKPOINT_NAME = "guard_train.pt"

# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------


class Block(nn.Module):
    """Pre-norm block: causal self-attention and a 4x GELU MLP, each with dropout and a residual."""

    def __init__(self, width: int, heads: int, dropout: float, attention: str) -> None:
        super().__init__()
        self.heads, self.dropout, self.attention = heads, dropout, attention
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.out = nn.Linear(4 * width, width)
        self.drop = nn.Dropout(dropout)

    def attend(self, q: "torch.Tensor", k: "torch.Tensor", v: "torch.Tensor") -> "torch.Tensor":
        p = self.dropout if self.training else 0.0
        sdpa = getattr(F, "scaled_dot_product_attention", None)
        if self.attention == "sdpa" and sdpa is not None:
            return sdpa(q, k, v, dropout_p=p, is_causal=True)
        # Written out, as many training scripts do: the (time x time) scores are materialised,
        # so activation memory grows with the square of the context.
        t = q.shape[-2]
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
        mask = torch.ones(t, t, dtype=torch.bool, device=q.device).triu(1)
        weights = F.dropout(scores.masked_fill(mask, float("-inf")).softmax(dim=-1), p, self.training)
        return weights @ v

    def forward(self, x: "torch.Tensor") -> "torch.Tensor":
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        x = x + self.drop(self.proj(self.attend(q, k, v).transpose(1, 2).reshape(b, t, d)))
        return x + self.drop(self.out(F.gelu(self.fc(self.ln2(x)))))


class GPT(nn.Module):
    """Token and position embeddings, ``layers`` causal blocks, a head tied to the embedding."""

    def __init__(self, vocab: int, width: int, layers: int, heads: int, context: int,
                 dropout: float, attention: str) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(context, width)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(Block(width, heads, dropout, attention) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.tok.weight
        for module in self.modules():  # GPT-2's initialisation
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

    def loss(self, tokens: "torch.Tensor") -> "torch.Tensor":
        """Next-token cross-entropy of a (batch, context + 1) window."""
        idx = tokens[:, :-1]
        x = self.drop(self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device)))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))


# --------------------------------------------------------------------------------------------
# Synthetic data through a DataLoader
# --------------------------------------------------------------------------------------------


class SyntheticTokens(torch.utils.data.Dataset):
    """Sample ``i``: a (context + 1)-token sequence that depends only on (seed, i). Each is a walk
    through the vocabulary with a few step sizes and occasional jumps, so there is something to
    learn; negative indices are the evaluation set."""

    def __init__(self, vocab: int, context: int, seed: int) -> None:
        self.vocab, self.context, self.seed = vocab, context, seed

    def __len__(self) -> int:  # the sampler decides; this is only what len() reports
        return 1 << 62

    def __getitem__(self, index: int) -> "torch.Tensor":
        g = torch.Generator()
        g.manual_seed((self.seed * 1_000_003 + index) & 0x7FFF_FFFF_FFFF_FFFF)
        steps = torch.tensor([1, 2, 3, 5], dtype=torch.long)[torch.randint(0, 4, (self.context + 1,), generator=g)]
        jumps = torch.rand(self.context + 1, generator=g) < 0.05
        steps = torch.where(jumps, torch.randint(0, self.vocab, (self.context + 1,), generator=g), steps)
        return torch.cumsum(steps, 0) % self.vocab


class StepBatches(torch.utils.data.Sampler):
    """Index lists of ``size`` consecutive samples, one per optimizer step, from ``start`` on (the
    samples already seen when resuming), without end."""

    def __init__(self, start: int, size: int) -> None:
        self.start, self.size = start, size

    def __iter__(self) -> Iterator[List[int]]:
        first = self.start
        while True:
            yield list(range(first, first + self.size))
            first += self.size


def quiet_worker(_worker_id: int) -> None:
    """DataLoader workers leave stopping to the training process: a Ctrl-C or a SIGTERM sent to
    the whole process group must not kill them under it; SIGUSR1 is the guard's, for the job."""
    for name in ("SIGINT", "SIGTERM", "SIGUSR1"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)


def make_loader(args: argparse.Namespace, start_sample: int, pin: bool) -> Iterator["torch.Tensor"]:
    dataset = SyntheticTokens(args.vocab, args.context, args.seed)
    loader = torch.utils.data.DataLoader(
        dataset, batch_sampler=StepBatches(start_sample, args.effective_batch),
        num_workers=args.workers, pin_memory=pin,
        worker_init_fn=quiet_worker if args.workers > 0 else None,
        # Its own generator: the workers' seed is not drawn from the global RNG, whose state a
        # checkpoint restores (dropout draws from it), so a resumed run continues bit for bit.
        generator=torch.Generator().manual_seed(args.seed))
    return iter(loader)


# --------------------------------------------------------------------------------------------
# Controller, state digest, checkpoint
# --------------------------------------------------------------------------------------------


class FixedController(BatchSizeController):
    """``--controller fixed``: no search (settled from the start) and no retry after running out
    of memory (``on_oom`` declines, so ``run_step`` re-raises); the guard's shrink still applies."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.state = "settled"

    def on_oom(self) -> None:
        return None


def make_controller(args: argparse.Namespace) -> BatchSizeController:
    kind = FixedController if args.controller == "fixed" else BatchSizeController
    top = max(args.batch_size, args.max_batch or args.effective_batch)
    return kind(target_batch=args.effective_batch, micro_batch=args.batch_size,
                max_micro_batch=min(top, args.effective_batch), window=args.window, warmup=args.warmup,
                hold_steps=args.hold_steps)


def _tensor_bytes(t: "torch.Tensor") -> bytes:
    """The raw bytes of a tensor (any dtype, bf16 included), without numpy."""
    flat = t.detach().to("cpu").contiguous().reshape(-1)
    nbytes = flat.numel() * flat.element_size()
    return ctypes.string_at(flat.data_ptr(), nbytes) if nbytes else b""


def _digest_value(h: "hashlib._Hash", path: str, value: Any) -> None:
    if isinstance(value, torch.Tensor):
        h.update(f"{path}:{value.dtype}:{tuple(value.shape)}\n".encode())
        h.update(_tensor_bytes(value))
    elif isinstance(value, dict):
        for key in sorted(value, key=str):
            _digest_value(h, f"{path}/{key}", value[key])
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _digest_value(h, f"{path}[{i}]", item)
    else:
        h.update(f"{path}={json.dumps(value, sort_keys=True, default=str)}\n".encode())


def state_digest(model_state: Dict[str, Any], optimizer_state: Dict[str, Any]) -> str:
    """SHA-256 over every model and optimizer tensor (name, dtype, shape, bytes) in sorted key
    order, and the optimizer's hyper-parameters: equal digests mean bit-identical states."""
    h = hashlib.sha256()
    _digest_value(h, "model", dict(model_state))
    _digest_value(h, "optimizer", optimizer_state)
    return h.hexdigest()


MODEL_KEYS = ("vocab", "width", "layers", "heads", "context", "effective_batch", "seed")


class Trainer:
    """The model, optimizer, controller and counters of one run, and what each advice does."""

    def __init__(self, args: argparse.Namespace, device: "torch.device") -> None:
        self.args, self.device = args, device
        self.cuda = device.type == "cuda"
        torch.manual_seed(args.seed)
        random.seed(args.seed)
        self.model = GPT(args.vocab, args.width, args.layers, args.heads, args.context, args.dropout,
                         args.attention).to(device)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=args.lr, betas=(0.9, 0.95),
                                           weight_decay=0.1)
        self.controller = make_controller(args)
        self.step = 0
        self.samples_seen = 0
        self.paused = False
        self.last_checkpoint_step: Optional[int] = None
        self.last_checkpoint_path: Optional[str] = None
        self.checkpoints = 0
        self.pending_digest: Optional[tuple] = None

    # -- one optimizer step ----------------------------------------------------------------------

    def train_step(self, batch: "torch.Tensor") -> "torch.Tensor":
        """One optimizer step over ``batch`` (the effective batch) in micro-batches; returns the
        mean loss as a tensor (no host sync here beyond the controller's)."""
        self.model.train()

        def micro(part: "torch.Tensor", weight: float) -> "torch.Tensor":
            if self.args.simulate_oom_above and len(part) > self.args.simulate_oom_above:
                raise RuntimeError(f"CUDA out of memory (simulated by --simulate-oom-above: a micro-batch of "
                                   f"{len(part)} > {self.args.simulate_oom_above})")
            tokens = part.to(self.device, non_blocking=self.cuda and part.is_pinned())
            with torch.autocast(device_type=self.device.type, dtype=torch.bfloat16, enabled=self.cuda):
                loss = self.model.loss(tokens)
            (loss * weight).backward()
            return loss.detach() * weight

        losses = self.controller.run_step(micro, batch, zero_grad=self.zero_grad)
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.zero_grad()
        self.step += 1
        self.samples_seen += len(batch)
        return torch.stack(losses).sum()

    def zero_grad(self) -> None:
        self.optimizer.zero_grad(set_to_none=True)

    def evaluate(self, batches: int) -> float:
        data = SyntheticTokens(self.args.vocab, self.args.context, self.args.seed)
        size = min(self.controller.micro_batch, self.args.effective_batch)
        self.model.eval()
        total = 0.0
        with torch.no_grad():
            for b in range(batches):
                tokens = torch.stack([data[-1 - b * size - i] for i in range(size)]).to(self.device)
                with torch.autocast(device_type=self.device.type, dtype=torch.bfloat16, enabled=self.cuda):
                    total += float(self.model.loss(tokens))
        self.model.train()
        return total / max(1, batches)

    # -- checkpoint and resume -------------------------------------------------------------------

    def state(self) -> Dict[str, Any]:
        rng: Dict[str, Any] = {"torch": torch.get_rng_state(), "python": random.getstate()}
        if self.cuda:
            rng["cuda"] = torch.cuda.get_rng_state_all()
        return {"format": CHECKPOINT_FORMAT, "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(), "step": self.step,
                "samples_seen": self.samples_seen, "rng": rng,
                "controller": dict(vars(self.controller)), "controller_kind": self.args.controller,
                "config": {k: getattr(self.args, k) for k in MODEL_KEYS}, "time_unix": time.time()}

    def save(self, reason: str) -> Dict[str, Any]:
        """Write the checkpoint (between steps only); returns what the ack and the log say."""
        started = time.perf_counter()
        state = self.state()
        path = checkpoint(state, os.path.join(self.args.ckpt_dir, CHECKPOINT_NAME))
        ckpt_ms = (time.perf_counter() - started) * 1e3
        self.last_checkpoint_step, self.last_checkpoint_path = self.step, path
        self.checkpoints += 1
        if self.args.state_digest:
            # Hashed after the ack (write_digest): the tensors do not change before the next step.
            self.pending_digest = (self.step, path, state["model"], state["optimizer"])
        C.emit({"event": "checkpoint", "step": self.step, "path": path, "reason": reason,
                "ckpt_ms": ckpt_ms, "mib": C.mib(os.path.getsize(path)), "time_unix": time.time()})
        return {"checkpoint_path": path, "step": self.step, "ckpt_ms": round(ckpt_ms, 1)}

    def write_digest(self) -> None:
        """Append the digest of the checkpoint written last, if not done yet (before any step)."""
        if self.pending_digest is not None:
            step, path, model, optimizer = self.pending_digest
            self.pending_digest = None
            append_digest(self.args.state_digest, "checkpoint", step, state_digest(model, optimizer), path)

    def restore(self, path: str) -> None:
        state = load_checkpoint(path)
        if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
            raise CheckpointError(f"{path} is not a guard_train checkpoint")
        config = {k: getattr(self.args, k) for k in MODEL_KEYS}
        if state["config"] != config:
            raise CheckpointError(f"{path} was written with {state['config']}, this run has {config}")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.step, self.samples_seen = state["step"], state["samples_seen"]
        vars(self.controller).update(state["controller"])
        torch.set_rng_state(state["rng"]["torch"])
        random.setstate(state["rng"]["python"])
        if self.cuda and "cuda" in state["rng"]:
            torch.cuda.set_rng_state_all(state["rng"]["cuda"])
        self.last_checkpoint_step, self.last_checkpoint_path = self.step, os.path.abspath(path)
        if self.args.state_digest:
            digest = state_digest(self.model.state_dict(), self.optimizer.state_dict())
            append_digest(self.args.state_digest, "resume", self.step, digest, os.path.abspath(path))


def append_digest(path: str, event: str, step: int, digest: str, ckpt: str) -> None:
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps({"event": event, "step": step, "sha256": digest, "path": ckpt,
                              "time_unix": time.time()}) + "\n")
        out.flush()
        os.fsync(out.fileno())


# --------------------------------------------------------------------------------------------
# Advice
# --------------------------------------------------------------------------------------------


class Loop:
    """The training loop: steps, step lines, evaluation, and the advice of the guard."""

    def __init__(self, args: argparse.Namespace, trainer: Trainer, guard: Guard) -> None:
        self.args, self.trainer, self.guard = args, trainer, guard
        self.stop_reason: Optional[str] = None   # "guard", "signal", "SIGINT", "duration", "steps"
        self.exit_code = C.EXIT_OK
        self.sigint = False
        self.changes_seen = len(trainer.controller.history)

    # -- acting on advice ------------------------------------------------------------------------

    def handle(self, advice: Advice) -> None:
        started = time.perf_counter()
        action = advice.action
        handler = {"shrink_batch": self.on_shrink, "checkpoint_now": self.on_checkpoint,
                   "pause_noncritical": self.on_pause, "resume_noncritical": self.on_resume,
                   "stop": self.on_stop}.get(action)
        if handler is None:
            status, details = "unsupported", {"error": f"guard_train does not act on {action!r}"}
        else:
            try:
                status, details = handler(advice)
            except (CheckpointError, OSError, RuntimeError, ValueError) as error:
                status, details = "failed", {"error": f"{type(error).__name__}: {error}"[:500]}
        details["work_ms"] = round((time.perf_counter() - started) * 1e3, 1)
        acked = self.guard.ack(advice, status, **details)
        self.trainer.write_digest()
        C.emit({"event": "advice", "id": advice.id, "action": action, "level": advice.level,
                "source": advice.source, "status": status, "acked": acked, "step": self.trainer.step,
                **details, "time_unix": time.time()})

    def on_shrink(self, advice: Advice) -> tuple:
        ctl = self.trainer.controller
        before = {"previous_batch_size": ctl.micro_batch, "previous_accumulation_steps": ctl.accumulation_steps}
        factor = advice.factor
        if factor is None or not 0 < factor < 1:
            return "failed", {"error": f"shrink_batch needs a factor in (0, 1), got {factor!r}", **before}
        change = ctl.shrink(factor)
        self.note_changes()
        details = {"batch_size": ctl.micro_batch, "accumulation_steps": ctl.accumulation_steps,
                   "effective_batch": ctl.target_batch,
                   "factor": factor, **before}
        if change is None:
            return "refused", {**details, "error": "the micro-batch is at its minimum already"}
        return "done", details

    def on_checkpoint(self, advice: Advice) -> tuple:
        return "done", self.trainer.save(f"advice:{advice.source}")

    def on_pause(self, _advice: Advice) -> tuple:
        self.trainer.paused = True
        return "done", {"paused": True, "eval_paused": True, "log_every_s": self.args.paused_log_every_s}

    def on_resume(self, _advice: Advice) -> tuple:
        self.trainer.paused = False
        return "done", {"paused": False, "log_every_s": self.args.log_every_s}

    def on_stop(self, advice: Advice) -> tuple:
        t = self.trainer
        if t.last_checkpoint_step == t.step and t.last_checkpoint_path:
            details = {"checkpoint_path": t.last_checkpoint_path, "step": t.step, "ckpt_ms": 0.0,
                       "checkpoint_reused": True}
        else:
            details = t.save(f"stop:{advice.source}")
        self.stop_reason = "guard" if advice.source == "guard" else "signal"
        return "done", {**details, "stopped": True}

    def poll(self) -> None:
        for advice in self.guard.poll():
            self.handle(advice)
        if self.sigint and self.stop_reason is None:
            t = self.trainer
            if t.last_checkpoint_step != t.step:
                t.save("SIGINT")
                t.write_digest()
            self.stop_reason, self.exit_code = "SIGINT", EXIT_SIGINT

    def note_changes(self) -> None:
        history = self.trainer.controller.history
        for change in history[self.changes_seen:]:
            C.emit({"event": "batch_change", "step": self.trainer.step, "old": change.old,
                    "new": change.new, "accumulation_steps": change.accumulation_steps,
                    "reason": change.reason, "time_unix": time.time()})
        self.changes_seen = len(history)

    # -- the loop --------------------------------------------------------------------------------

    def run(self, loader: Iterator["torch.Tensor"], t0: float) -> bool:
        """Train until a stop; False when a fixed batch ran out of memory."""
        args, t = self.args, self.trainer
        interval = {"t": time.perf_counter(), "samples": 0, "steps": 0, "data_ms": 0.0, "step_ms": 0.0}
        last_eval = last_ckpt = time.perf_counter()
        loss = None
        while True:
            self.poll()
            if self.stop_reason is not None:
                return True
            now = time.perf_counter()
            if now - t0 >= args.duration or (args.max_steps and t.step >= args.max_steps):
                self.stop_reason = "duration" if now - t0 >= args.duration else "steps"
                return True
            begin = time.perf_counter()
            batch = next(loader)
            data_ms = (time.perf_counter() - begin) * 1e3
            try:
                loss = t.train_step(batch)
            except BaseException as error:  # noqa: B902 - only out-of-memory is handled
                if not is_oom_error(error):
                    raise
                self.on_oom(error)
                return False
            if t.cuda:
                torch.cuda.synchronize(t.device)
            self.note_changes()
            done = time.perf_counter()
            interval["samples"] += len(batch)
            interval["steps"] += 1
            interval["data_ms"] += data_ms
            interval["step_ms"] += (done - begin) * 1e3
            every = args.paused_log_every_s if t.paused else args.log_every_s
            if done - interval["t"] >= every:
                self.step_line(interval, done, loss, t0)
                interval = {"t": done, "samples": 0, "steps": 0, "data_ms": 0.0, "step_ms": 0.0}
            if args.eval_every_s and not t.paused and done - last_eval >= args.eval_every_s:
                eval_loss = t.evaluate(args.eval_batches)
                last_eval = time.perf_counter()
                C.emit({"event": "eval", "step": t.step, "loss": eval_loss, "eval_ms": (last_eval - done) * 1e3,
                        "time_unix": time.time()})
            periodic = ((args.ckpt_every_s and done - last_ckpt >= args.ckpt_every_s)
                        or (args.ckpt_every_steps and t.step % args.ckpt_every_steps == 0))
            if periodic:
                t.save("periodic")
                t.write_digest()
                last_ckpt = time.perf_counter()

    def step_line(self, interval: Dict[str, Any], now: float, loss: Any, t0: float) -> None:
        t, ctl = self.trainer, self.trainer.controller
        seconds = max(now - interval["t"], 1e-9)
        steps = max(1, interval["steps"])
        report(step=t.step, samples_per_s=interval["samples"] / seconds, batch_size=ctl.micro_batch,
               accumulation_steps=ctl.accumulation_steps, effective_batch=ctl.target_batch,
               loss=float(loss) if loss is not None else None, step_ms=interval["step_ms"] / steps,
               data_ms=interval["data_ms"] / steps, n=interval["steps"], controller=ctl.state,
               settled=ctl.settled, paused=t.paused, t=now - t0, time_unix=time.time())

    def on_oom(self, error: BaseException) -> None:
        ctl = self.trainer.controller
        C.emit({"event": "oom", "step": self.trainer.step, "batch_size": ctl.micro_batch,
                "controller": self.args.controller, "error": str(error).splitlines()[0][:300],
                "time_unix": time.time()})
        self.trainer.zero_grad()
        del error
        free_memory()
        self.stop_reason, self.exit_code = "oom", EXIT_OOM


# --------------------------------------------------------------------------------------------
# Command line and main
# --------------------------------------------------------------------------------------------


def device_arg(text: str) -> str:
    if text != "cpu" and not text.isdigit():
        raise argparse.ArgumentTypeError(f"--device is a CUDA index or 'cpu', not {text!r}")
    return text


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--device", type=device_arg, default="0", help="CUDA index, or cpu")
    p.add_argument("--duration", type=C.positive_float, default=60.0, help="seconds of training")
    p.add_argument("--max-steps", type=int, default=0, help="stop after this optimizer step (0: no limit)")
    p.add_argument("--batch-size", type=C.positive_int, default=8, help="the first micro-batch")
    p.add_argument("--effective-batch", type=C.positive_int, default=32, help="samples per optimizer step")
    p.add_argument("--max-batch", type=int, default=0, help="largest micro-batch tried (0: the effective batch)")
    p.add_argument("--controller", choices=("seek", "fixed"), default="seek")
    p.add_argument("--window", type=C.positive_int, default=8, help="steps measured per micro-batch size")
    p.add_argument("--warmup", type=int, default=2, help="steps not measured after a size change")
    p.add_argument("--hold-steps", type=C.positive_int, default=100, help="controller: steps between regrowths")
    p.add_argument("--width", type=C.positive_int, default=384)
    p.add_argument("--layers", type=C.positive_int, default=4)
    p.add_argument("--heads", type=C.positive_int, default=6)
    p.add_argument("--context", type=C.positive_int, default=256, help="tokens per sample")
    p.add_argument("--vocab", type=C.positive_int, default=8192)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--attention", choices=("sdpa", "naive"), default="sdpa",
                   help="naive: scores materialised (memory grows with context squared)")
    p.add_argument("--lr", type=C.positive_float, default=3e-4)
    p.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ckpt-dir", default=None, help="checkpoint folder (default: a new private temporary one)")
    p.add_argument("--ckpt-every-s", type=float, default=0.0, help="periodic checkpoints (0: off)")
    p.add_argument("--ckpt-every-steps", type=int, default=0, help="periodic checkpoints (0: off)")
    p.add_argument("--save-at-end", action="store_true", help="checkpoint when the duration or step count ends")
    p.add_argument("--resume", default=None, metavar="PATH", help="restore a checkpoint of this script")
    p.add_argument("--state-digest", default=None, metavar="FILE", help="append state digests here")
    p.add_argument("--eval-every-s", type=float, default=10.0, help="periodic evaluation (0: off)")
    p.add_argument("--eval-batches", type=C.positive_int, default=2)
    p.add_argument("--log-every-s", type=C.positive_float, default=1.0, help="step lines")
    p.add_argument("--paused-log-every-s", type=C.positive_float, default=10.0, help="step lines while paused")
    p.add_argument("--guard-gpu", type=int, default=None, help="GPU named to the guard (default: the device)")
    p.add_argument("--simulate-oom-above", type=int, default=0, metavar="N",
                   help="tests without a GPU: a micro-batch over N samples raises an out-of-memory error")
    args = p.parse_args(argv)
    if args.width % args.heads:
        p.error("--width must be a multiple of --heads")
    if args.workers < 0 or args.max_steps < 0 or args.warmup < 0 or not 0 <= args.dropout < 1:
        p.error("--workers, --max-steps and --warmup must be >= 0, --dropout in [0, 1)")
    if args.batch_size > args.effective_batch:
        p.error("--batch-size must not exceed --effective-batch")
    return args


def open_device(args: argparse.Namespace) -> "torch.device":
    if args.device == "cpu":
        return torch.device("cpu")
    return C.init_device(int(args.device))


def main() -> int:
    args = parse_args()
    started = time.perf_counter()
    device = open_device(args)
    own_dir = args.ckpt_dir is None
    if own_dir:
        args.ckpt_dir = tempfile.mkdtemp(prefix="gpudoc-guard-train-")
    os.makedirs(args.ckpt_dir, exist_ok=True)
    trainer = Trainer(args, device)
    if args.resume:
        trainer.restore(args.resume)
    # The loader's workers fork before the guard connects, so they never hold its socket.
    loader = make_loader(args, trainer.samples_seen, pin=device.type == "cuda")
    next_batch = next(loader)
    gpu = args.guard_gpu if args.guard_gpu is not None else (0 if device.type == "cpu" else device.index)
    guard = Guard(name="guard_train", gpus=[gpu], signals=True)
    loop = Loop(args, trainer, guard)
    signal.signal(signal.SIGINT, lambda *_: setattr(loop, "sigint", True))
    info = C.device_info(device) if device.type == "cuda" else {"device": "cpu", "torch": torch.__version__}
    params = {k: v for k, v in vars(args).items() if k != "device"}
    params["lr"] = f"{args.lr:g}"  # the line protocol rounds floats to 3 decimals
    C.emit({"workload": "guard_train", "event": "start", **params, **info,
            "parameters": sum(p.numel() for p in trainer.model.parameters()),
            "guard_connected": guard.connected, "resumed_from": args.resume, "step": trainer.step,
            "setup_s": time.perf_counter() - started, "pid": os.getpid(), "time_unix": time.time()})
    t0 = time.perf_counter()
    loader = _chain_first(next_batch, loader)
    error: Optional[str] = None
    try:
        loop.run(loader, t0)
        if loop.stop_reason in ("duration", "steps") and args.save_at_end:
            trainer.save("end")
            trainer.write_digest()
    except BaseException as exc:
        error = f"{type(exc).__name__}: {exc}"[:500]
        raise
    finally:
        C.emit({"workload": "guard_train", "event": "end", "steps": trainer.step,
                "elapsed_s": time.perf_counter() - t0,
                "stopped": loop.stop_reason in ("guard", "signal"), "stopped_by": loop.stop_reason,
                "oom": loop.stop_reason == "oom", "checkpoint_path": trainer.last_checkpoint_path,
                "checkpoint_step": trainer.last_checkpoint_step, "checkpoints": trainer.checkpoints,
                "batch_size": trainer.controller.micro_batch,
                "accumulation_steps": trainer.controller.accumulation_steps,
                "guard_lines_dropped": guard.dropped_sends, **({"error": error} if error else {}),
                "time_unix": time.time()})
        guard.close("error" if error else "done")
        if own_dir and not os.listdir(args.ckpt_dir):
            os.rmdir(args.ckpt_dir)  # a private folder this run made and wrote nothing into
    return loop.exit_code


def _chain_first(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest


if __name__ == "__main__":
    try:
        rc = main()
    except CheckpointError as exc:
        C.log(f"checkpoint: {exc}")
        rc = C.EXIT_FAILURE
    sys.stdout.flush()
    sys.exit(rc)
