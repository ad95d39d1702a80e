#!/usr/bin/env python3
"""A stand-in for ``gpudoc guard`` in tests (the real one is C++, src/guard): enough of its
interface to run tools/guard_e2e.sh and workloads/guard_train.py against it on a machine without a
GPU. Not a product: it knows only what these tests need.

    guard_stand_in.py guard [--policy FILE] [--log FILE] [--dry-run] [--signal LIST] -- CMD ARGS...
    guard_stand_in.py trace info FILE        # checks FILE is a gpudoc trace (header, JSON lines)

* GPUs: ``$GPUDOC_BACKEND`` (or ``--backend``) must be ``replay:FILE[@SPEED]``; the replay clock
  starts with the guard. Each tick (100 ms of wall time) it reads, per GPU a job named in its hello
  (CUDA index N = the trace's GPU N), the newest die and HBM temperatures at the replay position.
* Forecast: persistence (the temperature now), the real guard's fallback.
* Policy: the built-in levels of docs/guard-policy.md (triggers on the die and HBM temperatures
  relative to the trace header's limits, hysteresis, min_interval_s), the escalation rules of
  src/guard/escalation.hpp; from ``--policy`` only the ``noncritical = NAME | re:REGEX`` lines.
* Channel: docs/guard-protocol.md (hello, welcome, advice, ack, report, bye).
* Non-critical processes: any process of this host (not the job, not this one) whose
  ``/proc/PID/comm`` or argv[0] basename equals a name, or matches a ``re:`` pattern whole, is sent
  SIGSTOP when a level with pause_noncritical is entered and SIGCONT when it clears (and at exit).
* ``--log FILE``: JSON Lines ``decision``, ``advice``, ``ack`` (with ``latency_ms`` from the
  deciding sample to the ack), ``signal``, ``report``, as the brief of tools/guard_e2e.sh says.
* Exit code: the job's.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional

TICK_S = 0.1
# The default policy (docs/guard-policy.md): (metric, limit key, offset, clear offset).
LEVELS = {
    1: {"triggers": [("gpu", "temperature_gpu_max_celsius", -2, -6), ("hbm", "temperature_memory_max_celsius", -5, -10)],
        "actions": [("shrink_batch", 0.75)], "min_interval_s": 60},
    2: {"triggers": [("gpu", "temperature_slowdown_celsius", -1, -6), ("hbm", "temperature_memory_max_celsius", 0, -5)],
        "actions": [("checkpoint_now", None), ("pause_noncritical", None)], "min_interval_s": 120},
    3: {"triggers": [("gpu", "temperature_shutdown_celsius", -3, None)],
        "actions": [("checkpoint_now", None), ("stop", None)], "min_interval_s": 0},
}
LEVEL3_CLEAR = ("temperature_slowdown_celsius", -6)


class Log:
    def __init__(self, path: Optional[str]) -> None:
        self.out = open(path, "a", encoding="utf-8") if path else None
        self.lock = threading.Lock()

    def write(self, record: Dict[str, Any]) -> None:
        if self.out is None:
            return
        with self.lock:
            self.out.write(json.dumps(record) + "\n")
            self.out.flush()


class Escalator:
    """One GPU's level from its (persistence) forecasts, by the rules of escalation.hpp."""

    def __init__(self, limits: Dict[str, Any]) -> None:
        self.levels = {}
        for n, spec in LEVELS.items():
            triggers = []
            for metric, key, offset, clear in spec["triggers"]:
                if isinstance(limits.get(key), (int, float)):
                    base = float(limits[key])
                    clear_at = base + clear if clear is not None else None
                    if n == 3:
                        clear_at = float(limits[LEVEL3_CLEAR[0]]) + LEVEL3_CLEAR[1]
                    triggers.append((metric, base + offset, clear_at if clear_at is not None else base + offset))
            self.levels[n] = {"triggers": triggers, "actions": spec["actions"],
                              "min_interval_s": spec["min_interval_s"], "last_sent": None}
        self.level = 0
        self.paused = False

    def tick(self, t: float, values: Dict[str, float]) -> Optional[Dict[str, Any]]:
        for n in (3, 2, 1):
            if n <= self.level:
                break
            for metric, threshold, _ in self.levels[n]["triggers"]:
                v = values.get(metric)
                if v is not None and v >= threshold:
                    return self._escalate(n, t, f"level {n}: {metric} forecast {v:.1f} >= {threshold:.1f}")
        if self.level == 0 or not self._cleared(self.level, values):
            return None
        nxt = max([n for n in self.levels if n < self.level and not self._cleared(n, values)], default=0)
        d = {"level": nxt, "previous_level": self.level, "actions": [],
             "reason": f"level {self.level} cleared, now level {nxt}"}
        still = any(n <= nxt and any(a == "pause_noncritical" for a, _ in self.levels[n]["actions"]) for n in self.levels)
        if self.paused and not still:
            d["actions"] = [("resume_noncritical", None)]
            self.paused = False
        self.level = nxt
        return d

    def _cleared(self, n: int, values: Dict[str, float]) -> bool:
        return all(values.get(m) is None or values[m] < clear for m, _, clear in self.levels[n]["triggers"])

    def _escalate(self, n: int, t: float, reason: str) -> Dict[str, Any]:
        spec = self.levels[n]
        d = {"level": n, "previous_level": self.level, "actions": [], "reason": reason}
        self.level = n
        if spec["last_sent"] is None or t - spec["last_sent"] >= spec["min_interval_s"]:
            d["actions"] = list(spec["actions"])
            spec["last_sent"] = t
            if any(a == "pause_noncritical" for a, _ in spec["actions"]):
                self.paused = True
        else:
            d["rate_limited"] = True
        return d


class Replay:
    def __init__(self, spec: str) -> None:
        if not spec.startswith("replay:"):
            raise SystemExit(f"guard_stand_in: only a replay:FILE[@SPEED] backend, not {spec!r}")
        path, _, speed = spec[len("replay:"):].partition("@")
        self.speed = float(speed) if speed else 1.0
        with open(path, encoding="utf-8") as f:
            records = [json.loads(line) for line in f if line.strip()]
        self.gpus = records[0]["gpus"]
        self.series: Dict[int, Dict[str, List[tuple]]] = {}
        for r in records[1:]:
            if r.get("type") != "sample":
                continue
            s = self.series.setdefault(r["gpu"], {"gpu": [], "hbm": []})
            if "gpu_temperature_celsius" in r:
                s["gpu"].append((r["t"], r["gpu_temperature_celsius"]))
            if "memory_temperature_celsius" in r:
                s["hbm"].append((r["t"], r["memory_temperature_celsius"]))
        for s in self.series.values():
            s["gpu"].sort()
            s["hbm"].sort()
        self.start = time.time()

    def newest(self, gpu: int, metric: str, position: float) -> Optional[tuple]:
        best = None
        for t, v in self.series.get(gpu, {}).get(metric, []):
            if t > position:
                break
            best = (t, v)
        return best


class Guard:
    def __init__(self, argv: List[str]) -> None:
        self.policy, self.log_path, self.backend = None, None, os.environ.get("GPUDOC_BACKEND", "")
        self.dry_run = False
        while argv and argv[0] != "--":
            opt = argv.pop(0)
            if opt in ("--policy", "--log", "--signal", "--backend"):
                value = argv.pop(0)
                if opt == "--policy":
                    self.policy = value
                elif opt == "--log":
                    self.log_path = value
                elif opt == "--backend":
                    self.backend = value
            elif opt == "--dry-run":
                self.dry_run = True
            else:
                raise SystemExit(f"guard_stand_in: unknown option {opt}")
        self.command = argv[1:]
        self.log = Log(self.log_path)
        self.noncritical = self._noncritical_names()
        self.replay = Replay(self.backend)
        self.jobs: List[Dict[str, Any]] = []
        self.advice_n = 0
        self.sent: Dict[str, Dict[str, Any]] = {}
        self.stopped: List[int] = []
        self.lock = threading.Lock()

    def _noncritical_names(self) -> List[str]:
        names: List[str] = []
        if self.policy:
            for line in open(self.policy, encoding="utf-8"):
                line = line.split("#", 1)[0].strip()
                key, _, value = line.partition("=")
                if key.strip() == "noncritical":
                    names += value.split()
        return names

    def serve(self, server: socket.socket) -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=self.connection, args=(conn,), daemon=True).start()

    def connection(self, conn: socket.socket) -> None:
        job: Dict[str, Any] = {"conn": conn, "gpus": [], "capabilities": []}
        buffer = b""
        while True:
            try:
                data = conn.recv(65536)
            except OSError:
                return
            if not data:
                return
            buffer += data
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                self.message(job, json.loads(line))

    def message(self, job: Dict[str, Any], m: Dict[str, Any]) -> None:
        kind = m.get("type")
        if kind == "hello":
            job.update(pid=m["pid"], gpus=[g for g in m.get("gpus", []) if isinstance(g, int)],
                       capabilities=m.get("capabilities", []))
            with self.lock:
                self.jobs.append(job)
            self.send(job, {"v": 1, "type": "welcome", "guard_pid": os.getpid(), "job": "j1",
                            "gpus": job["gpus"], "horizon_s": 5})
        elif kind == "ack":
            now = time.time()
            sent = self.sent.get(m.get("id"), {})
            details = {k: v for k, v in m.items() if k not in ("v", "type", "id", "status", "action")}
            self.log.write({"type": "ack", "id": m.get("id"), "action": m.get("action"), "status": m.get("status"),
                            "received_unix": now,
                            "latency_ms": (now - sent["sample_unix"]) * 1e3 if sent else None, **details})
        elif kind == "report":
            self.log.write({"type": "report", "t_unix": time.time(), "figures": m.get("figures", {})})

    def send(self, job: Dict[str, Any], body: Dict[str, Any]) -> None:
        try:
            job["conn"].sendall((json.dumps(body) + "\n").encode())
        except OSError:
            pass

    def processes(self) -> List[int]:
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) in (os.getpid(), *[j.get("pid") for j in self.jobs]):
                continue
            try:
                comm = open(f"/proc/{entry}/comm", encoding="utf-8").read().strip()
                argv0 = open(f"/proc/{entry}/cmdline", "rb").read().split(b"\0")[0].decode(errors="replace")
            except OSError:
                continue
            names = (comm, os.path.basename(argv0))
            for want in self.noncritical:
                if (want.startswith("re:") and any(re.fullmatch(want[3:], n) for n in names)) or want in names:
                    found.append(int(entry))
                    break
        return found

    def act(self, gpu: int, decision: Dict[str, Any], sample_unix: float) -> None:
        self.log.write({"type": "decision", "t_unix": time.time(), "gpu": gpu, "level": decision["level"],
                        "previous_level": decision["previous_level"],
                        "actions": [a for a, _ in decision["actions"]], "reason": decision["reason"],
                        "rate_limited": decision.get("rate_limited", False)})
        for action, factor in decision["actions"]:
            if action == "pause_noncritical" and not self.dry_run:
                for pid in self.processes():
                    os.kill(pid, signal.SIGSTOP)
                    self.stopped.append(pid)
                    self.log.write({"type": "signal", "pid": pid, "signal": "SIGSTOP", "t_unix": time.time()})
            if action == "resume_noncritical" and not self.dry_run:
                self.continue_stopped()
            for job in list(self.jobs):
                if gpu not in job["gpus"] or action not in job["capabilities"]:
                    continue
                self.advice_n += 1
                body = {"v": 1, "type": "advice", "id": f"j1-{self.advice_n}", "level": decision["level"],
                        "action": action, "gpu": gpu, "issued_unix": time.time(),
                        "deadline_unix": time.time() + 10, "reason": {"text": decision["reason"]}}
                if factor is not None:
                    body["factor"] = factor
                self.sent[body["id"]] = {"sample_unix": sample_unix}
                sent_unix = time.time()
                self.send(job, body)
                self.log.write({"type": "advice", "id": body["id"], "action": action, "level": decision["level"],
                                "gpu": gpu, "sample_unix": sample_unix, "sent_unix": sent_unix})

    def continue_stopped(self) -> None:
        for pid in self.stopped:
            try:
                os.kill(pid, signal.SIGCONT)
                self.log.write({"type": "signal", "pid": pid, "signal": "SIGCONT", "t_unix": time.time()})
            except ProcessLookupError:
                pass
        self.stopped = []

    def run(self) -> int:
        folder = tempfile.mkdtemp(prefix="gpudoc-guard-")
        path = os.path.join(folder, "guard.sock")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        os.chmod(path, 0o600)
        server.listen(8)
        threading.Thread(target=self.serve, args=(server,), daemon=True).start()
        child = subprocess.Popen(self.command, env={**os.environ, "GPUDOC_GUARD_SOCKET": path})
        signal.signal(signal.SIGTERM, lambda *_: child.terminate())
        escalators: Dict[int, Escalator] = {}
        try:
            while child.poll() is None:
                time.sleep(TICK_S)
                position = (time.time() - self.replay.start) * self.replay.speed
                for gpu in sorted({g for j in list(self.jobs) for g in j["gpus"]}):
                    if gpu >= len(self.replay.gpus):
                        continue
                    die = self.replay.newest(gpu, "gpu", position)
                    hbm = self.replay.newest(gpu, "hbm", position)
                    if die is None:
                        continue
                    esc = escalators.setdefault(gpu, Escalator(self.replay.gpus[gpu]))
                    values = {"gpu": float(die[1])}
                    if hbm is not None and position - hbm[0] <= 2.0:
                        values["hbm"] = float(hbm[1])
                    decision = esc.tick(position, values)
                    if decision is not None:
                        self.act(gpu, decision, self.replay.start + die[0] / self.replay.speed)
            rc = child.returncode
        finally:
            self.continue_stopped()
            for job in self.jobs:
                self.send(job, {"v": 1, "type": "bye", "reason": "guard_stopping"})
            server.close()
            shutil.rmtree(folder, ignore_errors=True)
        self.log.write({"type": "report", "t_unix": time.time(), "exit_code": rc, "advice_sent": self.advice_n})
        return rc if rc >= 0 else 128 - rc


def trace_info(path: str) -> int:
    try:
        with open(path, encoding="utf-8") as f:
            header = json.loads(f.readline())
            lines = sum(1 for line in f if json.loads(line))
    except (OSError, ValueError) as error:
        print(f"{path}: not a gpudoc trace: {error}", file=sys.stderr)
        return 2
    if header.get("type") != "header" or header.get("format") != "gpudoc-trace":
        print(f"{path}: not a gpudoc trace", file=sys.stderr)
        return 2
    print(f"{path}: a gpudoc trace ({lines} lines after the header; checked by the stand-in only)")
    return 0


def main(argv: List[str]) -> int:
    if argv[:2] == ["trace", "info"] and len(argv) == 3:
        return trace_info(argv[2])
    if argv[:2] == ["guard", "--help"]:
        print(__doc__)
        return 0
    if argv[:1] == ["guard"] and "--" in argv:
        return Guard(argv[1:]).run()
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
