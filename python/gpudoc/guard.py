"""``Guard``: the job's end of the channel to ``gpudoc guard`` (docs/guard-protocol.md).

    from gpudoc import Guard
    with Guard(name="train", gpus=[0]) as guard:      # no socket: a no-op guard, said once
        for step in range(steps):
            for advice in guard.poll():                 # never blocks
                if advice.action == "checkpoint_now":
                    path = save()
                    guard.ack(advice, checkpoint_path=path)
            guard.report(step=step, samples_per_s=sps)

A daemon thread reads the socket and queues advice; sends never block the training step: a
line that does not fit the outgoing buffer is dropped and counted. The guard going away, garbage
lines, partial lines and over-long lines never raise into the training loop.

What a hostile or broken guard can send is bounded: every line is handled on its own (whatever
goes wrong with one is caught, counted in ``lines_rejected`` and answered with an ``error``, and
the reader goes on with the next); an advice is held to the protocol's table before it is queued
(``protocol.check_advice``: a ``shrink_batch`` factor is a finite number in (0, 1), so
``ctl.shrink(advice.factor)`` cannot fail on it); the queue keeps at most ``MAX_QUEUED_ADVICE``
advices (dropping the least severe, oldest first, never a stop while anything else can go:
``advice_dropped``), the guard's errors at most ``MAX_KEPT_ERRORS``, and a line at most
``protocol.MAX_LINE_BYTES`` bytes while it is read.
"""
from __future__ import annotations

import collections
import errno
import itertools
import json
import logging
import os
import select
import signal
import socket
import stat
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Deque, Dict, Iterable, List, Optional, TextIO, Tuple

from . import deferred, protocol
from .rank import rank_from_env

__all__ = ["Advice", "Guard"]

DEFAULT_CAPABILITIES = ("shrink_batch", "checkpoint_now", "pause_noncritical", "resume_noncritical", "stop")
# How much not-yet-sent output may wait for a slow guard before new lines are dropped.
MAX_PENDING_BYTES = 256 * 1024
# What each opted-in signal means (the guard sends them through a pidfd).
SIGNAL_ACTIONS = {"SIGUSR1": "checkpoint_now", "SIGTERM": "stop"}
# Advices waiting for poll(): when full, the least severe (then the oldest) goes first; a stop or
# a level-3 advice goes only when every queued one is one too (then the new one: the loop has
# plenty to stop on). With protocol.check_advice's limits on each advice, 256 of them hold at
# most about 12 MB however a guard fills them; the guard's own advices, under 1 MB.
MAX_QUEUED_ADVICE = 256
# The guard's error messages kept in ``errors_received`` (the newest; older ones are counted).
MAX_KEPT_ERRORS = 64

_active: Optional["Guard"] = None
# What the client has to say (no guard, the guard gone, lines refused) goes to this logger, at
# WARNING (INFO for "no guard": the usual case outside a guard). The package adds only a
# NullHandler, so nothing reaches stderr unless the program configures logging.
log = logging.getLogger("gpudoc")


def active_guard() -> Optional["Guard"]:
    """The guard connected most recently and still open (``gpudoc.report`` sends through it)."""
    return _active


@dataclass
class Advice:
    """One piece of advice from the guard (or from an opted-in signal: ``source == "signal"``).

    ``factor`` is set for ``shrink_batch`` (the new batch over the old, e.g. 0.75); ``reason``
    holds the guard's numbers (forecast, horizon, thresholds); ``raw`` is the whole message."""

    id: Optional[str]
    level: int
    action: str
    factor: Optional[float] = None
    reason: Dict[str, Any] = field(default_factory=dict)
    message: str = ""
    deadline_unix: Optional[float] = None
    source: str = "guard"
    raw: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_message(cls, message: Dict[str, Any],
                     actions: Iterable[str] = protocol.ACTIONS) -> "Advice":
        """An advice from a decoded ``advice`` message, held to the protocol's table first
        (``protocol.check_advice``; ``actions``: those the job declared). Raises
        ``protocol.ProtocolError`` (a ValueError, code ``bad_advice``) for one that breaks it:
        an advice is never made half-valid."""
        fields = protocol.check_advice(message, actions)
        return cls(raw=message, **fields)

    @property
    def critical(self) -> bool:
        """A stop, or an advice of the last level: the bounded queue keeps it above all others."""
        return self.action == "stop" or self.level >= 3

    def _severity(self) -> int:
        return 3 if self.critical else max(0, min(self.level, 2))


class Guard:
    """A connection to ``gpudoc guard``, or a no-op stand-in when there is none.

    ``path``: the socket; default ``$GPUDOC_GUARD_SOCKET``. Without one, or when it cannot be
    reached, every method does nothing and one log record (logger ``gpudoc``) says why. ``name``, ``gpus`` (CUDA
    indices and/or UUIDs; default ``$CUDA_VISIBLE_DEVICES``) and ``capabilities`` (the actions this
    job acts on) go into the hello. ``signals=True`` opts in to the guard's signals (SIGUSR1:
    checkpoint now, SIGTERM: stop): they arrive through ``poll()`` as advice with
    ``source == "signal"`` (handlers are installed only from the main thread). ``rank``: the
    job's rank, sent in the hello and added to every report; default from the environment
    (``gpudoc.rank``: RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, LOCAL_RANK), None when none is set.

    Thread safety: ``poll``, ``ack``, ``report`` and ``close`` may be called from any thread.

    Counters, read at any time (the reader thread updates them):

    - ``lines_received``: lines read from the guard; ``lines_sent``: lines handed to the socket.
    - ``lines_rejected``: lines from the guard not acted on: over-long, not JSON, not an object,
      nested deeper than 32 levels, a missing ``v`` or ``type``, another version, an unknown type,
      an advice that breaks the protocol (also in ``advice_rejected``), or one whose handling
      failed. Each is answered with an ``error`` (while the outgoing buffer is at most half
      full, so that acks keep their room) and none stops the reader. ``garbage_lines`` is the
      older name of the same count.
    - ``advice_rejected``: advices refused whole (``bad_advice``; ack ``failed``, or
      ``unsupported`` for an action this job did not declare, when the advice has a usable id).
    - ``advice_dropped``: valid advices dropped because ``MAX_QUEUED_ADVICE`` were waiting for
      ``poll()``; the guard hears of it in an ``error`` (``advice_dropped``, at most one between
      two polls) and in the ``advice_dropped`` of every ``report`` and the ``bye``.
    - ``dropped_sends``: lines not sent (buffer full, too long, guard gone).
    - ``errors_received``: the guard's last ``MAX_KEPT_ERRORS`` error messages (a deque);
      ``errors_dropped``: the older ones not kept.
    - ``queued``: advices waiting for ``poll()``.

    Should the reader thread stop on something it cannot carry on from, ``connected`` turns
    False, one log record says why, and the guard becomes a no-op as if it had gone away.

    What the client has to say goes to the ``logging`` logger ``"gpudoc"`` (each kind of event
    once at WARNING, or INFO for "no guard"; its repeats at DEBUG), which has only a NullHandler:
    nothing reaches stderr unless the program configures logging. ``stderr``: a stream that gets
    the same lines too ("gpudoc: ..."), each kind once."""

    def __init__(self, path: Optional[str] = None, *, name: Optional[str] = None,
                 gpus: Any = None, capabilities: Iterable[str] = DEFAULT_CAPABILITIES,
                 signals: bool = False, stderr: Optional[TextIO] = None,
                 connect_timeout_s: float = 2.0, rank: Optional[int] = None) -> None:
        self._stderr = stderr
        self._deferred = deferred.Deferred()
        self._lock = threading.Lock()
        # Queued advice by severity (0: resume, 1, 2, 3: critical), each oldest first, as
        # (arrival number, advice); signals have their own queue (a handler takes no lock).
        self._queue_lock = threading.Lock()
        self._queues: Tuple[Deque[Tuple[int, Advice]], ...] = tuple(collections.deque() for _ in range(4))
        self._signalled: Deque[Tuple[int, Advice]] = collections.deque()
        self._arrival = itertools.count()
        self._drop_told = False       # an advice_dropped error went out since the last poll
        self._pending = bytearray()
        self._stop = threading.Event()
        self._said: set = set()
        self._sock: Optional[socket.socket] = None
        self._reader: Optional[threading.Thread] = None
        self.welcome: Optional[Dict[str, Any]] = None
        self.lines_rejected = 0       # lines from the guard not acted on (class docstring)
        self.advice_rejected = 0      # advices that broke the protocol's table
        self.advice_dropped = 0       # valid advices dropped: the queue was full
        self.dropped_sends = 0        # lines not sent: buffer full, too long, or guard gone
        self.lines_received = 0
        self.lines_sent = 0
        self.errors_received: Deque[Dict[str, Any]] = collections.deque(maxlen=MAX_KEPT_ERRORS)
        self.errors_dropped = 0
        self._splitter = protocol.LineSplitter()
        self.capabilities = [c for c in capabilities]
        self.signals = bool(signals)
        self.name = name if name is not None else os.path.basename(sys.argv[0] or "python")
        self.gpus = gpus if gpus is not None else os.environ.get("CUDA_VISIBLE_DEVICES")
        found = rank_from_env()
        self.rank: Optional[int] = rank if rank is not None else (found[0] if found else None)
        if self.signals:
            self._install_signal_handlers()
        path = path if path is not None else os.environ.get(protocol.SOCKET_ENV)
        self.path = path
        if not path:
            self._say("no-socket", f"no guard ({protocol.SOCKET_ENV} is not set): "
                                   "guard advice is off, training runs as usual", logging.INFO)
            return
        self._connect(path, connect_timeout_s)

    # -- public -------------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """True while the socket to the guard is open, the guard has not gone away and the reader
        thread runs."""
        reader = self._reader
        return self._sock is not None and (reader is None or reader.is_alive())

    @property
    def garbage_lines(self) -> int:
        """The older name of ``lines_rejected``."""
        return self.lines_rejected

    @property
    def queued(self) -> int:
        """How many advices wait for ``poll()`` (at most ``MAX_QUEUED_ADVICE`` from the guard,
        and one per signal)."""
        return sum(len(q) for q in self._queues) + len(self._signalled)

    def hello(self) -> bool:
        """Send the hello (done once by the constructor when connected). False when not sent."""
        indices, uuids = protocol.split_gpus(self.gpus)
        body: Dict[str, Any] = {"type": "hello", "pid": os.getpid(), "name": self.name,
                                "gpus": [*indices, *uuids], "capabilities": self.capabilities,
                                "signals": [SIGNAL_ACTIONS[s] for s in SIGNAL_ACTIONS] if self.signals else [],
                                "client": "gpudoc-python " + _version()}
        if self.rank is not None:
            body["rank"] = self.rank
        return self._send(body)

    def poll(self) -> List[Advice]:
        """Every advice received since the last call, oldest first; never blocks. Each one holds
        to the protocol's table (``Advice.from_message``); when the loop polled too rarely, the
        least severe were dropped (``advice_dropped``)."""
        taken: List[Tuple[int, Advice]] = []
        with self._queue_lock:
            for queue in self._queues:
                taken.extend(queue)
                queue.clear()
            self._drop_told = False
        while True:  # popleft one by one: a signal handler may append meanwhile
            try:
                taken.append(self._signalled.popleft())
            except IndexError:
                break
        taken.sort(key=lambda item: item[0])
        return [advice for _, advice in taken]

    def ack(self, advice: Advice, status: str = "done", **what_was_done: Any) -> bool:
        """Tell the guard what was done about ``advice``: ``status`` is ``done``, ``refused``,
        ``failed`` or ``unsupported``; keywords carry the details (``batch_size``,
        ``accumulation_steps``, ``checkpoint_path``, ...). Advice from a signal has no one to
        answer: False. False too when the line could not be sent (never blocks)."""
        if advice.id is None:
            return False
        body = {"type": "ack", "id": advice.id, "action": advice.action, "status": status,
                **what_was_done}
        return self._send(body)

    def report(self, **figures: Any) -> bool:
        """Send figures (``step``, ``samples_per_s``, ``loss``, ...) to the guard; never blocks.
        ``gpudoc.report`` also prints them as a ``::gpudoc`` line. ``rank`` is added when the job
        has one. A tensor on a GPU is sent later, in a report of its own with this one's ``step``,
        ``epoch`` and ``rank``, once the GPU has computed it (``gpudoc.deferred``: reading it now
        would make the host wait for the GPU); the reports that became ready go first."""
        if self.rank is not None and "rank" not in figures:
            figures = {"rank": self.rank, **figures}
        late, now = self._deferred.take(figures)
        for earlier in late:
            self._send_report(earlier)
        return self._send_report(now)

    def _send_report(self, figures: Dict[str, Any]) -> bool:
        body: Dict[str, Any] = {"type": "report", "figures": figures}
        if self.dropped_sends:
            body["dropped"] = self.dropped_sends
        body.update(self._counts(always=False))
        return self._send(body)

    def _counts(self, always: bool) -> Dict[str, int]:
        """What the guard hears of in a report (when not 0) and the bye (always)."""
        counts = {"advice_dropped": self.advice_dropped, "lines_rejected": self.lines_rejected}
        return {k: v for k, v in counts.items() if always or v}

    def close(self, reason: str = "done") -> None:
        """Say bye (``reason``: ``done``, ``error``, ``interrupted``; leaving a ``with`` block
        chooses it by ``exit_reason``) and close; safe to call twice."""
        global _active
        if self._sock is not None:
            # The figures still waiting for the GPU: waited for after a normal end (the loop is
            # over); after an error or Ctrl-C only those ready now (the GPU may be what failed).
            if reason == "done":
                from . import metrics  # metrics imports this module
                metrics.flush()
            for earlier in self._deferred.flush(wait=reason == "done"):
                self._send_report(earlier)
            self._send({"type": "bye", "reason": reason, "dropped": self.dropped_sends,
                        **self._counts(always=True)})
            self._flush(final=True)
        self._stop.set()
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout=1.0)
        self._drop_socket()
        if _active is self:
            _active = None

    def __enter__(self) -> "Guard":
        return self

    def __exit__(self, exc_type: Any, exc: Any, _tb: Any) -> None:
        self.close(exit_reason(exc_type, exc))

    # -- connection ---------------------------------------------------------------------------

    def _connect(self, path: str, timeout_s: float) -> None:
        global _active
        shown = json.dumps(path)
        try:
            info = os.stat(path)
            if not stat.S_ISSOCK(info.st_mode):
                raise OSError(errno.ENOTSOCK, "not a socket")
            if info.st_uid not in (os.getuid(), 0):
                raise OSError(errno.EPERM, f"owned by uid {info.st_uid}, not by this user or root")
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(timeout_s)
            sock.connect(path)
            sock.setblocking(False)
        except OSError as error:
            self._say("connect", f"cannot reach the guard at {shown}: "
                                 f"{error.strerror or error}; guard advice is off, training runs as usual")
            return
        self._sock = sock
        _active = self
        self.hello()
        self._reader = threading.Thread(target=self._read_loop, name="gpudoc-guard-reader", daemon=True)
        self._reader.start()

    def _drop_socket(self) -> None:
        with self._lock:
            sock, self._sock = self._sock, None
            self._pending.clear()
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    def _gone(self, why: str) -> None:
        if self._sock is not None and not self._stop.is_set():
            self._say("gone", f"the guard went away ({why}); training carries on without it")
        self._drop_socket()

    # -- sending ------------------------------------------------------------------------------

    def _send(self, body: Dict[str, Any], answer: bool = False) -> bool:
        """Queue a line and write what the socket takes; never blocks, never raises (what cannot
        be encoded, a deep or circular value too, is dropped and counted). ``answer``: the
        reader's answer to a line (an error): it may fill only half of the outgoing buffer."""
        if self._sock is None:
            return False
        try:
            line = protocol.encode(body)
        except Exception as error:  # ProtocolError, TypeError, ValueError, RecursionError, ...
            self.dropped_sends += 1
            self._say("encode", f"a {body.get('type')!r} line was not sent: "
                                f"{type(error).__name__}: {str(error)[:200]}")
            return False
        limit = MAX_PENDING_BYTES // 2 if answer else MAX_PENDING_BYTES
        with self._lock:
            if self._sock is None:
                return False
            if len(self._pending) + len(line) > limit:
                self.dropped_sends += 1
                self._say("full", "the guard reads slowly; lines are dropped (counted, "
                                  "sent in the next report)")
                return False
            self._pending += line
            self.lines_sent += 1
        self._flush()
        return True

    def _flush(self, final: bool = False) -> None:
        """Write what waits without blocking (``final``: give a slow guard up to 0.5 s)."""
        deadline = time.monotonic() + (0.5 if final else 0.0)
        while True:
            with self._lock:
                sock = self._sock
                if sock is None or not self._pending:
                    return
                broken: Optional[OSError] = None
                try:
                    sent = sock.send(self._pending, socket.MSG_DONTWAIT | socket.MSG_NOSIGNAL)
                    del self._pending[:sent]
                    continue
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError as error:
                    broken = error
            if broken is not None:
                self._gone(broken.strerror or str(broken))
                return
            if time.monotonic() >= deadline:
                return
            select.select([], [sock], [], max(0.0, deadline - time.monotonic()))

    # -- receiving ----------------------------------------------------------------------------

    def _read_loop(self) -> None:
        try:
            self._read_until_stopped()
        except Exception as error:  # a failure outside any one line: stop, and say so once
            if self._sock is not None and not self._stop.is_set():
                self._say("reader", f"the guard's reader stopped ({type(error).__name__}: "
                                    f"{str(error)[:200]}); training carries on without the guard")
            self._drop_socket()

    def _read_until_stopped(self) -> None:
        while not self._stop.is_set():
            sock = self._sock
            if sock is None:
                return
            try:
                readable, _, _ = select.select([sock], [], [], 0.1)
                data = sock.recv(65536) if readable else None
            except (BlockingIOError, InterruptedError):
                continue
            except (OSError, ValueError) as error:  # ValueError: closed under us
                self._gone(getattr(error, "strerror", None) or str(error))
                return
            if data is None:
                self._flush()
                continue
            if not data:
                self._gone("it closed the connection")
                return
            # In bounded memory however long a line; None: a line too long, in its place.
            for line in self._splitter.feed(data, mark_too_long=True):
                if line is None:
                    self.lines_rejected += 1
                    self._send(protocol.error_message(protocol.ERR_LINE_TOO_LONG,
                                                      f"a line over {protocol.MAX_LINE_BYTES} bytes was skipped"),
                               answer=True)
                else:
                    self._take_line(line)
            self._flush()

    def _take_line(self, line: bytes) -> None:
        """One line, whatever it holds: a failure is this line's alone (counted, answered)."""
        self.lines_received += 1
        if not line.strip():
            return
        try:
            self._handle_line(line)
        except protocol.ProtocolError as error:
            self._reject(line, error)
        except Exception as error:  # RecursionError, OverflowError, MemoryError, a bug: not fatal
            self.lines_rejected += 1
            self._say("failed", f"a line from the guard could not be handled "
                                f"({type(error).__name__}); skipped, counted in lines_rejected")
            try:
                self._send(protocol.error_message(protocol.ERR_BAD_JSON, "the line could not be handled: "
                                                  + type(error).__name__), answer=True)
            except Exception:
                pass

    def _reject(self, line: bytes, error: protocol.ProtocolError) -> None:
        self.lines_rejected += 1
        if error.code == protocol.ERR_BAD_ADVICE:
            self.advice_rejected += 1
            self._say("bad-advice", f"refused an advice from the guard ({error}): "
                                    f"{json.dumps(line[:120].decode('utf-8', 'replace'))}")
        else:
            self._say("garbage", f"skipped a line from the guard that is not a message "
                                 f"({error}): {json.dumps(line[:120].decode('utf-8', 'replace'))}")
        if error.message_type == "error":  # an error is never answered with an error
            return
        self._send(protocol.error_message(error.code, str(error), ref=error.ref), answer=True)

    def _handle_line(self, line: bytes) -> None:
        message = protocol.decode(line)
        kind = message["type"]
        if kind == "advice":
            self._on_advice(message)
        elif kind == "welcome":
            self.welcome = message
        elif kind == "error":
            if len(self.errors_received) == MAX_KEPT_ERRORS:
                self.errors_dropped += 1
            self.errors_received.append(message)
            self._say("error", "the guard answered with an error: "
                               + json.dumps({k: message.get(k) for k in ("code", "message", "ref")})[:500])
        elif kind == "bye":
            self._gone("it said bye: " + json.dumps(message.get("reason"))[:200])
        else:
            raise protocol.ProtocolError(protocol.ERR_UNKNOWN_TYPE, f"unknown message type {kind[:64]!r}",
                                         kind, ref=kind[:64])

    def _on_advice(self, message: Dict[str, Any]) -> None:
        try:
            advice = Advice.from_message(message, self.capabilities)
        except protocol.ProtocolError as error:
            # The guard waits for an ack until the advice's deadline: answer it now when the
            # advice names an id (the error line follows from _reject).
            if error.ref is not None:
                action = message.get("action")
                known = isinstance(action, str) and action in self.capabilities
                body: Dict[str, Any] = {"type": "ack", "id": error.ref,
                                        "status": "failed" if known else "unsupported",
                                        "error": str(error)}
                if isinstance(action, str) and len(action) <= protocol.MAX_ID_CHARS:
                    body["action"] = action
                self._send(body, answer=True)
            raise
        self._queue(advice)

    def _queue(self, advice: Advice) -> None:
        """Queue an advice for poll(); at the bound, drop the least severe (oldest first)."""
        severity = advice._severity()
        dropped: Optional[Advice] = None
        with self._queue_lock:
            if sum(len(q) for q in self._queues) >= MAX_QUEUED_ADVICE:
                lowest = next(i for i, q in enumerate(self._queues) if q)
                if lowest > severity or lowest == 3:
                    dropped = advice  # all queued are as severe or more: the new one goes
                else:
                    dropped = self._queues[lowest].popleft()[1]
            if dropped is not advice:
                self._queues[severity].append((next(self._arrival), advice))
            tell = dropped is not None and not self._drop_told
            if dropped is not None:
                self.advice_dropped += 1
                self._drop_told = True
        if dropped is None:
            return
        self._say("dropped", f"{MAX_QUEUED_ADVICE} advices wait for poll(); the least severe "
                             "are dropped (counted in advice_dropped, told to the guard)")
        if tell:
            body = protocol.error_message(protocol.ERR_ADVICE_DROPPED,
                                          f"{MAX_QUEUED_ADVICE} advices wait for the job's poll(); "
                                          f"{self.advice_dropped} dropped so far", ref=dropped.id)
            body["advice_dropped"] = self.advice_dropped
            self._send(body, answer=True)

    # -- signals ------------------------------------------------------------------------------

    def _install_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            self._say("signals", "signal handlers can only be installed from the main thread")
            self.signals = False
            return
        for name, action in SIGNAL_ACTIONS.items():
            level = 3 if action == "stop" else 2

            def handler(signum: int, frame: Any, action: str = action, level: int = level) -> None:
                # A handler runs between bytecodes of the main thread: no lock, only a deque
                # append, and none while the same action waits (a repeated signal asks the same).
                if any(queued.action == action for _, queued in self._signalled):
                    return
                self._signalled.append((next(self._arrival),
                                        Advice(id=None, level=level, action=action, source="signal",
                                               message=f"signal {signal.Signals(signum).name}")))

            signal.signal(getattr(signal, name), handler)

    # -- messages to the person ---------------------------------------------------------------

    def _say(self, key: str, text: str, level: int = logging.WARNING) -> None:
        """A log record (logger ``gpudoc``) at ``level`` the first time for each kind of event,
        at DEBUG after that; the first one also to the ``stderr`` stream when one was given."""
        if key in self._said:
            log.debug("%s", text)
            return
        self._said.add(key)
        log.log(level, "%s", text)
        if self._stderr is None:
            return
        try:
            self._stderr.write("gpudoc: " + text + "\n")
            self._stderr.flush()
        except (OSError, ValueError):
            pass


def exit_reason(exc_type: Any, exc: Any) -> str:
    """The bye's reason for a ``with Guard(...)`` block left with ``exc`` (or normally):
    ``done`` also for ``sys.exit(0)``, ``sys.exit()`` and ``sys.exit(None)`` (the process exits 0),
    ``interrupted`` for Ctrl-C (KeyboardInterrupt), ``error`` for anything else, a non-zero or
    non-integer ``SystemExit`` included (the process exits non-zero)."""
    if exc_type is None:
        return "done"
    if issubclass(exc_type, KeyboardInterrupt):
        return "interrupted"
    if issubclass(exc_type, SystemExit):
        code = getattr(exc, "code", None)
        if code is None or (isinstance(code, int) and code == 0):  # False is 0 too
            return "done"
    return "error"


def _version() -> str:
    from . import __version__
    return __version__
