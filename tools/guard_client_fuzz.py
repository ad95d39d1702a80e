#!/usr/bin/env python3
"""A hostile guard against the real Python client (python/gpudoc/guard.py), for a set time.

    tools/guard_client_fuzz.py [--seconds 600] [--seed N] [--rss-limit-mb 64] [--json FILE]

The fuzzer is the guard: a Unix socket server in a private folder (tempfile.mkdtemp, mode 0700).
The client runs in a child process (this script with --client) as a training loop would: it
polls at random intervals (busy stretches of 1 to 20 ms, and stretches of 0.5 to 3 s in which
the bounded advice queue overflows), shrinks a BatchSizeController by every shrink_batch factor,
acks every advice (now and then with details that cannot be encoded) and reports figures.

The guard sends protocol lines for the whole time: valid advices, each with a unique id, mixed
with mutated lines (random byte flips, insertions and deletions, numbers replaced by 1e999,
NaN, 400-digit integers), shrink factors outside (0, 1) or of the wrong type, fields of the
wrong type or size, JSON nested past 32 levels and 60 KB of ``[``, invalid UTF-8, NUL bytes,
lines at and over the 64 KiB limit (up to 100 MB, sent in pieces), valid advices cut into
partial writes, other messages (welcome, error, unknown types, other versions, arrays, empty
lines) and floods (thousands of valid advices, 20 000 error lines, 20 000 garbage lines). Every
line is judged by the fuzzer's own reading of docs/guard-protocol.md (not the client's code).

Checked throughout, and at the end after a final drain:

- the client's reader thread is alive and it is connected, at every turn of the loop;
- the client's peak resident memory (VmHWM of /proc/self/status) stays under --rss-limit-mb;
- no exception reaches the loop from poll(), ack(), report() or shrink();
- every advice the fuzzer judged valid is delivered exactly once, or dropped by the documented
  queue bound: valid sent = delivered + the client's advice_dropped, the bye says the same
  count, and the guard heard of drops in an ``advice_dropped`` error; no level-3 or stop advice
  is dropped (the fuzzer sends few enough that the queue never fills with them);
- no line judged invalid is delivered, and every delivered advice holds to the protocol's table;
- every line the client sends is a JSON object of at most 64 KiB.

Prints a summary (lines sent by kind, advices delivered, drops, peak RSS, exceptions) and exits 0
only when every check held; --json FILE also writes it as JSON.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from typing import Any, Dict, List, Optional, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_LINE_BYTES = 64 * 1024
CAPABILITIES = ("shrink_batch", "checkpoint_now", "pause_noncritical", "resume_noncritical", "stop")
END_ID = "end"


# -- the fuzzer's own reading of the protocol ------------------------------------------------------

def _no_constant(name: str) -> Any:
    raise ValueError(name)


def _walk(value: Any) -> Tuple[int, int, int, bool]:
    """Depth, values (keys counted), characters of strings (keys counted), all numbers finite."""
    depth = values = chars = 0
    finite = True
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
        elif isinstance(item, (int, float)) and not isinstance(item, bool):
            try:
                finite = finite and math.isfinite(float(item))
            except OverflowError:
                finite = False
    return depth, values, chars, finite


def _number(value: Any) -> Optional[float]:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        x = float(value)
    except OverflowError:
        return None
    return x if math.isfinite(x) else None


def judge(line: bytes) -> Optional[Tuple[str, bool]]:
    """The id of the advice the client must deliver for this line (without its newline) and
    whether it is critical (a stop or level 3), or None when the protocol says it is not one:
    docs/guard-protocol.md, its lines and the advice's table."""
    if len(line) + 1 > MAX_LINE_BYTES:
        return None
    try:
        value = json.loads(line.decode("utf-8"), parse_constant=_no_constant)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    depth, values, chars, finite = _walk(value)
    if depth > 32:
        return None
    v = value.get("v")
    if not isinstance(v, int) or isinstance(v, bool) or v != 1 or value.get("type") != "advice":
        return None
    ident = value.get("id")
    if isinstance(ident, int) and not isinstance(ident, bool) and abs(ident) < 10 ** 64:
        ident = str(ident)
    if not isinstance(ident, str) or not 0 < len(ident) <= 64:
        return None
    if values > 256 or chars > 8192 or not finite:
        return None
    action, level = value.get("action"), value.get("level")
    if action not in CAPABILITIES:
        return None
    if not isinstance(level, int) or isinstance(level, bool) or level not in (0, 1, 2, 3):
        return None
    if action == "shrink_batch":
        factor = _number(value.get("factor"))
        if factor is None or not 0 < factor < 1:
            return None
    reason, message, deadline = value.get("reason"), value.get("message"), value.get("deadline_unix")
    if reason is not None and not isinstance(reason, dict):
        return None
    if message is not None and (not isinstance(message, str) or len(message) > 1024):
        return None
    if deadline is not None and _number(deadline) is None:
        return None
    return ident, action == "stop" or level == 3


# -- lines ------------------------------------------------------------------------------------------

class Lines:
    """Makes the lines of each kind; ``n`` numbers them, ids are ``<kind letter>-<n>``."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.n = 0

    def next_id(self, letter: str) -> str:
        self.n += 1
        return f"{letter}-{self.n}"

    def advice(self, ident: str, critical: bool = False) -> Dict[str, Any]:
        r = self.rng
        if critical:
            action, level = r.choice((("stop", 3), ("checkpoint_now", 3)))
        else:
            action, level = r.choice((("shrink_batch", 1), ("checkpoint_now", 2), ("pause_noncritical", 2),
                                      ("resume_noncritical", 0)))
        now = 1.7645e9 + r.random() * 1e6
        body: Dict[str, Any] = {
            "v": 1, "type": "advice", "id": ident, "level": level, "action": action,
            "gpu": "GPU-5c7c9a2e-%04x" % r.randrange(65536), "issued_unix": now, "deadline_unix": now + 10,
            "reason": {"metric": "gpu_temperature_celsius", "now": int(r.uniform(600, 900)) / 10,
                       "forecast": int(r.uniform(800, 950)) / 10, "horizon_s": 5.0, "forecast_error": 0.6,
                       "threshold": 87.0, "threshold_source": "nvml_slowdown_temperature",
                       "limits": {"slowdown_celsius": 87, "shutdown_celsius": 92, "max_operating_celsius": 85}},
            "message": "GPU 0 is forecast at 88.4 \u00b0C in 5 s, over its slowdown temperature 87 \u00b0C"}
        if action == "shrink_batch":
            body["factor"] = r.choice((0.75, 0.5, int(r.uniform(10, 990)) / 1000, 1e-300, 0.9999999))
        if r.random() < 0.2:
            body["colour"] = r.choice(("blue", [1, 2, {"x": None}], {"deep": {"er": [0]}}))
        return body

    def dump(self, body: Any) -> bytes:
        return json.dumps(body, ensure_ascii=self.rng.random() < 0.5, separators=(",", ":")).encode("utf-8")

    def valid(self) -> bytes:
        return self.dump(self.advice(self.next_id("v"), critical=self.rng.random() < 0.001))

    def mutated(self) -> bytes:
        """A valid advice with 1 to 3 random edits after its fixed head (the id stays the id)."""
        r = self.rng
        ident = self.next_id("r")
        body = self.advice(ident)
        head = b'{"v":1,"type":"advice","id":"%s",' % ident.encode()
        rest = bytearray(self.dump({k: v for k, v in body.items() if k not in ("v", "type", "id")})[1:])
        for _ in range(r.randint(1, 3)):
            op = r.randrange(6)
            pos = r.randrange(len(rest) + 1)
            if op == 0 and rest:
                rest[min(pos, len(rest) - 1)] = r.choice([b for b in range(256) if b != 10])
            elif op == 1:
                rest[pos:pos] = bytes([r.choice([b for b in range(256) if b != 10])])
            elif op == 2 and rest:
                del rest[pos:pos + r.randint(1, 8)]
            elif op == 3:
                rest[pos:pos] = rest[pos:pos + r.randint(1, 40)]
            else:
                text = bytes(rest)
                for old in (b"0.75", b"0.5", b"87.0", b"85", b"5.0", b"2", b"1", b"0"):
                    at = text.find(old, pos)
                    if at >= 0:
                        new = r.choice((b"1e999", b"-1e999", b"NaN", b"Infinity", b"1" * 401, b"1e-400",
                                        b"-0", b"true", b"null", b'"0.5"', b"[]", b"1.5", b"0.25"))
                        rest[at:at + len(old)] = new
                        break
        return head + bytes(rest)

    def bad_factor(self) -> bytes:
        body = self.advice(self.next_id("b"))
        body["action"], body["level"] = "shrink_batch", 1
        raw = self.rng.choice(("1e999", "-1e999", "NaN", "Infinity", "2", "1", "0", "-0.5", "null", '"0.5"',
                               "true", "1" * 401, "[0.5]", "{}", "1e400", "-0.0"))
        body["factor"] = "@@"
        return self.dump(body).replace(b'"@@"', raw.encode())

    def bad_field(self) -> bytes:
        r = self.rng
        ident = self.next_id("b")
        body = self.advice(ident)
        change = r.randrange(14)
        if change == 0:
            body["level"] = r.choice(("1", 1.0, 7, -1, True, None, [1], 10 ** 30))
        elif change == 1:
            body["action"] = r.choice(("dance", "", "STOP", 3, None, ["stop"], "x" * 5000))
        elif change == 2:
            body["id"] = r.choice(("", "i" * 65, ["a"], {"id": 1}, None, True, 1.5))
        elif change == 3:
            del body["id"]
        elif change == 4:
            body["message"] = r.choice(("m" * 1025, 42, ["m"], {"m": 1}))
        elif change == 5:
            body["reason"] = r.choice(([1, 2], "hot", 3, True))
        elif change == 6:
            body["deadline_unix"] = r.choice(("soon", True, [1], "1e999"))
        elif change == 7:
            body["pad"] = list(range(300))
        elif change == 8:
            body["pad"] = "p" * 9000
        elif change == 9:
            del body["action"]
        elif change == 10:
            del body["level"]
        elif change == 11:
            body["v"] = r.choice((2, 0, "1", None, True, 1.0))
        elif change == 12:
            body["reason"]["now"] = "@@"
            return self.dump(body).replace(b'"@@"', r.choice((b"1e999", b"NaN", b"-Infinity", b"1" * 401)))
        else:
            body["type"] = r.choice(("Advice", "advise", "", None, 1))
        return self.dump(body)

    def deep(self) -> bytes:
        r = self.rng
        kind = r.randrange(5)
        if kind == 0:
            return b"[" * 60000
        if kind == 1:
            return b"{" * 30000
        if kind == 2:
            depth = r.randint(900, 3000)
            return b"[" * depth + b"]" * depth
        # An advice with a nested field of depth 31..34 (the advice itself is level 1): valid up to 32.
        depth = r.choice((30, 31, 32, 33, 40))
        body = self.advice(self.next_id("d"))
        body["nest"] = "@@"
        nest = b'{"a":' * (depth - 1) + b"0" + b"}" * (depth - 1)
        return self.dump(body).replace(b'"@@"', nest)

    def huge_number(self) -> bytes:
        body = self.advice(self.next_id("h"))
        where = self.rng.choice(("factor", "deadline_unix", "level", "issued_unix"))
        if where == "factor":
            body["action"], body["level"] = "shrink_batch", 1
        body[where] = "@@"
        digits = self.rng.choice((b"1" * 401, b"9" * 320, b"1" * 5000, b"1e999", b"-" + b"7" * 400, b"1" * 4300))
        return self.dump(body).replace(b'"@@"', digits)

    def bad_utf8(self) -> bytes:
        line = bytearray(self.dump(self.advice(self.next_id("u"))))
        pos = self.rng.randrange(len(line))
        line[pos:pos] = self.rng.choice((b"\xff", b"\xfe\xff", b"\xc3", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80"))
        return bytes(line)

    def nul(self) -> bytes:
        line = bytearray(self.dump(self.advice(self.next_id("z"))))
        pos = self.rng.randrange(len(line))
        line[pos:pos] = b"\x00" * self.rng.randint(1, 4)
        return bytes(line)

    def other(self) -> bytes:
        return self.rng.choice((
            b'{"v":1,"type":"welcome","guard_pid":913,"job":"j3","gpus":["GPU-x"],"horizon_s":5}',
            b'{"v":1,"type":"error","code":"unknown_advice","message":"no advice \'x\'","ref":"x"}',
            b'{"type":"error","code":"x"}', b'{"v":2,"type":"error","code":"x"}',
            b'{"v":1,"type":"dance","with":"me"}', b'{"v":2,"type":"advice","id":"x","action":"stop","level":3}',
            b'{"v":0,"type":"advice","id":"x","action":"stop","level":3}', b"[1,2]", b'"advice"', b"42", b"null",
            b"", b"   ", b"\t", b"{}", b'{"v":1}', b'{"v":1,"type":' + b'"t' * 3000 + b'"}', b"not json",
            b'{"v":1,"type":"welcome","x":' + b"[0," * 5000 + b"0" + b"]" * 5000 + b"}",
            b'{"v":1,"type":"report","figures":{}}', b'{"v":1,"type":"hello","pid":1}'))

    def long_line(self, size: int) -> bytes:
        head = b'{"v":1,"type":"advice","id":"%s","level":3,"action":"stop","pad":"' % self.next_id("l").encode()
        return head + b"x" * max(0, size - len(head) - 2) + b'"}'


# -- the guard (this process) -----------------------------------------------------------------------

class Tally:
    """What was sent and what came back; ``state`` per line number: 0 nothing expected, 1 an
    advice the client must deliver, 2 delivered, 3 a critical one to deliver, 4 it delivered."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.state = bytearray()
        self.sent_kind: Counter = Counter()
        self.bytes_sent = 0
        self.valid_sent = 0
        self.critical_sent = 0
        self.delivered = 0
        self.critical_delivered = 0
        self.duplicates: List[str] = []
        self.invalid_delivered: List[str] = []
        self.malformed: List[str] = []
        self.from_client: Counter = Counter()
        self.error_codes: Counter = Counter()
        self.client_bad_lines = 0
        self.bye: Optional[Dict[str, Any]] = None
        self.drop_errors = 0
        self.status: Dict[str, Any] = {}
        self.final: Optional[Dict[str, Any]] = None
        self.problems: List[str] = []
        self.problem_kinds: Counter = Counter()  # what the client saw go wrong, as it happened

    def expect(self, n: int, critical: bool) -> None:
        with self.lock:
            if len(self.state) <= n:
                self.state.extend(bytes(n + 1 - len(self.state) + 4096))
            self.state[n] = 3 if critical else 1
            self.valid_sent += 1
            self.critical_sent += critical

    def delivered_id(self, ident: str) -> None:
        with self.lock:
            if ident == END_ID:
                return
            try:
                n = int(ident.split("-", 1)[1])
            except (IndexError, ValueError):
                n = -1
            s = self.state[n] if 0 <= n < len(self.state) else 0
            if s in (1, 3):
                self.state[n] = s + 1
                self.delivered += 1
                self.critical_delivered += s == 3
            elif s in (2, 4):
                self.duplicates.append(ident)
            else:
                self.invalid_delivered.append(ident)


def serve_client_lines(conn: socket.socket, tally: Tally, pause: threading.Event, done: threading.Event) -> None:
    """Read what the client sends; now and then (pause set) stop reading, as a slow guard."""
    buffer = b""
    while not done.is_set():
        if pause.is_set():
            time.sleep(0.05)
            continue
        try:
            ready, _, _ = select.select([conn], [], [], 0.1)
            if not ready:
                continue
            data = conn.recv(1 << 16)
        except OSError:
            return
        if not data:
            return
        buffer += data
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            take_client_line(line, tally)


def take_client_line(line: bytes, tally: Tally) -> None:
    try:
        message = json.loads(line)
        ok = isinstance(message, dict) and len(line) + 1 <= MAX_LINE_BYTES
    except ValueError:
        ok, message = False, None
    with tally.lock:
        if not ok:
            tally.client_bad_lines += 1
            return
        kind = message.get("type")
        tally.from_client[str(kind)] += 1
        if kind == "error":
            tally.error_codes[str(message.get("code"))] += 1
            tally.drop_errors += message.get("code") == "advice_dropped"
        elif kind == "bye":
            tally.bye = message


def read_child(stream: Any, tally: Tally) -> None:
    for raw in stream:
        line = raw.decode("utf-8", "replace").rstrip("\n")
        tag, _, rest = line.partition(" ")
        if tag == "D":
            for ident in rest.split():
                tally.delivered_id(ident)
        elif tag == "S":
            tally.status = json.loads(rest)
        elif tag == "F":
            tally.final = json.loads(rest)
        elif tag == "X":
            with tally.lock:
                tally.problem_kinds[rest.split(":")[0]] += 1
                if len(tally.problems) < 20:
                    tally.problems.append(rest)


class Sender:
    def __init__(self, conn: socket.socket, tally: Tally, lines: Lines) -> None:
        self.conn, self.tally, self.lines = conn, tally, lines
        self.out = bytearray()

    def line(self, kind: str, line: bytes) -> None:
        """Queue one line (judged first) for the next write."""
        judged = judge(line)
        if judged is not None:
            ident, critical = judged
            try:
                n = int(ident.split("-", 1)[1])
            except (IndexError, ValueError):
                n = -1
            if n != self.lines.n or not ident.startswith(("v-", "r-", "d-", "h-", "b-", "u-", "z-", "p-")):
                return  # a mutation that moved the id: not sent (its outcome cannot be told)
            self.tally.expect(n, critical)
        self.tally.sent_kind[kind] += 1
        self.out += line + b"\n"
        if len(self.out) >= 1 << 16:
            self.flush()

    def flush(self) -> None:
        if self.out:
            self.conn.sendall(self.out)
            self.tally.bytes_sent += len(self.out)
            self.out = bytearray()

    def partial(self) -> None:
        """A valid advice in 2 to 6 writes with pauses between them."""
        self.flush()
        body = self.lines.dump(self.lines.advice(self.lines.next_id("p")))
        n = self.lines.n
        self.tally.expect(n, False)
        self.tally.sent_kind["partial"] += 1
        cuts = sorted(self.lines.rng.sample(range(1, len(body)), self.lines.rng.randint(1, 5)))
        start = 0
        for cut in cuts + [len(body)]:
            self.conn.sendall(body[start:cut] + (b"\n" if cut == len(body) else b""))
            start = cut
            time.sleep(self.lines.rng.choice((0, 0.001, 0.005, 0.05)))
        self.tally.bytes_sent += len(body) + 1

    def huge(self, size: int) -> None:
        """One line of ``size`` bytes, written 1 MB at a time (never held whole)."""
        self.flush()
        head = self.lines.long_line(200)[:-2]
        chunk = b"x" * (1 << 20)
        self.conn.sendall(head)
        left = size - len(head) - 3
        while left > 0:
            self.conn.sendall(chunk[:min(left, len(chunk))])
            left -= len(chunk)
        self.conn.sendall(b'"}\n')
        self.tally.bytes_sent += size
        self.tally.sent_kind["over_long_%dMB" % (size >> 20)] += 1


def fuzz(sender: Sender, rng: random.Random, seconds: float, pause: threading.Event) -> None:
    lines = sender.lines
    started = time.monotonic()
    next_huge = started + rng.uniform(20, 120)
    next_progress = started + 60
    while time.monotonic() - started < seconds:
        now = time.monotonic()
        if now >= next_huge:
            sender.huge(rng.choice((100 << 20, 8 << 20, 2 << 20)))
            next_huge = now + rng.uniform(40, 120)
            continue
        if now >= next_progress:
            t = sender.tally
            print(f"  {now - started:5.0f} s: {sum(t.sent_kind.values())} lines sent, {t.valid_sent} valid "
                  f"advices, {t.delivered} delivered; client: {json.dumps(t.status)}", flush=True)
            next_progress = now + 60
        roll = rng.random()
        if roll < 0.40:
            sender.line("valid", lines.valid())
        elif roll < 0.55:
            sender.line("mutated", lines.mutated())
        elif roll < 0.63:
            sender.line("bad_factor", lines.bad_factor())
        elif roll < 0.72:
            sender.line("bad_field", lines.bad_field())
        elif roll < 0.76:
            sender.line("deep", lines.deep())
        elif roll < 0.80:
            sender.line("huge_number", lines.huge_number())
        elif roll < 0.83:
            sender.line("invalid_utf8", lines.bad_utf8())
        elif roll < 0.86:
            sender.line("nul", lines.nul())
        elif roll < 0.89:
            sender.line("other", lines.other())
        elif roll < 0.905:
            size = rng.choice((MAX_LINE_BYTES - 2, MAX_LINE_BYTES - 1, MAX_LINE_BYTES, MAX_LINE_BYTES + 1,
                               rng.randint(MAX_LINE_BYTES, 4 * MAX_LINE_BYTES)))
            sender.line("over_long" if size + 1 > MAX_LINE_BYTES else "at_limit", lines.long_line(size))
        elif roll < 0.93:
            sender.partial()
        elif roll < 0.9302:
            sender.flush()
            pause.set()  # a slow guard: the client's outgoing buffer fills
            time.sleep(rng.uniform(0.5, 2.0))
            pause.clear()
        elif roll < 0.9312:
            flood = rng.randrange(3)
            for _ in range(rng.randint(2000, 50000) if flood == 0 else 20000):
                if flood == 0:
                    sender.line("flood_valid", lines.valid())
                elif flood == 1:
                    sender.line("flood_error", b'{"v":1,"type":"error","code":"x","message":"m"}')
                else:
                    sender.line("flood_garbage", b"nope")
        else:
            sender.flush()
            time.sleep(rng.choice((0, 0.001, 0.01)))
    sender.flush()


# -- the client (child process) -----------------------------------------------------------------------

def rss_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def well_formed(advice: Any) -> bool:
    """What the loop may rely on in every advice poll() gives it."""
    if not isinstance(advice.id, str) or not 0 < len(advice.id) <= 64:
        return False
    if advice.action not in CAPABILITIES or not isinstance(advice.level, int) or advice.level not in (0, 1, 2, 3):
        return False
    if advice.action == "shrink_batch":
        f = advice.factor
        if not isinstance(f, float) or not math.isfinite(f) or not 0 < f < 1:
            return False
    if not isinstance(advice.reason, dict) or not isinstance(advice.message, str) or len(advice.message) > 1024:
        return False
    return advice.deadline_unix is None or (isinstance(advice.deadline_unix, float)
                                            and math.isfinite(advice.deadline_unix))


def client(path: str, seed: int, rss_limit_mb: float) -> int:
    sys.path.insert(0, os.path.join(REPO, "python"))
    from gpudoc import BatchSizeController, Guard
    from gpudoc import guard as guard_module

    rng = random.Random(seed ^ 0x5EED)
    out = sys.stdout
    exceptions: Counter = Counter()
    first_exception: List[str] = []
    checks = Counter()
    peak_rss = 0

    def problem(text: str) -> None:
        checks[text.split(":")[0]] += 1
        if checks[text.split(":")[0]] <= 3:
            out.write("X " + text + "\n")

    def call(name: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as error:  # what must never happen: an exception into the loop
            exceptions[name] += 1
            if len(first_exception) < 5:
                first_exception.append(f"{name}: {type(error).__name__}: {str(error)[:200]}")
            return None

    stderr_path = os.path.join(os.path.dirname(path), "client.stderr")
    with open(stderr_path, "w") as err:
        guard = Guard(path, name="fuzz", gpus=[0], stderr=err)
        ctl = BatchSizeController(1 << 20, micro_batch=1 << 20)
        finishing = False
        ended = False
        step = 0
        busy_until = time.monotonic() + 1
        last_status = 0.0
        while not ended:
            step += 1
            got = call("poll", guard.poll) or []
            delivered = []
            for advice in got:
                if advice.id == END_ID:
                    ended = True
                    continue
                delivered.append(advice.id if isinstance(advice.id, str) else repr(advice.id))
                if not well_formed(advice):
                    problem(f"malformed: {advice!r}"[:300])
                if advice.action == "shrink_batch":
                    call("shrink", ctl.shrink, advice.factor)
                    if ctl.micro_batch <= 1:
                        ctl = BatchSizeController(1 << 20, micro_batch=1 << 20)
                if rng.random() < 0.02:
                    deep: Any = []
                    for _ in range(5000):
                        deep = [deep]
                    call("ack", guard.ack, advice, "done", nested=deep, bad=object(), nan=float("nan"))
                else:
                    call("ack", guard.ack, advice, "done", batch_size=ctl.micro_batch)
            if delivered:
                out.write("D " + " ".join(delivered) + "\n")
            if step % 7 == 0:
                call("report", guard.report, step=step, samples_per_s=rng.random() * 1e4, loss=float("inf"))
            reader = guard._reader
            if reader is None or not reader.is_alive():
                problem("reader_dead: the reader thread is not alive")
            if not guard.connected:
                problem("disconnected: the client is not connected")
            if queued(guard) > getattr(guard_module, "MAX_QUEUED_ADVICE", 256) + 2:
                problem(f"queue: {queued(guard)} advices queued")
            rss = rss_kb("VmRSS")
            peak_rss = max(peak_rss, rss)
            if rss > rss_limit_mb * 1024:
                problem(f"rss: {rss} kB")
            now = time.monotonic()
            if now - last_status >= 1.0:
                last_status = now
                out.write("S " + json.dumps(counters(guard, rss, peak_rss, exceptions)) + "\n")
            out.flush()
            if not finishing and select.select([sys.stdin], [], [], 0)[0]:
                sys.stdin.readline()  # "finish" (or the end of the pipe): poll often, until the end
                finishing = True
            if finishing:
                time.sleep(0.005)
            elif now < busy_until:
                time.sleep(rng.choice((0.001, 0.005, 0.02)))
            else:
                time.sleep(rng.uniform(0.5, 3.0))  # a rare poll: floods overflow the queue
                busy_until = time.monotonic() + rng.uniform(1, 5)
        final = counters(guard, rss_kb("VmRSS"), peak_rss, exceptions)
        final.update(peak_rss_kb=max(peak_rss, rss_kb("VmHWM")), checks=dict(checks),
                     first_exceptions=first_exception)
        call("close", guard.close)
    with open(stderr_path) as err:
        final["stderr_lines"] = sum(1 for _ in err)
    out.write("F " + json.dumps(final) + "\n")
    out.flush()
    return 0


def counters(guard: Any, rss: int, peak: int, exceptions: Counter) -> Dict[str, Any]:
    # getattr: the fuzzer also runs against an older client (without the newer counters).
    names = ("lines_received", "lines_rejected", "advice_rejected", "advice_dropped", "errors_dropped",
             "dropped_sends", "lines_sent")
    out: Dict[str, Any] = {name: getattr(guard, name, None) for name in names}
    out.update(rss_kb=rss, peak_rss_kb=peak, exceptions=sum(exceptions.values()), connected=guard.connected)
    return out


def queued(guard: Any) -> int:
    count = getattr(guard, "queued", None)
    return count if count is not None else len(getattr(guard, "_advice", ()))


# -- the run ------------------------------------------------------------------------------------------

def run(args: argparse.Namespace) -> int:
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 32)
    rng = random.Random(seed)
    folder = tempfile.mkdtemp(prefix="gpudoc-guard-fuzz-")
    os.chmod(folder, 0o700)
    path = os.path.join(folder, "guard.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    os.chmod(path, 0o600)
    server.listen(1)
    server.settimeout(30)
    tally = Tally()
    started = time.monotonic()
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--client", path, "--seed", str(seed),
                              "--rss-limit-mb", str(args.rss_limit_mb)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    reader = threading.Thread(target=read_child, args=(child.stdout, tally), daemon=True)
    reader.start()
    done, pause = threading.Event(), threading.Event()
    failure: Optional[str] = None
    try:
        conn, _ = server.accept()
        conn.settimeout(60)  # a client that stopped reading: the send fails instead of hanging
        listener = threading.Thread(target=serve_client_lines, args=(conn, tally, pause, done), daemon=True)
        listener.start()
        sender = Sender(conn, tally, Lines(rng))
        try:
            fuzz(sender, rng, args.seconds, pause)
        except OSError as error:
            failure = f"the connection broke while sending: {error}"
        pause.clear()
        assert child.stdin is not None
        child.stdin.write(b"finish\n")
        child.stdin.flush()
        time.sleep(2.0)
        if failure is None:
            end = {"v": 1, "type": "advice", "id": END_ID, "level": 3, "action": "checkpoint_now"}
            conn.sendall(json.dumps(end).encode() + b"\n")
        try:
            child.wait(timeout=120)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            failure = failure or "the client never delivered the final advice (120 s)"
        reader.join(timeout=10)
        deadline = time.monotonic() + 5
        while tally.bye is None and time.monotonic() < deadline:
            time.sleep(0.05)
        done.set()
        listener.join(timeout=5)
        conn.close()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        server.close()
        shutil.rmtree(folder, ignore_errors=True)
    return report(args, seed, time.monotonic() - started, tally, failure)


def report(args: argparse.Namespace, seed: int, wall_s: float, tally: Tally, failure: Optional[str]) -> int:
    final = tally.final or {}
    dropped = final.get("advice_dropped")
    seen = tally.problem_kinds + Counter(final.get("checks", {}))  # streamed, and the final count
    checks: Dict[str, bool] = {
        "client finished and reported": tally.final is not None and failure is None,
        "reader alive and connected throughout": not seen["reader_dead"] and not seen["disconnected"],
        "no exception reached the loop": final.get("exceptions", 1) == 0,
        f"peak RSS under {args.rss_limit_mb} MB": 0 < final.get("peak_rss_kb", 1 << 30) < args.rss_limit_mb * 1024
        and not seen["rss"],
        "queue never over its bound": not seen["queue"],
        "valid advices: delivered once or dropped": dropped is not None
        and tally.valid_sent == tally.delivered + dropped and not tally.duplicates,
        "no invalid advice delivered": not tally.invalid_delivered,
        "every delivered advice well-formed": not seen["malformed"],
        "no critical advice dropped": tally.critical_sent == tally.critical_delivered,
        "drops told to the guard": tally.bye is not None and tally.bye.get("advice_dropped") == dropped
        and (dropped == 0 or tally.drop_errors > 0),
        "client lines are JSON objects under 64 KiB": tally.client_bad_lines == 0,
    }
    summary = {
        "seed": seed, "seconds": args.seconds, "wall_s": float("%.1f" % wall_s),
        "lines_sent": sum(tally.sent_kind.values()), "lines_sent_by_kind": dict(sorted(tally.sent_kind.items())),
        "bytes_sent": tally.bytes_sent, "valid_advices_sent": tally.valid_sent,
        "critical_advices_sent": tally.critical_sent, "advices_delivered": tally.delivered,
        "critical_advices_delivered": tally.critical_delivered, "advice_dropped": dropped,
        "bye": tally.bye, "advice_dropped_errors_received": tally.drop_errors,
        "duplicates": tally.duplicates[:10], "invalid_delivered": tally.invalid_delivered[:10],
        "from_client": dict(tally.from_client), "error_codes_from_client": dict(tally.error_codes),
        "client": final, "problems": tally.problems, "failure": failure,
        "checks": checks, "ok": all(checks.values()),
    }
    print(f"guard_client_fuzz: seed {seed}, {summary['wall_s']} s")
    print(f"  lines sent: {summary['lines_sent']} ({tally.bytes_sent / 1e6:.0f} MB)")
    for kind, count in summary["lines_sent_by_kind"].items():
        print(f"    {kind:20s} {count}")
    print(f"  valid advices sent: {tally.valid_sent} ({tally.critical_sent} level 3 or stop)")
    print(f"  delivered: {tally.delivered} ({tally.critical_delivered} level 3 or stop); dropped by the "
          f"queue bound: {dropped} (bye says {tally.bye.get('advice_dropped') if tally.bye else None}, "
          f"{tally.drop_errors} advice_dropped errors)")
    print(f"  client: lines received {final.get('lines_received')}, rejected {final.get('lines_rejected')} "
          f"(advices {final.get('advice_rejected')}), guard errors not kept {final.get('errors_dropped')}, "
          f"lines not sent {final.get('dropped_sends')}, stderr lines {final.get('stderr_lines')}")
    print(f"  peak RSS: {final.get('peak_rss_kb', 0) / 1024:.1f} MB; exceptions in the loop: "
          f"{final.get('exceptions')} {final.get('first_exceptions') or ''}")
    for name, ok in checks.items():
        print(f"  {'PASS' if ok else 'FAIL'}  {name}")
    if failure or tally.problems:
        print(f"  {failure or ''} {tally.problems}")
    print("result: " + ("PASS" if summary["ok"] else "FAIL"))
    if args.json:
        with open(args.json, "w") as out:
            json.dump(summary, out, indent=1)
    return 0 if summary["ok"] else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--rss-limit-mb", type=float, default=64.0)
    parser.add_argument("--json", metavar="FILE")
    parser.add_argument("--client", metavar="SOCKET", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        return client(args.client, args.seed or 0, args.rss_limit_mb)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
