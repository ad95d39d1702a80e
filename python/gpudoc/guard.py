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
"""
from __future__ import annotations

import collections
import errno
import json
import os
import select
import signal
import socket
import stat
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Deque, Dict, Iterable, List, Optional, TextIO

from . import protocol

__all__ = ["Advice", "Guard"]

DEFAULT_CAPABILITIES = ("shrink_batch", "checkpoint_now", "pause_noncritical", "resume_noncritical", "stop")
# How much not-yet-sent output may wait for a slow guard before new lines are dropped.
MAX_PENDING_BYTES = 256 * 1024
# What each opted-in signal means (the guard sends them through a pidfd).
SIGNAL_ACTIONS = {"SIGUSR1": "checkpoint_now", "SIGTERM": "stop"}

_active: Optional["Guard"] = None


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
    def from_message(cls, message: Dict[str, Any]) -> "Advice":
        factor = message.get("factor")
        deadline = message.get("deadline_unix")
        reason = message.get("reason")
        level = message.get("level")
        return cls(id=str(message["id"]),
                   level=level if isinstance(level, int) and not isinstance(level, bool) else 0,
                   action=str(message["action"]),
                   factor=float(factor) if _is_number(factor) else None,
                   reason=reason if isinstance(reason, dict) else {},
                   message=str(message.get("message", "")),
                   deadline_unix=float(deadline) if _is_number(deadline) else None,
                   raw=message)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class Guard:
    """A connection to ``gpudoc guard``, or a no-op stand-in when there is none.

    ``path``: the socket; default ``$GPUDOC_GUARD_SOCKET``. Without one, or when it cannot be
    reached, every method does nothing and one line on stderr says why. ``name``, ``gpus`` (CUDA
    indices and/or UUIDs; default ``$CUDA_VISIBLE_DEVICES``) and ``capabilities`` (the actions this
    job acts on) go into the hello. ``signals=True`` opts in to the guard's signals (SIGUSR1:
    checkpoint now, SIGTERM: stop): they arrive through ``poll()`` as advice with
    ``source == "signal"`` (handlers are installed only from the main thread).

    Thread safety: ``poll``, ``ack``, ``report`` and ``close`` may be called from any thread."""

    def __init__(self, path: Optional[str] = None, *, name: Optional[str] = None,
                 gpus: Any = None, capabilities: Iterable[str] = DEFAULT_CAPABILITIES,
                 signals: bool = False, stderr: Optional[TextIO] = None,
                 connect_timeout_s: float = 2.0) -> None:
        self._stderr = stderr
        self._lock = threading.Lock()
        self._advice: Deque[Advice] = collections.deque()
        self._pending = bytearray()
        self._stop = threading.Event()
        self._said: set = set()
        self._sock: Optional[socket.socket] = None
        self._reader: Optional[threading.Thread] = None
        self.welcome: Optional[Dict[str, Any]] = None
        self.garbage_lines = 0        # lines that were not valid messages
        self.dropped_sends = 0        # lines not sent: buffer full, too long, or guard gone
        self.lines_received = 0
        self.lines_sent = 0
        self.errors_received: List[Dict[str, Any]] = []
        self._splitter = protocol.LineSplitter()
        self.capabilities = [c for c in capabilities]
        self.signals = bool(signals)
        self.name = name if name is not None else os.path.basename(sys.argv[0] or "python")
        self.gpus = gpus if gpus is not None else os.environ.get("CUDA_VISIBLE_DEVICES")
        if self.signals:
            self._install_signal_handlers()
        path = path if path is not None else os.environ.get(protocol.SOCKET_ENV)
        self.path = path
        if not path:
            self._say("no-socket", f"gpudoc: no guard ({protocol.SOCKET_ENV} is not set): "
                                   "guard advice is off, training runs as usual")
            return
        self._connect(path, connect_timeout_s)

    # -- public -------------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """True while the socket to the guard is open and the guard has not gone away."""
        return self._sock is not None

    def hello(self) -> bool:
        """Send the hello (done once by the constructor when connected). False when not sent."""
        indices, uuids = protocol.split_gpus(self.gpus)
        body: Dict[str, Any] = {"type": "hello", "pid": os.getpid(), "name": self.name,
                                "gpus": [*indices, *uuids], "capabilities": self.capabilities,
                                "signals": [SIGNAL_ACTIONS[s] for s in SIGNAL_ACTIONS] if self.signals else [],
                                "client": "gpudoc-python " + _version()}
        return self._send(body)

    def poll(self) -> List[Advice]:
        """Every advice received since the last call, oldest first; never blocks."""
        out: List[Advice] = []
        while True:  # popleft one by one: a signal handler may append meanwhile
            try:
                out.append(self._advice.popleft())
            except IndexError:
                return out

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
        ``gpudoc.report`` also prints them as a ``::gpudoc`` line."""
        body: Dict[str, Any] = {"type": "report", "figures": figures}
        if self.dropped_sends:
            body["dropped"] = self.dropped_sends
        return self._send(body)

    def close(self, reason: str = "done") -> None:
        """Say bye and close; safe to call twice."""
        global _active
        if self._sock is not None:
            self._send({"type": "bye", "reason": reason, "dropped": self.dropped_sends})
            self._flush(final=True)
        self._stop.set()
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout=1.0)
        self._drop_socket()
        if _active is self:
            _active = None

    def __enter__(self) -> "Guard":
        return self

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        self.close("error" if exc_type is not None else "done")

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
            self._say("connect", f"gpudoc: cannot reach the guard at {shown}: "
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
            self._say("gone", f"gpudoc: the guard went away ({why}); training carries on without it")
        self._drop_socket()

    # -- sending ------------------------------------------------------------------------------

    def _send(self, body: Dict[str, Any]) -> bool:
        if self._sock is None:
            return False
        try:
            line = protocol.encode(body)
        except (protocol.ProtocolError, TypeError, ValueError) as error:
            self.dropped_sends += 1
            self._say("encode", f"gpudoc: a {body.get('type')!r} line was not sent: {error}")
            return False
        with self._lock:
            if self._sock is None:
                return False
            if len(self._pending) + len(line) > MAX_PENDING_BYTES:
                self.dropped_sends += 1
                self._say("full", "gpudoc: the guard reads slowly; lines are dropped (counted, "
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
            before = self._splitter.too_long
            for line in self._splitter.feed(data):
                self._handle_line(line)
            if self._splitter.too_long > before:
                self.garbage_lines += self._splitter.too_long - before
                self._send(protocol.error_message(protocol.ERR_LINE_TOO_LONG,
                                                  f"a line over {protocol.MAX_LINE_BYTES} bytes was skipped"))
            self._flush()

    def _handle_line(self, line: bytes) -> None:
        self.lines_received += 1
        if not line.strip():
            return
        try:
            message = protocol.decode(line)
        except protocol.ProtocolError as error:
            self.garbage_lines += 1
            self._say("garbage", f"gpudoc: skipped a line from the guard that is not a message "
                                 f"({error}): {json.dumps(line[:120].decode('utf-8', 'replace'))}")
            if error.message_type != "error":  # an error is never answered with an error
                self._send(protocol.error_message(error.code, str(error)))
            return
        kind = message["type"]
        if kind == "advice":
            self._on_advice(message)
        elif kind == "welcome":
            self.welcome = message
        elif kind == "error":
            self.errors_received.append(message)
            self._say("error", "gpudoc: the guard answered with an error: "
                               + json.dumps({k: message.get(k) for k in ("code", "message", "ref")}))
        elif kind == "bye":
            self._gone("it said bye: " + json.dumps(message.get("reason")))
        else:
            self.garbage_lines += 1
            self._send(protocol.error_message(protocol.ERR_UNKNOWN_TYPE,
                                              f"unknown message type {kind!r}", ref=kind[:64]))

    def _on_advice(self, message: Dict[str, Any]) -> None:
        if not isinstance(message.get("id"), (str, int)) or not isinstance(message.get("action"), str):
            self.garbage_lines += 1
            self._send(protocol.error_message(protocol.ERR_MISSING_FIELD,
                                              'an advice needs "id" and "action"', ref="advice"))
            return
        self._advice.append(Advice.from_message(message))

    # -- signals ------------------------------------------------------------------------------

    def _install_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            self._say("signals", "gpudoc: signal handlers can only be installed from the main thread")
            self.signals = False
            return
        for name, action in SIGNAL_ACTIONS.items():
            level = 3 if action == "stop" else 2

            def handler(signum: int, frame: Any, action: str = action, level: int = level) -> None:
                # A handler runs between bytecodes of the main thread: only a deque append here.
                self._advice.append(Advice(id=None, level=level, action=action, source="signal",
                                           message=f"signal {signal.Signals(signum).name}"))

            signal.signal(getattr(signal, name), handler)

    # -- messages to the person ---------------------------------------------------------------

    def _say(self, key: str, text: str) -> None:
        """One line on stderr, once per kind of event."""
        if key in self._said:
            return
        self._said.add(key)
        stream = self._stderr if self._stderr is not None else sys.stderr
        try:
            stream.write(text + "\n")
            stream.flush()
        except (OSError, ValueError):
            pass


def _version() -> str:
    from . import __version__
    return __version__
