#!/usr/bin/env python3
"""Whether `gpudoc serve` answers Prometheus whatever other clients do (no GPU: fake GPUs).

    tools/serve_hostile.py [--gpudoc BIN] [--backend fake:8] [--seconds 60] [--json FILE]

Starts `gpudoc serve` on a free loopback port and, one after the other:
  slow     SLOW (200) connections from 127.0.0.2 that send their request a byte every 4 s and
           NONREADERS (50) from 127.0.0.3 that ask for /api/v1/history and never read, each
           reconnecting when closed, for SECONDS; meanwhile a scraper (127.0.0.1) asks for
           /metrics every second: every scrape must be answered, 200, within 1 s;
  line     one 256 MiB request line, then four at once: serve's resident memory (sampled every
           20 ms) must stay under 64 MB;
  burst    CONCURRENT (2000) scrapes connected at once: every one answered 200, none dropped from
           the listen queue (the kernel's TcpExt ListenOverflows does not move).
Prints one line per check and a summary; exit 0 when every check held, 1 otherwise, 2 on bad usage.
"""
import argparse
import errno
import json
import os
import resource
import selectors
import socket
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_bytes(pid):
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def listen_overflows():
    with open("/proc/net/netstat", encoding="ascii") as f:
        lines = f.read().splitlines()
    for names, values in zip(lines[::2], lines[1::2]):
        if names.startswith("TcpExt:"):
            return int(dict(zip(names.split(), values.split()))["ListenOverflows"])
    return -1


def established(s):
    """Whether the server has not closed its end (TCP_INFO's state is still ESTABLISHED)."""
    try:
        return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0] == 1
    except OSError:
        return False


def connect_from(source, port, timeout=10.0):
    s = socket.socket()
    s.bind((source, 0))
    s.settimeout(timeout)
    s.connect(("127.0.0.1", port))
    return s


def scrape(port, timeout=10.0):
    """One GET /metrics on a new connection: (status, seconds) or (None, seconds) on failure."""
    t0 = time.monotonic()
    try:
        with connect_from("127.0.0.1", port, timeout) as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else None
        return status, time.monotonic() - t0
    except (OSError, ValueError, IndexError):
        return None, time.monotonic() - t0


class Attackers:
    """Slow senders and non-readers, each reconnecting when the server closes it."""

    def __init__(self, port, slow, nonreaders):
        self.port, self.slow, self.nonreaders = port, slow, nonreaders
        self.stop = threading.Event()
        self.connects = {"slow": 0, "nonreader": 0}
        self.closed_by_server = {"slow": 0, "nonreader": 0}
        self.thread = threading.Thread(target=self.run, daemon=True)

    def open(self, kind):
        try:
            if kind == "slow":
                s = connect_from("127.0.0.2", self.port)
                s.setblocking(False)
                s.send(b"G")
            else:
                s = connect_from("127.0.0.3", self.port)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.setblocking(False)
                s.send(b"GET /api/v1/history?seconds=86400 HTTP/1.1\r\nHost: x\r\n\r\n")
            self.connects[kind] += 1
            return s
        except OSError:
            return None

    def run(self):
        rest = b"ET /metrics HTTP/1.1\r\nX-Slow: " + b"a" * 4096
        conns = {"slow": [], "nonreader": []}
        step = 0
        next_byte = time.monotonic() + 4
        while not self.stop.is_set():
            for kind, want in (("slow", self.slow), ("nonreader", self.nonreaders)):
                alive = []
                for s, k in conns[kind]:
                    if established(s):
                        alive.append((s, k))
                    else:  # the server closed it (read or not)
                        self.closed_by_server[kind] += 1
                        s.close()
                conns[kind] = alive
                while len(conns[kind]) < want and not self.stop.is_set():
                    s = self.open(kind)
                    if s is None:
                        break
                    conns[kind].append((s, 0))
            if time.monotonic() >= next_byte:
                step += 1
                next_byte += 4
                for i, (s, k) in enumerate(conns["slow"]):
                    try:
                        s.send(rest[k:k + 1])
                        conns["slow"][i] = (s, k + 1)
                    except OSError:
                        pass
            self.stop.wait(0.2)
        for kind in conns:
            for s, _ in conns[kind]:
                s.close()


def check_slow(port, args, out):
    attackers = Attackers(port, args.slow, args.nonreaders)
    attackers.thread.start()
    time.sleep(2)
    latencies, failures = [], 0
    t_end = time.monotonic() + args.seconds
    while time.monotonic() < t_end:
        t0 = time.monotonic()
        status, seconds = scrape(port)
        latencies.append(seconds)
        if status != 200 or seconds >= 1.0:
            failures += 1
        time.sleep(max(0.0, 1.0 - (time.monotonic() - t0)))
    attackers.stop.set()
    attackers.thread.join()
    ok = failures == 0 and latencies
    out["slow"] = {"scrapes": len(latencies), "failed_or_over_1s": failures,
                   "max_s": round(max(latencies), 4), "median_s": round(sorted(latencies)[len(latencies) // 2], 4),
                   "attacker_connects": attackers.connects, "closed_by_server": attackers.closed_by_server,
                   "ok": bool(ok)}
    print(f"slow: {len(latencies)} scrapes beside {args.slow} slow senders and {args.nonreaders} non-readers "
          f"over {args.seconds:.0f} s: {failures} failed or over 1 s, max {max(latencies) * 1e3:.1f} ms "
          f"(attackers connected {attackers.connects}, closed by the server {attackers.closed_by_server}): "
          f"{'ok' if ok else 'FAIL'}")
    return ok


def send_line(port, size, result):
    try:
        s = connect_from("127.0.0.4", port, 30)
        s.sendall(b"GET /")
        chunk = b"a" * 65536
        sent = 0
        while sent < size:
            sent += s.send(chunk)
        result.append(("all sent", sent))
    except OSError as e:
        result.append((errno.errorcode.get(e.errno, str(e)), sent if "sent" in locals() else 0))
    finally:
        try:
            s.close()
        except (OSError, UnboundLocalError):
            pass


def check_line(port, pid, out):
    size = 256 << 20
    base = rss_bytes(pid)
    peak = base
    outcomes = []
    for clients in (1, 4):
        result = []
        threads = [threading.Thread(target=send_line, args=(port, size, result)) for _ in range(clients)]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            peak = max(peak, rss_bytes(pid))
            time.sleep(0.02)
        outcomes.append(result)
    status, _ = scrape(port)
    ok = peak < (64 << 20) and status == 200
    out["line"] = {"rss_before_bytes": base, "rss_peak_bytes": peak, "outcomes": outcomes, "scrape_after": status,
                   "ok": ok}
    print(f"line: 256 MiB request line, once then 4 at once: serve's RSS {base / 2**20:.1f} MiB before, peak "
          f"{peak / 2**20:.1f} MiB (limit 64); senders: {outcomes}; a scrape after: {status}: {'ok' if ok else 'FAIL'}")
    return ok


def check_burst(port, args, out):
    before = listen_overflows()
    sel = selectors.DefaultSelector()
    request = b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    t0 = time.monotonic()
    conns = []
    for _ in range(args.concurrent):
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        conns.append(s)
        sel.register(s, selectors.EVENT_WRITE, {"sent": False, "data": b"", "t0": time.monotonic()})
    done, statuses, slowest = 0, {}, 0.0
    deadline = time.monotonic() + 120
    while done < len(conns) and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=1):
            s, st = key.fileobj, key.data
            try:
                if not st["sent"]:
                    s.send(request)
                    st["sent"] = True
                    sel.modify(s, selectors.EVENT_READ, st)
                    continue
                chunk = s.recv(65536)
            except OSError:
                chunk = b""
            if chunk:
                st["data"] += chunk
                continue
            sel.unregister(s)
            s.close()
            done += 1
            code = st["data"].split(b" ", 2)[1].decode() if st["data"].startswith(b"HTTP/1.1 ") else "none"
            statuses[code] = statuses.get(code, 0) + 1
            slowest = max(slowest, time.monotonic() - st["t0"])
    for key in list(sel.get_map().values()):
        key.fileobj.close()
    overflows = listen_overflows() - before
    ok = statuses.get("200", 0) == args.concurrent and overflows == 0
    out["burst"] = {"concurrent": args.concurrent, "statuses": statuses, "listen_overflows": overflows,
                    "slowest_s": round(slowest, 3), "all_s": round(time.monotonic() - t0, 3), "ok": ok}
    print(f"burst: {args.concurrent} scrapes at once: answers {statuses}, listen-queue drops {overflows}, slowest "
          f"{slowest:.2f} s: {'ok' if ok else 'FAIL'}")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpudoc", default=os.path.join(REPO, "build-portable", "src", "cli", "gpudoc"))
    ap.add_argument("--backend", default="fake:8")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--slow", type=int, default=200)
    ap.add_argument("--nonreaders", type=int, default=50)
    ap.add_argument("--concurrent", type=int, default=2000)
    ap.add_argument("--only", choices=("slow", "line", "burst"))
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    if args.seconds <= 0 or args.slow < 0 or args.nonreaders < 0 or args.concurrent < 1:
        ap.error("--seconds, --slow, --nonreaders and --concurrent must be positive")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    port = free_port()
    env = dict(os.environ, GPUDOC_BACKEND=args.backend)
    serve = subprocess.Popen([args.gpudoc, "serve", "--listen", f"127.0.0.1:{port}", "--no-store"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    out = {"gpudoc": args.gpudoc, "backend": args.backend}
    try:
        for _ in range(100):
            if scrape(port, 1)[0] == 200:
                break
            time.sleep(0.1)
        else:
            print("serve did not answer within 10 s", file=sys.stderr)
            return 1
        oks = []
        if args.only in (None, "slow"):
            oks.append(check_slow(port, args, out))
        if args.only in (None, "line"):
            oks.append(check_line(port, serve.pid, out))
        if args.only in (None, "burst"):
            oks.append(check_burst(port, args, out))
        out["ok"] = all(oks)
    finally:
        serve.terminate()
        try:
            serve.wait(timeout=20)
        except subprocess.TimeoutExpired:
            serve.kill()
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)
    print("all checks held" if out["ok"] else "a check failed")
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
