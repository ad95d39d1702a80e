"""A stand-in for ``gpudoc guard`` in tests: a Unix socket server in a private temporary folder
that records what the job sends and sends what the test scripts."""
from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional


class FakeGuard:
    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="gpudoc-guard-test-")
        os.chmod(self.folder, 0o700)
        self.path = os.path.join(self.folder, "guard.sock")
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        os.chmod(self.path, 0o600)
        self.server.listen(4)
        self.server.settimeout(5)
        self.conn: Optional[socket.socket] = None
        self.received: List[Dict[str, Any]] = []
        self.raw_received = bytearray()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.server.accept()
        except OSError:
            return
        self.conn = conn
        conn.settimeout(0.1)
        while not self._stop.is_set():
            try:
                data = conn.recv(65536)
            except socket.timeout:
                continue
            except OSError:
                return
            if not data:
                return
            with self._lock:
                self.raw_received += data
                *lines, rest = bytes(self.raw_received).split(b"\n")
                for line in lines:
                    self.received.append(json.loads(line))
                self.raw_received = bytearray(rest)

    def wait_connected(self, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while self.conn is None:
            if time.monotonic() > deadline:
                raise AssertionError("the client never connected")
            time.sleep(0.01)

    def send_raw(self, data: bytes, timeout: float = 60.0) -> None:
        """Send all of ``data``, however slowly the client reads (hang guard: ``timeout``)."""
        self.wait_connected()
        assert self.conn is not None
        view = memoryview(data)
        deadline = time.monotonic() + timeout
        while view:
            try:
                sent = self.conn.send(view)  # the socket's 0.1 s timeout serves the reading loop
            except socket.timeout:
                if time.monotonic() > deadline:
                    raise
                continue
            view = view[sent:]

    def send(self, message: Dict[str, Any]) -> None:
        self.send_raw((json.dumps(message) + "\n").encode())

    def messages(self, kind: str) -> List[Dict[str, Any]]:
        with self._lock:
            return [m for m in self.received if m.get("type") == kind]

    def wait_for(self, kind: str, count: int = 1, timeout: float = 5.0) -> List[Dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while len(self.messages(kind)) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"no {count} {kind!r} message(s); got {self.received!r}")
            time.sleep(0.01)
        return self.messages(kind)

    def die(self) -> None:
        """The guard process ends: its sockets close at once."""
        self._stop.set()
        if self.conn is not None:
            self.conn.close()
        self.server.close()

    def close(self) -> None:
        self.die()
        self._thread.join(timeout=2)
        shutil.rmtree(self.folder, ignore_errors=True)


def wait_until(predicate, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
