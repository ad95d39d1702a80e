#!/usr/bin/env python3
"""A stand-in for `gpudoc serve`'s web side, for testing the dashboard in a browser.

Serves the dashboard's files (as the binary embeds them: a folder written by
dump_dashboard_assets, with its manifest) and the JSON API of docs/serve.md from a real recorded
trace, played in a loop at wall-clock speed so that the values advance:

  GET /api/v1/snapshot            the newest value of each metric (absent when older than its
                                  freshness limit), clock-event reasons, processes, three findings
                                  over one window (on GPU 0; two of them on GPU 1), one health
                                  result, baseline verdicts; utilization samples arrive late, every
                                  DRAIN_S seconds, as the real sampler drains NVML's buffer
  GET /api/v1/history?seconds=S   every sample of the last S (<= 900) seconds
  GET /api/v1/events              `event: snapshot` every --interval seconds, `: keep-alive` between
  GET /, /assets/NAME             the dashboard
  POST /test/control              for the test: a JSON object that sets what the server says from
                                  now on: "backend" (a name), "sampler_up" (bool), "stall" (true:
                                  the event stream stays open but sends only keep-alives)

Every answer carries the security headers the real server sends (the CSP included). Standard
library only. Prints "listening on http://127.0.0.1:PORT/" once ready.

  dashboard_mock_server.py --assets DIR --trace tests/data/allreduce_straggler_slow1.jsonl [--port 0]
"""

import argparse
import json
import os
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

# The waveform metrics history serves (the dashboard's plots), as src/gpu/metrics.hpp names them.
WAVEFORM = [
    "gpu_utilization_percent", "gpm_sm_activity_percent", "gpm_tensor_activity_percent", "gpm_dram_activity_percent",
    "power_watts", "power_limit_watts", "gpu_temperature_celsius", "memory_temperature_celsius", "sm_clock_mhz",
    "memory_clock_mhz", "memory_used_bytes",
]
# NVML's clock-event reason bits (src/gpu/metrics.cpp).
REASONS = [(0x1, "gpu_idle"), (0x2, "applications_clocks_setting"), (0x4, "sw_power_cap"), (0x8, "hw_slowdown"),
           (0x10, "sync_boost"), (0x20, "sw_thermal_slowdown"), (0x40, "hw_thermal_slowdown"),
           (0x80, "hw_power_brake_slowdown"), (0x100, "display_clock_setting")]
# NVML keeps utilization samples in a buffer that the sampler drains once a read period, so they
# reach the server late: here they become visible every DRAIN_S seconds, all at once.
UTILIZATION = ("gpu_utilization_percent", "memory_utilization_percent")
DRAIN_S = 2.0
FRESH_S = 12.0  # a value older than this is absent from the snapshot (the utilization group reads every 2 s here)
PRELOAD_S = 120.0  # the server pretends to have sampled this long before it started: history is full at once

# A string that must reach the page as text: markup in it would set data-pwned.
HOSTILE = "<img src=x onerror=\"document.body.dataset.pwned=1\"></td><b>&amp;"


class Trace:
    def __init__(self, path):
        self.path = path
        self.samples = []  # (t, gpu, {metric: value})
        self.processes = []  # (t, gpu, {pid, name, used_memory_bytes})
        with open(path, encoding="utf-8") as f:
            for line in f:
                rec = json.loads(line)
                kind = rec.get("type")
                if kind == "header":
                    self.header = rec
                elif kind == "sample":
                    values = {k: v for k, v in rec.items() if k not in ("type", "t", "gpu")}
                    self.samples.append((rec["t"], rec["gpu"], values))
                elif kind == "process":
                    self.processes.append((rec["t"], rec["gpu"], {"pid": rec["pid"], "name": rec.get("name", ""),
                                                                  "used_memory_bytes": rec.get("memory_used_bytes")}))
        self.samples.sort(key=lambda s: s[0])
        self.duration = max(s[0] for s in self.samples) + 0.5
        self.gpus = self.header["gpus"]


class Clock:
    """Unix seconds <-> trace seconds: the trace repeats end to end from `origin` on."""

    def __init__(self, duration):
        self.origin = time.time() - PRELOAD_S
        self.duration = duration

    def samples_between(self, trace, start, end):
        """(unix t, gpu, values) of every sample in [start, end] the server has by now, in time order."""
        out = []
        drained = self.origin + (time.time() - self.origin) // DRAIN_S * DRAIN_S
        first = int((max(start, self.origin) - self.origin) // self.duration)
        last = int((end - self.origin) // self.duration)
        for loop in range(first, last + 1):
            base = self.origin + loop * self.duration
            for t, gpu, values in trace.samples:
                u = base + t
                if start <= u <= end and (u <= drained or not any(m in values for m in UTILIZATION)):
                    out.append((u, gpu, values))
        return out


class State:
    def __init__(self, trace, interval, sampler_up):
        self.trace = trace
        self.clock = Clock(trace.duration)
        self.interval = interval
        self.sampler_up = sampler_up
        self.backend = "replay:" + os.path.basename(trace.path)
        self.stall = False

    def history(self, seconds):
        now = time.time()
        per_gpu = {g["index"]: {"gpu": g["index"], "t": [], "series": {m: [] for m in WAVEFORM}} for g in self.trace.gpus}
        for u, gpu, values in self.clock.samples_between(self.trace, now - seconds, now):
            if not any(m in values for m in WAVEFORM):
                continue
            h = per_gpu[gpu]
            h["t"].append(round(u, 6))
            for m in WAVEFORM:
                h["series"][m].append(values.get(m))
        for h in per_gpu.values():  # a metric this trace never had is left out, as the server does
            h["series"] = {m: v for m, v in h["series"].items() if any(x is not None for x in v)}
        return {"gpus": list(per_gpu.values())}

    def snapshot(self):
        now = time.time()
        latest = {g["index"]: {} for g in self.trace.gpus}
        for u, gpu, values in self.clock.samples_between(self.trace, now - FRESH_S, now):
            latest[gpu].update(values)
        gpus = []
        for g in self.trace.gpus:
            values = dict(latest[g["index"]])
            mask = int(values.pop("clock_event_reasons_mask", 0) or 0)
            procs = [dict(p, container="docker-" + HOSTILE, pod="trainer-0")
                     for _, gpu, p in self.trace.processes if gpu == g["index"]][-1:]
            gpus.append({"gpu": g["index"], "uuid": g["uuid"], "name": g["name"], "pci_bus_id": g["pci_bus_id"],
                         "values": values, "clock_event_reasons": [n for bit, n in REASONS if mask & bit],
                         "processes": procs})
        ns = int(now * 1e9)
        return {
            "schema": 1, "time_unix_ns": ns, "host": self.trace.header.get("host", ""),
            "backend": self.backend, "sampler_up": self.sampler_up, "gpus": gpus,
            # Three findings over one window: their labels on the plots must not overlap.
            "findings": [{
                "id": "pulse", "severity": "warning", "gpus": [0, 1], "gpu_time_lost_seconds": 8.4,
                "window_start_unix_ns": ns - 30 * 10**9, "window_end_unix_ns": ns - 2 * 10**9,
                "summary": "GPU 0 waits in the all-reduce for GPU 1, which computes longer (42 % of the time)",
                "next_step": "Profile every rank (nsys profile -t cuda,nvtx,osrt -o rank%q{RANK}), NCCL_DEBUG=INFO"}, {
                "id": "throttled", "severity": "info", "gpus": [0, 1], "gpu_time_lost_seconds": 1.2,
                "window_start_unix_ns": ns - 30 * 10**9, "window_end_unix_ns": ns - 2 * 10**9,
                "summary": "SM clock below its maximum under load: power cap", "next_step": "gpudoc health"}, {
                "id": "memory_growth", "severity": "info", "gpus": [0], "gpu_time_lost_seconds": 0.0,
                "window_start_unix_ns": ns - 30 * 10**9, "window_end_unix_ns": ns - 2 * 10**9,
                "summary": "GPU memory used grows 40 MiB/s", "next_step": "Look for tensors kept across steps"}],
            "health": {"time_unix_ns": ns - 3600 * 10**9, "status": "fail", "checks": [
                {"check": "clocks", "status": "pass", "detail": "SM clock at 1980 MHz under load"},
                {"check": "xid", "status": "fail", "detail": "XID 79 (GPU has fallen off the bus) " + HOSTILE},
                {"check": "nvlink", "status": "skip", "detail": "no NVLink"}]},
            "baselines": [
                {"name": "train-step", "key": "workload.step_ms", "verdict": "pass", "time_unix_ns": ns - 7200 * 10**9},
                {"name": HOSTILE, "key": "hbm.copy", "verdict": "regression", "time_unix_ns": ns - 600 * 10**9}],
        }


class Handler(BaseHTTPRequestHandler):
    server_version = "gpudoc-mock"
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the test prints what matters
        pass

    def send(self, code, body, content_type):
        data = body if isinstance(body, bytes) else body.encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in SECURITY_HEADERS.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def send_json(self, code, obj):
        self.send(code, json.dumps(obj, separators=(",", ":")), "application/json")

    def do_POST(self):
        if urllib.parse.urlsplit(self.path).path != "/test/control":
            return self.send(404, "not found\n", "text/plain; charset=utf-8")
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        state = self.server.state
        state.backend = body.get("backend", state.backend)
        state.sampler_up = body.get("sampler_up", state.sampler_up)
        state.stall = body.get("stall", state.stall)
        return self.send_json(200, {"backend": state.backend, "sampler_up": state.sampler_up, "stall": state.stall})

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        state = self.server.state
        if url.path == "/api/v1/snapshot":
            return self.send_json(200, state.snapshot())
        if url.path == "/api/v1/history":
            q = urllib.parse.parse_qs(url.query)
            try:
                seconds = float(q.get("seconds", ["60"])[0])
            except ValueError:
                return self.send_json(400, {"error": "seconds: not a number"})
            if not 0 < seconds <= 900:
                return self.send_json(400, {"error": "seconds: must be in (0, 900]"})
            return self.send_json(200, state.history(seconds))
        if url.path == "/api/v1/events":
            return self.events(state)
        asset = self.server.assets.get(url.path)
        if asset is None:
            return self.send(404, "not found\n", "text/plain; charset=utf-8")
        return self.send(200, asset[0], asset[1])

    def events(self, state):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        for k, v in SECURITY_HEADERS.items():
            self.send_header(k, v)
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            while not self.server.stopping.is_set():
                if not state.stall:
                    line = json.dumps(state.snapshot(), separators=(",", ":"))
                    self.wfile.write(("event: snapshot\ndata: " + line + "\n\n").encode("utf-8"))
                    self.wfile.flush()
                if self.server.stopping.wait(state.interval / 2):
                    break
                self.wfile.write(b": keep-alive\n\n")
                self.wfile.flush()
                if self.server.stopping.wait(state.interval / 2):
                    break
        except (BrokenPipeError, ConnectionResetError):
            pass


def load_assets(folder):
    """The manifest dump_dashboard_assets writes: one `PATH<TAB>CONTENT-TYPE<TAB>FILE` a line."""
    assets = {}
    with open(os.path.join(folder, "manifest.tsv"), encoding="utf-8") as f:
        for line in f:
            path, ctype, name = line.rstrip("\n").split("\t")
            with open(os.path.join(folder, name), "rb") as body:
                assets[path] = (body.read(), ctype)
    return assets


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--assets", required=True, help="folder written by dump_dashboard_assets")
    ap.add_argument("--trace", required=True, help="a gpudoc trace (JSON Lines)")
    ap.add_argument("--port", type=int, default=0, help="0: any free port")
    ap.add_argument("--interval", type=float, default=1.0, help="seconds between snapshot events")
    ap.add_argument("--sampler-down", action="store_true", help="report sampler_up: false")
    args = ap.parse_args()

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    server.state = State(Trace(args.trace), args.interval, not args.sampler_down)
    server.assets = load_assets(args.assets)
    server.stopping = threading.Event()
    print("listening on http://127.0.0.1:%d/" % server.server_address[1], flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.stopping.set()
        server.server_close()


if __name__ == "__main__":
    sys.exit(main())
