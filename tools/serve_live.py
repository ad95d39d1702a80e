#!/usr/bin/env python3
"""`gpudoc serve` live on a GPU machine under a real training job, beside nvidia-smi (docs/results/serve.md).

    tools/serve_live.py OUTDIR [--gpudoc BIN] [--seconds 600] [--candidate FLAGS ...]
                               [--job "workloads/jobs/image_classify.py --arch resnet50 --workers 2"]
                               [--alone] [--serve-flags FLAGS]

Starts, all at once and on every GPU: the job; `gpudoc serve` with its defaults (the product, on
127.0.0.1:9401, the store in OUTDIR/store.db after one `gpudoc health --gate`); one more `gpudoc
serve` per candidate (its flags; an A/B of sampler settings; ports 9402...; no store); `gpudoc record` of the
same GPUs (the sampler alone: the budget, and a trace to replay the dashboard from); nvidia-smi
polling 11 fields and 5 fields every 100 ms. Scrapes both serves' /metrics every 15 s as
Prometheus would, keeps serve's JSON snapshot every minute, and at the end its history, the
dashboard's files and a few server-sent events. With --alone only the job, serve (its flags from
--serve-flags) and the two nvidia-smi run: an A/B of serve's settings is then one run per setting,
so that no other sampler shares the driver with the one measured. CPU (utime + stime, /proc/PID/stat) of every
sampler over the window after a 30 s warm-up, in % of one core and per GPU, and serve's by thread.

Writes into OUTDIR: serve_live.json (every figure), serve_live.md (the table, also printed),
metrics-first-finding.prom and metrics-last.prom, snapshot-last.json, history.json, events.txt,
live.jsonl (the recorded trace), job.log, serve.err; progress.json every minute while it runs (a
run cut short still leaves its figures so far). Only reads: no GPU setting is changed.
"""
import argparse
import http.client
import json
import os
import re
import shlex
import subprocess
import sys
import threading
import time

from proc_cpu import cpu_seconds, thread_cpu_seconds  # tools/proc_cpu.py

SMI11 = ("timestamp,index,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,"
         "temperature.gpu,clocks.sm,clocks.max.sm,clocks_event_reasons.active")
SMI5 = "timestamp,index,utilization.gpu,power.draw,temperature.gpu"
WARMUP_S = 30


def get(port, path, timeout=10):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def wait_listening(proc, errfile):
    for _ in range(300):
        with open(errfile) as f:
            m = re.search(r"on http://127\.0\.0\.1:(\d+)/", f.read())
        if m:
            return int(m.group(1))
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    with open(errfile) as f:
        raise SystemExit(f"gpudoc serve did not start:\n{f.read()}")


def gpu_count():
    out = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True,
                         text=True, check=True).stdout
    return len([x for x in out.split() if x.strip()])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--gpudoc", default="gpudoc")
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--candidate", action="append",
                    help="flags of one more serve (repeatable; default: utilization drained every 10 s, "
                         "with and without GPM every 1 s)")
    ap.add_argument("--job", default="workloads/jobs/image_classify.py --arch resnet50 --workers 2")
    ap.add_argument("--alone", action="store_true",
                    help="no record and no candidates: serve alone beside nvidia-smi and the job")
    ap.add_argument("--serve-flags", default="", help="flags of the measured serve (default: its defaults)")
    args = ap.parse_args()
    if args.alone:
        args.candidate = []
    elif not args.candidate:
        args.candidate = ["--period utilization=10000", "--period utilization=10000,gpm=1000"]
    out = args.outdir
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ, GPUDOC_STORE=os.path.join(out, "store.db"))
    ngpu = gpu_count()
    p = lambda name: os.path.join(out, name)  # noqa: E731

    gate = subprocess.run([args.gpudoc, "health", "--gate"], env=env, capture_output=True, text=True)
    job = subprocess.Popen([sys.executable] + shlex.split(args.job) + ["--duration", str(args.seconds + 60)],
                           stdout=open(p("job.log"), "w"), stderr=subprocess.STDOUT, env=env)
    serve = subprocess.Popen([args.gpudoc, "serve", "--listen", "127.0.0.1:9401"] + shlex.split(args.serve_flags),
                             env=env,
                             stderr=open(p("serve.err"), "w"))
    cands = [subprocess.Popen([args.gpudoc, "serve", "--listen", f"127.0.0.1:{9402 + i}", "--no-store"]
                              + shlex.split(flags), env=env, stderr=open(p(f"candidate{i + 1}.err"), "w"))
             for i, flags in enumerate(args.candidate)]
    rec = None if args.alone else subprocess.Popen(
        [args.gpudoc, "record", "-o", p("live.jsonl"), "--duration", str(args.seconds + 5)],
        env=env, stdout=subprocess.DEVNULL, stderr=open(p("record.err"), "w"))
    smi11 = subprocess.Popen(["nvidia-smi", f"--query-gpu={SMI11}", "--format=csv", "-lms", "100"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    smi5 = subprocess.Popen(["nvidia-smi", f"--query-gpu={SMI5}", "--format=csv", "-lms", "100"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port = wait_listening(serve, p("serve.err"))
    cports = [wait_listening(c, p(f"candidate{i + 1}.err")) for i, c in enumerate(cands)]
    procs = {"serve": serve}
    procs.update({f"serve {flags}": c for flags, c in zip(args.candidate, cands)})
    if rec is not None:
        procs["record"] = rec
    procs.update({"nvidia_smi_11": smi11, "nvidia_smi_5": smi5})

    t_start = time.monotonic()
    time.sleep(WARMUP_S)
    c0 = {k: cpu_seconds(v.pid) for k, v in procs.items()}
    th0 = thread_cpu_seconds(serve.pid)
    t0 = time.monotonic()
    scrapes = {"ok": 0, "errors": 0}
    first_finding = None
    timeline = []
    last_body = b""

    def figures(now):
        wall = now - t0
        c = {k: cpu_seconds(v.pid) for k, v in procs.items() if v.poll() is None}
        cpu = {k: 100 * (c[k] - c0[k]) / wall for k in c}
        th = thread_cpu_seconds(serve.pid)
        return {"window_s": round(wall, 1), "gpus": ngpu,
                "cpu_percent": {k: round(v, 4) for k, v in cpu.items()},
                "cpu_percent_per_gpu": {k: round(v / ngpu, 4) for k, v in cpu.items()},
                "serve_threads_cpu_percent": {k: round(100 * (v - th0.get(k, 0)) / wall, 4) for k, v in th.items()},
                "scrapes": dict(scrapes)}

    next_scrape = time.monotonic()
    next_minute = time.monotonic() + 60
    end = t_start + args.seconds
    while time.monotonic() < end:
        for port_ in [port] + cports:
            try:
                status, _, body = get(port_, "/metrics")
                ok = status == 200 and b"\ngpudoc_sampler_up 1\n" in body
            except OSError:
                ok, body = False, b""
            scrapes["ok" if ok else "errors"] += 1
            if port_ == port and ok:
                last_body = body
                findings = re.findall(rb'\ngpudoc_finding\{([^}]*)\} 1', body)
                timeline.append({"t_s": round(time.monotonic() - t_start, 1),
                                 "findings": [f.decode() for f in findings]})
                if findings and first_finding is None:
                    first_finding = body
                    with open(p("metrics-first-finding.prom"), "wb") as f:
                        f.write(body)
        if time.monotonic() >= next_minute:
            next_minute += 60
            _, _, snap = get(port, "/api/v1/snapshot")
            with open(p("snapshot-last.json"), "wb") as f:
                f.write(snap)
            with open(p("progress.json"), "w") as f:
                json.dump(dict(figures(time.monotonic()), timeline=timeline), f, indent=1)
        next_scrape += 15
        time.sleep(max(0.0, min(next_scrape, end) - time.monotonic()))

    result = figures(time.monotonic())
    with open(p("metrics-last.prom"), "wb") as f:
        f.write(last_body)
    _, _, snap = get(port, "/api/v1/snapshot")
    with open(p("snapshot-last.json"), "wb") as f:
        f.write(snap)
    _, _, hist = get(port, f"/api/v1/history?seconds={int(args.seconds)}", timeout=30)
    with open(p("history.json"), "wb") as f:
        f.write(hist)
    pages = {}
    for path in ("/", "/healthz", "/assets/dashboard.js", "/nope", "/metrics?x=%00"):
        status, headers, body = get(port, path)
        pages[path] = {"status": status, "bytes": len(body), "csp": "Content-Security-Policy" in headers}
    events = []
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/api/v1/events")
    r = conn.getresponse()
    t_ev = time.monotonic()
    while time.monotonic() - t_ev < 5:
        line = r.fp.readline().decode(errors="replace").rstrip("\n")
        if line.startswith("event:"):
            events.append(round(time.monotonic() - t_ev, 2))
    conn.close()
    for v in procs.values():
        v.terminate()
    job.terminate()
    for v in list(procs.values()) + [job]:
        try:
            v.wait(timeout=30)
        except subprocess.TimeoutExpired:
            v.kill()
    with open(p("job.log")) as f:
        ends = [json.loads(x.split("::gpudoc", 1)[1]) for x in f if '"event": "end"' in x]
    result.update({"health_gate": {"exit": gate.returncode, "line": gate.stdout.strip() or gate.stderr.strip()},
                   "serve_flags": args.serve_flags, "candidates": args.candidate, "job": args.job,
                   "job_end": ends[-1] if ends else None,
                   "pages": pages, "event_seconds": events, "timeline": timeline,
                   "final_findings": [f.decode() for f in re.findall(rb'\ngpudoc_finding\{([^}]*)\} 1', last_body)],
                   "lost_seconds": [x.decode() for x in re.findall(
                       rb'\ngpudoc_finding_gpu_time_lost_seconds\{([^}]*\} \S+)', last_body)]})
    with open(p("serve_live.json"), "w") as f:
        json.dump(result, f, indent=1)
    pg = result["cpu_percent_per_gpu"]
    md = [f"{ngpu} GPU(s), {result['window_s']} s after a {WARMUP_S} s warm-up; job: {args.job}; "
          f"serve flags: {args.serve_flags or '(defaults)'}{'; alone' if args.alone else ''}", "",
          "| sampler | % of a core per GPU |", "|---|---:|"]
    md += [f"| {k} | {v:.3f} |" for k, v in pg.items()]
    md += ["", f"serve by thread (% of a core): {result['serve_threads_cpu_percent']}",
           f"scrapes: {scrapes}; final findings: {result['final_findings']}; lost: {result['lost_seconds']}",
           f"health --gate: {result['health_gate']}; events in 5 s: {len(events)}; pages: {pages}"]
    with open(p("serve_live.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


if __name__ == "__main__":
    sys.exit(main())
