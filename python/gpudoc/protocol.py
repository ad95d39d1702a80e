"""The wire format of the channel between ``gpudoc guard`` and a job (docs/guard-protocol.md).

JSON Lines over a Unix stream socket: UTF-8, one JSON object per line, at most ``MAX_LINE_BYTES``
bytes a line including its newline. Every message has ``"v"`` (the protocol version) and
``"type"``. Pure functions and one small class; no I/O.
"""
from __future__ import annotations

import json
import math
from typing import Any, Dict, List, Optional, Tuple

VERSION = 1
MAX_LINE_BYTES = 64 * 1024
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


class ProtocolError(ValueError):
    """A line that is not a valid message; ``code`` is one of the ERR_* codes."""

    def __init__(self, code: str, message: str, message_type: Optional[str] = None) -> None:
        super().__init__(message)
        self.code = code
        # The line's "type" when it was an object that said one: an `error` is never answered.
        self.message_type = message_type


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


def decode(line: bytes) -> Dict[str, Any]:
    """One line (without its newline) to a message. Raises ProtocolError with the reason;
    unknown fields are kept (the caller ignores what it does not know)."""
    try:
        text = line.decode("utf-8")
        value = json.loads(text)
    except (UnicodeDecodeError, ValueError) as error:
        raise ProtocolError(ERR_BAD_JSON, f"not a JSON line: {error}") from None
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


class LineSplitter:
    """Cuts a byte stream into lines of at most ``max_bytes`` (newline included).

    Bytes of a line that grows past the limit are discarded up to its newline and the line is
    counted in ``too_long``; a partial line waits for the rest. Memory stays under max_bytes."""

    def __init__(self, max_bytes: int = MAX_LINE_BYTES) -> None:
        self.max_bytes = max_bytes
        self.too_long = 0
        self._buffer = bytearray()
        self._discarding = False

    def feed(self, data: bytes) -> List[bytes]:
        lines: List[bytes] = []
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
