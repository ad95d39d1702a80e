"""The wire format of the channel between ``gpudoc guard`` and a job (docs/guard-protocol.md).

JSON Lines over a Unix stream socket: UTF-8, one JSON object per line, at most ``MAX_LINE_BYTES``
bytes a line including its newline, nested at most ``MAX_DEPTH`` levels. Every message has ``"v"``
(the protocol version) and ``"type"``. ``check_advice`` holds an advice to the protocol's table
(docs/guard-protocol.md) before a job acts on it. Pure functions and one small class; no I/O.
"""
from __future__ import annotations

import json
import math
from typing import Any, Dict, Iterable, List, Optional, Tuple

VERSION = 1
MAX_LINE_BYTES = 64 * 1024
# Deeper JSON is refused (bad_json) by both sides; messages nest three levels.
MAX_DEPTH = 32
SOCKET_ENV = "GPUDOC_GUARD_SOCKET"

# Message types, by direction.
JOB_TYPES = ("hello", "ack", "report", "bye", "error")
GUARD_TYPES = ("welcome", "advice", "bye", "error")

# Actions of an advice, and what a job may list among its capabilities.
ACTIONS = ("shrink_batch", "checkpoint_now", "pause_noncritical", "resume_noncritical", "stop")

# Error codes (the "code" of an error message).
ERR_BAD_JSON = "bad_json"
ERR_NOT_OBJECT = "not_an_object"
ERR_LINE_TOO_LONG = "line_too_long"
ERR_UNKNOWN_TYPE = "unknown_type"
ERR_UNSUPPORTED_VERSION = "unsupported_version"
ERR_MISSING_FIELD = "missing_field"
# From the job's client: an advice that breaks the protocol's table (not acted on), and advice
# dropped because the loop polled too rarely for the bounded queue.
ERR_BAD_ADVICE = "bad_advice"
ERR_ADVICE_DROPPED = "advice_dropped"

# What an acted-on advice may hold (an advice of the guard is under 1 KiB and 40 values).
MAX_ID_CHARS = 64            # the guard's advice ids and refs are at most 64 bytes
MAX_MESSAGE_CHARS = 1024     # the advice's "message"
MAX_ADVICE_VALUES = 256      # JSON values in the whole advice, keys included
MAX_ADVICE_CHARS = 8192      # characters of all its strings (keys included) together
LEVELS = (0, 1, 2, 3)        # 0: resume_noncritical; 3: the last level (stop)


class ProtocolError(ValueError):
    """A line that is not a valid message; ``code`` is one of the ERR_* codes."""

    def __init__(self, code: str, message: str, message_type: Optional[str] = None,
                 ref: Optional[str] = None) -> None:
        super().__init__(message)
        self.code = code
        # The line's "type" when it was an object that said one: an `error` is never answered.
        self.message_type = message_type
        # The message or advice id concerned, when there is a usable one (the error's "ref").
        self.ref = ref


def _finite(value: Any) -> Any:
    """JSON has no NaN or infinity: they travel as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def encode(message: Dict[str, Any]) -> bytes:
    """One message as one line (UTF-8, ending in a newline), ``"v"`` added when absent.

    Raises ProtocolError(ERR_LINE_TOO_LONG) when the line would exceed MAX_LINE_BYTES, and
    TypeError for values JSON cannot carry."""
    body = dict(message)
    body.setdefault("v", VERSION)
    line = json.dumps(_finite(body), ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False, default=_default).encode("utf-8") + b"\n"
    if len(line) > MAX_LINE_BYTES:
        raise ProtocolError(ERR_LINE_TOO_LONG,
                            f"a {body.get('type')!r} line of {len(line)} bytes exceeds {MAX_LINE_BYTES}")
    return line


def _default(value: Any) -> Any:
    # Numbers that are not Python numbers (numpy scalars, 0-d tensors) carry .item().
    item = getattr(value, "item", None)
    if callable(item):
        return _finite(item())
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _shape(value: Any) -> Tuple[int, int, int]:
    """Depth, number of values (keys included) and characters of all strings of a decoded JSON
    value, walked without recursion (a hostile line may nest as deep as the parser allows)."""
    depth = values = chars = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        values += 1
        depth = max(depth, level)
        if isinstance(item, str):
            chars += len(item)
        elif isinstance(item, dict):
            for key, child in item.items():
                values += 1
                chars += len(key)
                stack.append((child, level + 1))
        elif isinstance(item, list):
            stack.extend((child, level + 1) for child in item)
    return depth, values, chars


def decode(line: bytes) -> Dict[str, Any]:
    """One line (without its newline) to a message. Raises ProtocolError with the reason;
    unknown fields are kept (the caller ignores what it does not know). Not JSON (invalid UTF-8,
    ``NaN`` or ``Infinity``, nested past the parser's recursion or past ``MAX_DEPTH``):
    ``bad_json``."""
    try:
        text = line.decode("utf-8")
        value = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        kind = "nested too deep" if isinstance(error, RecursionError) else str(error)[:200]
        raise ProtocolError(ERR_BAD_JSON, f"not a JSON line: {kind}") from None
    if isinstance(value, (dict, list)) and _shape(value)[0] > MAX_DEPTH:
        raise ProtocolError(ERR_BAD_JSON, f"not a JSON line: nested deeper than {MAX_DEPTH} levels")
    if not isinstance(value, dict):
        raise ProtocolError(ERR_NOT_OBJECT, f"a JSON {type(value).__name__}, not an object")
    said = value.get("type") if isinstance(value.get("type"), str) else None
    version = value.get("v")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ProtocolError(ERR_MISSING_FIELD, 'no integer "v"', said)
    if version != VERSION:
        raise ProtocolError(ERR_UNSUPPORTED_VERSION, f"version {version}; this client speaks {VERSION}", said)
    if not isinstance(value.get("type"), str):
        raise ProtocolError(ERR_MISSING_FIELD, 'no string "type"')
    return value


def _finite_number(value: Any) -> Optional[float]:
    """The value as a finite float, or None when it is not a number (bools are not) or not finite
    (1e999 parses to infinity; a 400-digit integer does not fit a float)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (OverflowError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _every_number_finite(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, (int, float)) and not isinstance(item, bool) and _finite_number(item) is None:
            return False
    return True


def advice_id(message: Dict[str, Any]) -> Optional[str]:
    """The advice's id as the ack names it, when it is usable: a non-empty string (or an
    integer) of at most MAX_ID_CHARS characters; else None."""
    value = message.get("id")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 10 ** MAX_ID_CHARS:
        value = str(value)
    if isinstance(value, str) and 0 < len(value) <= MAX_ID_CHARS:
        return value
    return None


def check_advice(message: Dict[str, Any], actions: Iterable[str] = ACTIONS) -> Dict[str, Any]:
    """The fields of a decoded ``advice`` a job acts on, held to docs/guard-protocol.md, or
    ProtocolError(ERR_BAD_ADVICE) naming the first field that breaks it (``ref``: the id when it
    is usable). ``actions``: those this job declared (its capabilities).

    Returns ``id``, ``level`` (an int of LEVELS), ``action`` (one of ``actions``), ``factor`` (for
    ``shrink_batch`` a finite number in (0, 1), else None), ``reason`` (an object, {} when absent
    or null), ``message`` (a string of at most MAX_MESSAGE_CHARS, "" when absent or null) and
    ``deadline_unix`` (a finite number, or None when absent or null). The whole advice has at most
    MAX_ADVICE_VALUES values and MAX_ADVICE_CHARS characters of strings, and no number that is
    not a finite float (the protocol sends those as null)."""
    actions = tuple(actions)
    ident = advice_id(message)

    def bad(why: str) -> ProtocolError:
        return ProtocolError(ERR_BAD_ADVICE, f"an advice {why}; not acted on", "advice", ref=ident)

    if ident is None:
        raise bad(f'needs an "id": a string of 1 to {MAX_ID_CHARS} characters')
    _, values, chars = _shape(message)
    if values > MAX_ADVICE_VALUES or chars > MAX_ADVICE_CHARS:
        raise bad(f"holds {values} values and {chars} characters of text, over "
                  f"{MAX_ADVICE_VALUES} and {MAX_ADVICE_CHARS}")
    action = message.get("action")
    if not isinstance(action, str) or action not in actions:
        raise bad('needs an "action" this job declared (' + ", ".join(actions) + ")")
    level = message.get("level")
    if not isinstance(level, int) or isinstance(level, bool) or level not in LEVELS:
        raise bad('needs a "level" of 0 to 3')
    factor = None
    if action == "shrink_batch":
        factor = _finite_number(message.get("factor"))
        if factor is None or not 0.0 < factor < 1.0:
            raise bad('to shrink_batch needs a "factor": a number in (0, 1)')
    reason = message.get("reason")
    if reason is None:
        reason = {}
    if not isinstance(reason, dict):
        raise bad('has a "reason" that is not an object')
    text = message.get("message")
    if text is None:
        text = ""
    if not isinstance(text, str) or len(text) > MAX_MESSAGE_CHARS:
        raise bad(f'has a "message" that is not a string of at most {MAX_MESSAGE_CHARS} characters')
    deadline = message.get("deadline_unix")
    if deadline is not None:
        deadline = _finite_number(deadline)
        if deadline is None:
            raise bad('has a "deadline_unix" that is not a finite number')
    if not _every_number_finite(message):
        raise bad("holds a number that is not a finite float")
    return {"id": ident, "level": level, "action": action, "factor": factor, "reason": reason,
            "message": text, "deadline_unix": deadline}


class LineSplitter:
    """Cuts a byte stream into lines of at most ``max_bytes`` (newline included).

    Bytes of a line that grows past the limit are discarded up to its newline and the line is
    counted in ``too_long``; a partial line waits for the rest. Memory stays under max_bytes."""

    def __init__(self, max_bytes: int = MAX_LINE_BYTES) -> None:
        self.max_bytes = max_bytes
        self.too_long = 0
        self._buffer = bytearray()
        self._discarding = False

    def feed(self, data: bytes, mark_too_long: bool = False) -> List[Optional[bytes]]:
        """The lines ``data`` completes, in order; with ``mark_too_long``, a None stands where a
        line grew past the limit (so a reader answers it in its place in the stream)."""
        lines: List[Optional[bytes]] = []
        start = 0
        while start < len(data):
            newline = data.find(b"\n", start)
            end = len(data) if newline < 0 else newline
            chunk = data[start:end]
            if not self._discarding:
                if len(self._buffer) + len(chunk) + 1 > self.max_bytes:
                    self._discarding = True
                    self.too_long += 1
                    self._buffer.clear()
                    if mark_too_long:
                        lines.append(None)
                else:
                    self._buffer += chunk
            if newline < 0:
                break
            if not self._discarding:
                lines.append(bytes(self._buffer))
            self._buffer.clear()
            self._discarding = False
            start = newline + 1
        return lines

    @property
    def pending_bytes(self) -> int:
        return len(self._buffer)


def error_message(code: str, message: str, ref: Optional[str] = None) -> Dict[str, Any]:
    body: Dict[str, Any] = {"type": "error", "code": code, "message": message}
    if ref is not None:
        body["ref"] = ref
    return body


def split_gpus(gpus: Any) -> Tuple[List[int], List[str]]:
    """The GPUs of a hello as CUDA indices and UUIDs: ``[0, "GPU-…"]`` or ``"0,1"`` (the form of
    CUDA_VISIBLE_DEVICES). Anything else is dropped."""
    if gpus is None:
        return [], []
    if isinstance(gpus, (str, int)):
        gpus = [gpus] if isinstance(gpus, int) else [g.strip() for g in gpus.split(",") if g.strip()]
    indices: List[int] = []
    uuids: List[str] = []
    for gpu in gpus:
        if isinstance(gpu, bool):
            continue
        if isinstance(gpu, int) and gpu >= 0:
            indices.append(gpu)
        elif isinstance(gpu, str) and gpu.isdigit():
            indices.append(int(gpu))
        elif isinstance(gpu, str) and gpu.startswith(("GPU-", "MIG-")):
            uuids.append(gpu)
    return indices, uuids
