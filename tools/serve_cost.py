#!/usr/bin/env python3
"""What `gpudoc serve` costs, measured against the sampler's own budget (the three figures of docs/results/serve.md).

    tools/serve_cost.py OUTDIR [--gpudoc BIN] [--backend fake:8] [--seconds 120] [--load-seconds 60]
                               [--rate 1000]

1. Idle cost: starts side by side, on the same backend (GPUDOC_BACKEND, default fake:8), `gpudoc
   record` (the sampler alone, writing its trace: the budget) and `gpudoc serve` (the same sampler,
   plus the history, the sliding diagnosis every 10 s, the store and the HTTP server), scrapes
   serve's /metrics every 15 s as Prometheus would, and reads each process's CPU time (utime +
   stime, /proc/PID/stat) over the window after a 10 s warm-up. Target: serve <= record + 0.1 % of
   a core.
2. Per-scrape CPU: serve's own gpudoc_scrape_render_seconds (the rendering, on its thread's CPU
   clock) and serve's whole CPU time per scrape during the load below. Target: <= 1 ms.
3. Load: RATE scrapes a second for LOAD seconds over keep-alive connections (4 threads), every
   answer checked (status 200, ends with the sampler's series); serve's resident memory sampled
   every second. Target: no error, memory flat (last 10 s within 1 MiB of the first 10 s). serve
   keeps 60 s of history (its diagnosis window, 120 s, is then what it holds), full before the load.

Writes OUTDIR/serve_cost.json and OUTDIR/serve_cost.md (also printed); exit 1 if a target is
missed. Only reads: no GPU setting is changed. Method and figures: docs/results/serve.md.
"""
import argparse
import http.client
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

from proc_cpu import cpu_seconds, rss_bytes, thread_cpu_seconds  # tools/proc_cpu.py


def start_serve(gpudoc, env):
    # --history 60: the waveform history is then the diagnosis's 120 s window, full before the load
    # starts (10 s warm-up + the idle window), so a memory figure that grows under load is the request
    # path's, not the history filling up (600 s of 8 GPUs by default, ~13 kB a second).
    p = subprocess.Popen([gpudoc, "serve", "--listen", "127.0.0.1:0", "--no-store", "--history", "60"], env=env,
                         stderr=subprocess.PIPE, text=True)
    line = ""
    while "serving" not in line:
        line = p.stderr.readline()
        if not line:
            raise SystemExit("gpudoc serve ended before it listened")
    threading.Thread(target=p.stderr.read, daemon=True).start()  # drain the rest
    return p, int(re.search(r"http://127\.0\.0\.1:(\d+)/", line).group(1))


def scrape(conn):
    """One GET /metrics; a connection the server closed after its keep-alive timeout (1 s) is opened
    again, as Prometheus does."""
    for attempt in (0, 1):
        try:
            conn.request("GET", "/metrics")
            r = conn.getresponse()
            return r.status, r.read()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            conn.close()
            if attempt:
                raise
    raise AssertionError("unreachable")


def idle_cost(args, env, workdir):
    rec = subprocess.Popen([args.gpudoc, "record", "-o", os.path.join(workdir, "budget.jsonl"),
                            "--duration", str(args.seconds + 20)], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    serve, port = start_serve(args.gpudoc, env)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    time.sleep(10)
    c0 = {"record": cpu_seconds(rec.pid), "serve": cpu_seconds(serve.pid)}
    t0_threads = {"record": thread_cpu_seconds(rec.pid), "serve": thread_cpu_seconds(serve.pid)}
    t0 = time.monotonic()
    scrapes = 0
    while time.monotonic() - t0 < args.seconds:
        status, _ = scrape(conn)
        scrapes += status == 200
        time.sleep(max(0.0, min(15.0, args.seconds - (time.monotonic() - t0))))
    wall = time.monotonic() - t0
    c1 = {"record": cpu_seconds(rec.pid), "serve": cpu_seconds(serve.pid)}
    t1_threads = {"record": thread_cpu_seconds(rec.pid), "serve": thread_cpu_seconds(serve.pid)}
    _, body = scrape(conn)
    render = re.search(rb"\ngpudoc_scrape_render_seconds (\S+)", body)
    diag = re.search(rb"\ngpudoc_diagnosis_seconds (\S+)", body)
    rec.terminate()
    rec.wait()
    pct = {k: 100 * (c1[k] - c0[k]) / wall for k in c0}
    # Where each process's CPU goes, by thread name (ended threads, e.g. finished HTTP workers, are
    # missing here but counted in the totals above).
    threads = {k: {name: round(100 * (t1_threads[k].get(name, 0) - t0_threads[k].get(name, 0)) / wall, 4)
                   for name in t1_threads[k]} for k in c0}
    return serve, port, {"window_s": round(wall, 1), "scrapes": scrapes, "record_cpu_percent": pct["record"],
                         "serve_cpu_percent": pct["serve"], "serve_minus_record_percent": pct["serve"] - pct["record"],
                         "threads_cpu_percent": threads,
                         "render_seconds": float(render.group(1)) if render else None,
                         "diagnosis_seconds": float(diag.group(1)) if diag else None}


def load(args, serve, port):
    stop = time.monotonic() + args.load_seconds
    counts = {"ok": 0, "errors": 0}
    lock = threading.Lock()
    per_thread = args.rate / 4

    def worker():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        next_t = time.monotonic()
        while time.monotonic() < stop:
            try:
                status, body = scrape(conn)
                ok = status == 200 and b"\ngpudoc_sampler_up 1\n" in body
            except (OSError, http.client.HTTPException):
                ok = False
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            with lock:
                counts["ok" if ok else "errors"] += 1
            next_t += 1 / per_thread
            time.sleep(max(0.0, next_t - time.monotonic()))

    rss = []
    cpu0 = cpu_seconds(serve.pid)
    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    while time.monotonic() < stop:
        rss.append(rss_bytes(serve.pid))
        time.sleep(1)
    for t in threads:
        t.join()
    cpu = cpu_seconds(serve.pid) - cpu0
    n = counts["ok"] + counts["errors"]
    first, last = rss[:10], rss[-10:]
    return {"seconds": args.load_seconds, "scrapes": n, "errors": counts["errors"], "rate_per_s": n / args.load_seconds,
            "serve_cpu_per_scrape_ms": 1000 * cpu / max(n, 1),
            "rss_first_10s_mib": [round(x / 2**20, 2) for x in (min(first), max(first))],
            "rss_last_10s_mib": [round(x / 2**20, 2) for x in (min(last), max(last))],
            "rss_growth_mib": round((max(last) - max(first)) / 2**20, 2)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--gpudoc", default="gpudoc")
    ap.add_argument("--backend", default=os.environ.get("GPUDOC_BACKEND", "fake:8"))
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--load-seconds", type=float, default=60)
    ap.add_argument("--rate", type=float, default=1000)
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    env = dict(os.environ, GPUDOC_BACKEND=args.backend)
    with tempfile.TemporaryDirectory(prefix="gpudoc-serve-cost-") as workdir:
        serve, port, idle = idle_cost(args, env, workdir)
        try:
            loaded = load(args, serve, port)
        finally:
            serve.terminate()
            serve.wait()
    result = {"backend": args.backend, "idle": idle, "load": loaded, "targets": {
        "idle_within_budget": idle["serve_minus_record_percent"] <= 0.1,
        "render_under_1ms": idle["render_seconds"] is not None and idle["render_seconds"] <= 1e-3,
        "cpu_per_scrape_under_1ms": loaded["serve_cpu_per_scrape_ms"] <= 1.0,
        "load_no_error": loaded["errors"] == 0 and loaded["rate_per_s"] >= 0.95 * args.rate,
        "memory_flat": loaded["rss_growth_mib"] <= 1.0}}
    with open(os.path.join(args.outdir, "serve_cost.json"), "w") as f:
        json.dump(result, f, indent=2)
    md = [f"backend {args.backend}; idle window {idle['window_s']} s with {idle['scrapes']} scrapes (every 15 s)", "",
          "| figure | value | target | |", "|---|---:|---|---|",
          f"| sampler alone (`record`) | {idle['record_cpu_percent']:.3f} % of a core | the budget | |",
          f"| `serve` | {idle['serve_cpu_percent']:.3f} % | | |",
          f"| serve − record | {idle['serve_minus_record_percent']:+.3f} points | ≤ +0.1 | "
          f"{'PASS' if result['targets']['idle_within_budget'] else 'FAIL'} |",
          "| by thread | " + "; ".join(
              f"{k}: " + ", ".join(f"{n} {v:.3f}" for n, v in sorted(idle["threads_cpu_percent"][k].items(),
                                                                       key=lambda kv: -kv[1]))
              for k in ("record", "serve")) + " | | |",
          f"| one scrape's rendering (8 GPUs) | {1e6 * (idle['render_seconds'] or 0):.0f} µs | ≤ 1 ms | "
          f"{'PASS' if result['targets']['render_under_1ms'] else 'FAIL'} |",
          f"| sliding diagnosis, one run | {1e3 * (idle['diagnosis_seconds'] or 0):.1f} ms (every 10 s) | | |",
          f"| load: scrapes, errors | {loaded['scrapes']} in {loaded['seconds']:.0f} s "
          f"({loaded['rate_per_s']:.0f}/s), {loaded['errors']} errors | {args.rate:.0f}/s, 0 | "
          f"{'PASS' if result['targets']['load_no_error'] else 'FAIL'} |",
          f"| load: serve's CPU per scrape | {loaded['serve_cpu_per_scrape_ms']:.3f} ms | ≤ 1 ms | "
          f"{'PASS' if result['targets']['cpu_per_scrape_under_1ms'] else 'FAIL'} |",
          f"| load: resident memory | first 10 s {loaded['rss_first_10s_mib']} MiB, last 10 s "
          f"{loaded['rss_last_10s_mib']} MiB | flat (≤ 1 MiB) | "
          f"{'PASS' if result['targets']['memory_flat'] else 'FAIL'} |"]
    with open(os.path.join(args.outdir, "serve_cost.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    return 0 if all(result["targets"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
