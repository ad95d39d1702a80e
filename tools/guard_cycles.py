#!/usr/bin/env python3
"""Connect, hello, close, many times over, against a running `gpudoc guard`: are its files flat?

    tools/guard_cycles.py [--gpudoc build-portable/src/cli/gpudoc] [--cycles 10000]
                          [--parallel 20] [--backend fake:2] [--json FILE]

Starts `gpudoc guard --backend BACKEND --no-store --log LOG -- sleep 3600` in a private folder
(tempfile.mkdtemp), reads the job channel's socket from the log's `start` line, then for each
cycle: connects, sends a `hello` (this process's pid, so SO_PEERCRED agrees and the guard opens a
pidfd for it), reads the `welcome`, and closes; --parallel clients do so at once (the guard
answers a hello on its loop's next turn, ~0.1 s). Every --every cycles, with no client connected,
it counts the guard's open files (/proc/PID/fd) and its resident memory. Every 7th cycle sends 8 bytes of garbage before the
hello, and every 11th closes without reading the welcome, as broken clients do.

Passes when every cycle got its welcome, the guard is still running at the end, and its open
files at the end are no more than at the first count plus --slack (default 2). Prints a table of
the counts and exits 0 on a pass, 1 on a fail, 2 on bad arguments or a guard that did not start.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def socket_from_log(log: str, guard: subprocess.Popen, wait_s: float = 20.0) -> Optional[str]:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and guard.poll() is None:
        try:
            with open(log) as f:
                for line in f:
                    event = json.loads(line)
                    if event.get("type") == "start" and event.get("socket"):
                        return str(event["socket"])
        except (OSError, ValueError):
            pass
        time.sleep(0.1)
    return None


def one_cycle(path: str, i: int) -> bool:
    """One connection; True when the welcome came (or was not waited for, every 11th)."""
    hello = {"v": 1, "type": "hello", "pid": os.getpid(), "name": f"cycle-{i}", "gpus": [0],
             "capabilities": ["shrink_batch", "stop"], "signals": ["stop"]}
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10.0)
        s.connect(path)
        if i % 7 == 0:
            s.sendall(b"\x00garbage\n")
        s.sendall((json.dumps(hello) + "\n").encode())
        if i % 11 == 0:
            return True
        data = b""
        while b"welcome" not in data:
            chunk = s.recv(65536)
            if not chunk:
                return False
            data += chunk
        return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpudoc", default=os.path.join(REPO, "build-portable/src/cli/gpudoc"))
    parser.add_argument("--cycles", type=int, default=10000)
    parser.add_argument("--every", type=int, default=1000)
    parser.add_argument("--parallel", type=int, default=20)
    parser.add_argument("--backend", default="fake:2")
    parser.add_argument("--slack", type=int, default=2)
    parser.add_argument("--json", metavar="FILE")
    args = parser.parse_args()
    if args.cycles < 1 or args.every < 1 or args.parallel < 1:
        print("guard_cycles: --cycles, --every and --parallel must be at least 1", file=sys.stderr)
        return 2
    folder = tempfile.mkdtemp(prefix="gpudoc-guard-cycles-")
    log = os.path.join(folder, "guard.jsonl")
    guard = subprocess.Popen([args.gpudoc, "guard", "--backend", args.backend, "--no-store", "--quiet",
                              "--log", log, "--", "sleep", "3600"], stdin=subprocess.DEVNULL)
    try:
        path = socket_from_log(log, guard)
        if path is None:
            print(f"guard_cycles: the guard did not start (exit {guard.poll()}); see {log}", file=sys.stderr)
            return 2
        counts: List[Dict[str, Any]] = []
        failed = 0
        start = time.monotonic()
        def cycle(i: int) -> bool:
            try:
                return one_cycle(path, i)
            except OSError:
                return False

        with ThreadPoolExecutor(max_workers=args.parallel) as pool:
            for first in range(0, args.cycles, args.every):
                counts.append({"cycle": first, "open_files": open_files(guard.pid), "rss_kb": rss_kb(guard.pid)})
                batch = range(first, min(first + args.every, args.cycles))
                failed += sum(0 if ok else 1 for ok in pool.map(cycle, batch))
                print(f"  {batch.stop} cycles, {failed} without a welcome", file=sys.stderr, flush=True)
        time.sleep(1.5)  # the guard's loop notices the last closes
        alive = guard.poll() is None
        if alive:
            counts.append({"cycle": args.cycles, "open_files": open_files(guard.pid), "rss_kb": rss_kb(guard.pid)})
        left = sum(1 for line in open(log) if '"job_left"' in line)
        first, last = counts[0], counts[-1]
        ok = alive and failed == 0 and last["open_files"] <= first["open_files"] + args.slack
        summary = {"cycles": args.cycles, "failed_cycles": failed, "guard_alive": alive, "counts": counts,
                   "job_left_events": left, "wall_s": round(time.monotonic() - start, 1), "ok": ok}
        print(f"{'cycle':>7} {'open files':>10} {'RSS MiB':>8}")
        for c in counts:
            print(f"{c['cycle']:>7} {c['open_files']:>10} {c['rss_kb'] / 1024:>8.1f}")
        print(f"{args.cycles} cycles in {summary['wall_s']} s, {failed} without a welcome, "
              f"{left} job_left events; guard {'running' if alive else 'gone'}")
        print("result: " + ("PASS" if ok else "FAIL"))
        if args.json:
            with open(args.json, "w") as out:
                json.dump(summary, out, indent=1)
        return 0 if ok else 1
    finally:
        if guard.poll() is None:
            guard.send_signal(signal.SIGTERM)
            try:
                guard.wait(timeout=20)
            except subprocess.TimeoutExpired:
                guard.kill()
                guard.wait()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
