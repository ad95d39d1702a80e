#!/usr/bin/env python3
"""The live dashboard in a real headless browser (Debian's chromium), driven over the DevTools
protocol on a pipe (--remote-debugging-pipe: no port, no websocket library; standard library only).

By default it serves the dashboard with dashboard_mock_server.py: the files exactly as the binary
embeds them (written by dump_dashboard_assets) and the JSON API from a real two-GPU H200 trace.
With GPUDOC_DASHBOARD_URL=http://HOST:PORT/ (or --url) it checks a running `gpudoc serve` instead
and skips what only the mock can stage (hostile strings, the server going away and coming back).

Asserts: every answer carries the CSP; the page loads offline (every request same-origin), marks
itself rendered, records no script error and no CSP violation (in the page and in the browser's
log); every GPU of the snapshot has its plots; the findings table lists the snapshot's findings;
data-updates grows by >= 2 between two observations (it updates live); the data plotted after the
first render is the server's history sample for sample, including samples that reached the server
late (utilization, drained from NVML's buffer). The findings' labels on the plots never overlap
(the mock stages three findings over one window, two of them on the second GPU; a plot made in the
page draws 2, 3 and 20 labels over one window and labels of windows that overlap in part). Times:
with the browser in Asia/Kolkata, every <time> on the page and every time-axis label is 24-hour
local time with its zone (UTC+5:30); a real click on the UTC toggle turns all of them, the axes
included, to UTC, and a reload keeps it (localStorage). The connection badge says what is true: a
replay is "replay", never a green "live". With the mock also: the hostile strings show as text and
never run; the server stopping shows "reconnecting" and then "stale"; when it comes back (now
saying the sampler is down) the page updates again with the sampler-down banner and a "stale"
badge; then, steered through the mock's /test/control: a replay with the sampler up is "replay", a
real backend "live" (green), and a stream that stays open but stops sending snapshots "stale".

Exit 0 pass, 1 fail, 77 skipped (no chromium and GPUDOC_ALLOW_NO_BROWSER=1).
  dashboard_browser_test.py --dumper build/.../dump_dashboard_assets --trace tests/data/X.jsonl
"""

import argparse
import base64
import datetime
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
SKIP = 77
failures = []
# The browser's time zone for the test: no daylight saving, and a half-hour offset, so that local
# time and UTC differ in both hours and minutes.
ZONE = "Asia/Kolkata"
ZONE_OFFSET = datetime.timedelta(hours=5, minutes=30)
ZONE_NAME = "UTC+5:30"
GREEN = "rgb(46, 125, 50)"  # --ok: the live badge's colour, and only its


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)
    return ok


def find_browser():
    env = os.environ.get("GPUDOC_BROWSER")
    if env:
        return env
    for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome", "/snap/bin/chromium"):
        if os.access(p, os.X_OK):
            return p
    return None


class Browser:
    """Headless chromium with the DevTools protocol on fds 3 (commands in) and 4 (replies out)."""

    def __init__(self, exe, profile):
        cmd_r, self._cmd_w = os.pipe()
        self._out_r, out_w = os.pipe()

        def child_fds():  # runs in the child before exec: the pipe ends become fds 3 and 4
            a = fcntl.fcntl(cmd_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(out_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                "--disable-extensions", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--remote-debugging-pipe", "--user-data-dir=" + profile,
                "--window-size=1400,2200", "about:blank"]
        self.proc = subprocess.Popen(args, preexec_fn=child_fds, close_fds=False, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(out_w)
        self._next = 0
        self._replies = {}
        self._cond = threading.Condition()
        self.events = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        buf = b""
        while True:
            chunk = os.read(self._out_r, 1 << 16)
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                with self._cond:
                    if "id" in msg:
                        self._replies[msg["id"]] = msg
                    else:
                        self.events.append(msg)
                    self._cond.notify_all()
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def call(self, method, params=None, session=None, timeout=30):
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.time() + timeout
        with self._cond:
            while self._next not in self._replies:
                left = deadline - time.time()
                if left <= 0 or getattr(self, "_closed", False):
                    raise RuntimeError("no reply to %s within %d s" % (method, timeout))
                self._cond.wait(left)
            reply = self._replies.pop(self._next)
        if "error" in reply:
            raise RuntimeError("%s: %s" % (method, reply["error"]))
        return reply.get("result", {})

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except RuntimeError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._cmd_w)


class Page:
    def __init__(self, browser):
        self.b = browser
        target = browser.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            self.call(domain + ".enable")
        self.call("Emulation.setTimezoneOverride", {"timezoneId": ZONE})

    def click(self, selector):
        """A real mouse click (pressed and released) at the middle of the element."""
        box = json.loads(self.eval("JSON.stringify(document.querySelector(%s).getBoundingClientRect())"
                                   % json.dumps(selector)))
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def call(self, method, params=None, timeout=30):
        return self.b.call(method, params, self.session, timeout)

    def eval(self, expression, await_promise=False):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                           "awaitPromise": await_promise})
        if "exceptionDetails" in r:
            raise RuntimeError("evaluating %s: %s" % (expression, r["exceptionDetails"]))
        return r["result"].get("value")

    def wait_for(self, expression, timeout):
        """Polls a JS expression until it is truthy; its last value."""
        deadline = time.time() + timeout
        while True:
            try:
                v = self.eval(expression)
            except RuntimeError:  # the new document may not have a body yet
                v = None
            if v or time.time() > deadline:
                return v
            time.sleep(0.2)

    def events(self, method):
        return [e["params"] for e in list(self.b.events) if e.get("method") == method and e.get("sessionId") == self.session]


# What the page shows, as one JSON object read out of its DOM.
STATE_JS = r"""JSON.stringify({
  rendered: document.body.dataset.rendered || null,
  updates: Number(document.body.dataset.updates || 0),
  connection: document.body.dataset.connection || null,
  stream: document.body.dataset.stream || null,
  badge: document.getElementById("conn").textContent,
  badgeColor: getComputedStyle(document.getElementById("conn")).backgroundColor,
  errors: document.documentElement.dataset.errors || null,
  pwned: document.body.dataset.pwned || null,
  gpus: Array.from(document.querySelectorAll("article.gpu")).map(function (s) {
    return { gpu: Number(s.dataset.gpu), plots: s.querySelectorAll(".uplot").length,
             canvases: s.querySelectorAll(".uplot canvas").length, title: s.querySelector("h3").textContent,
             procs: s.querySelector(".procs").textContent };
  }),
  findings: Array.from(document.querySelectorAll("#findings-table tbody tr")).map(function (r) {
    return { id: r.dataset.id, cells: Array.from(r.cells).map(function (c) { return c.textContent; }) };
  }),
  health: document.getElementById("health-status").textContent,
  healthRows: document.querySelector("#health-table tbody").textContent,
  baselines: Array.from(document.querySelectorAll("#baselines-table tbody tr td:first-child")).map(function (c) { return c.textContent; }),
  samplerBanner: !document.getElementById("banner-sampler").hidden,
  staleBanner: !document.getElementById("banner-stale").hidden,
  replayBanner: document.getElementById("banner-replay").hidden ? null : document.getElementById("banner-replay").textContent
})"""


def points(t, series, start, end):
    """{metric: [(t, value), ...]} of the non-null values with start <= t <= end."""
    out = {}
    for m, values in series.items():
        out[m] = [(x, v) for x, v in zip(t, values) if v is not None and start <= x <= end]
    return {m: p for m, p in out.items() if p}


def check_waveforms(page, base, late_s):
    """What the page plots, sample for sample, is the server's history of the same span: points merged
    live included, and the samples that reached the server late (utilization, from a drained buffer)."""
    first = page.eval("JSON.stringify(window.gpudocDashboard.data(0).t.slice(-1))")
    start = json.loads(first)[0]  # the newest point at the first render: the span after it came live
    server_now = lambda: json.loads(get(base + "api/v1/snapshot")[2])["time_unix_ns"] / 1e9
    while server_now() < start + late_s + 4:
        time.sleep(0.5)
    end = server_now() - late_s
    history = json.loads(get(base + "api/v1/history?seconds=120")[2])
    for h in history["gpus"]:
        want = points(h["t"], h["series"], start, end)
        got = json.loads(page.eval("JSON.stringify(window.gpudocDashboard.data(%d))" % h["gpu"]))
        have = points(got["t"], got["series"], start, end) if got else {}
        n = sum(len(p) for p in want.values())
        late = len(want.get("gpu_utilization_percent", []))
        check(n > 0 and have == want, "GPU %d: the plotted data from %.1f to %.1f s after the first render is the "
              "server's history: %d values, %d utilization (%s)" % (
                  h["gpu"], 0, end - start, n, late,
                  "same" if have == want else "differs in " + ", ".join(
                      "%s %d/%d" % (m, len(have.get(m, [])), len(want.get(m, [])))
                      for m in sorted(set(want) | set(have)) if have.get(m) != want.get(m))))


def state(page):
    return json.loads(page.eval(STATE_JS))


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, dict(r.headers), r.read()


class Mock:
    def __init__(self, args, assets, port=0, extra=()):
        cmd = [sys.executable, os.path.join(HERE, "dashboard_mock_server.py"), "--assets", assets,
               "--trace", args.trace, "--port", str(port), "--interval", "0.5"] + list(extra)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            self.stop()
            raise RuntimeError("the mock server did not start: %r" % line)
        self.url = line.split()[-1]
        self.port = int(self.url.rstrip("/").rsplit(":", 1)[1])

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def check_headers(base):
    for path in ("", "assets/dashboard.js", "assets/dashboard.css", "assets/errors.js", "assets/uPlot.iife.min.js",
                 "assets/uPlot.min.css", "api/v1/snapshot", "api/v1/history?seconds=60"):
        status, headers, _ = get(base + path)
        check(status == 200 and headers.get("Content-Security-Policy") == CSP and
              headers.get("X-Content-Type-Options") == "nosniff", "GET /%s: 200 with the CSP and nosniff" % path)


def check_first_render(page, base, expected, mock):
    page.call("Page.navigate", {"url": base})
    rendered = page.wait_for("document.body.dataset.rendered === 'ok'", 30)
    s = state(page)
    check(rendered, "the page marks itself rendered (data-rendered=%r)" % s["rendered"])
    check(s["errors"] is None, "no script error or CSP violation recorded in the page: %r" % s["errors"])
    # A GPU whose first samples had not reached the server when the page fetched its history (a
    # server that has just started) gets its plots with the first update that carries them.
    page.wait_for("Array.from(document.querySelectorAll('article.gpu')).filter(function (a) {"
                  " return a.querySelectorAll('.uplot').length > 0; }).length >= %d" % len(expected["gpus"]), 10)
    s = state(page)
    gpus = {g["gpu"]: g for g in s["gpus"]}
    for want in expected["gpus"]:
        g = gpus.get(want["gpu"])
        n = g["plots"] if g else 0
        check(g is not None and n >= 1 and g["canvases"] >= n, "GPU %d has its plots (%d)" % (want["gpu"], n))
        if mock:  # this trace has every waveform metric: activity, power, temperature, clocks, memory
            check(n == 5, "GPU %d: 5 plots from a trace with every waveform metric (%d)" % (want["gpu"], n))
    # The page shows the findings of the snapshot it rendered; the sliding diagnosis may have run
    # since the test fetched its own (a slow browser start on a busy machine), so the page must agree
    # with the server's findings within a few seconds (it updates every second), not at one instant.
    want = sorted(f["id"] for f in expected["findings"])
    ids = sorted(f["id"] for f in s["findings"])
    deadline = time.monotonic() + 10
    while ids != want and time.monotonic() < deadline:
        time.sleep(0.5)
        want = sorted(f["id"] for f in json.loads(get(base + "api/v1/snapshot")[2])["findings"])
        ids = sorted(f["id"] for f in state(page)["findings"])
    check(ids == want, "the findings table lists the findings: %r (the server's: %r)" % (ids, want))
    return s


def expected_badge(backend):
    return "replay" if backend.startswith("replay:") else "fake" if backend.startswith("fake") else "live"


def check_live(page, label, backend):
    first = state(page)["updates"]
    page.wait_for("Number(document.body.dataset.updates) >= %d" % (first + 2), 15)
    time.sleep(0.3)
    s = state(page)
    want = expected_badge(backend)
    check(s["updates"] - first >= 2, "%s: updates grew from %d to %d" % (label, first, s["updates"]))
    check(s["stream"] == "open", "%s: the event stream is open (%r)" % (label, s["stream"]))
    check(s["connection"] == want and s["badge"] == want,
          "%s: the badge says %r for backend %r (%r)" % (label, want, backend, s["badge"]))
    check((s["badgeColor"] == GREEN) == (want == "live"),
          "%s: the badge is green only when live (%s)" % (label, s["badgeColor"]))
    return s


def check_mock_content(s):
    check(s["pwned"] is None, "no string from the API ran as markup")
    hostile = "<img src=x onerror=\"document.body.dataset.pwned=1\"></td><b>&amp;"
    check(hostile in s["baselines"], "a baseline name with markup is shown as text")
    check(all(("docker-" + hostile) in g["procs"] for g in s["gpus"]), "process containers with markup shown as text")
    check(("XID 79 (GPU has fallen off the bus) " + hostile) in s["healthRows"], "the failing health check, as text")
    check(s["health"] == "fail", "health status fail (%r)" % s["health"])
    check(s["findings"] and s["findings"][0]["cells"][0] == "warning" and s["findings"][0]["cells"][2] == "0, 1",
          "the pulse finding's severity and GPUs: %r" % (s["findings"][:1],))
    check(s["replayBanner"] is not None and s["replayBanner"].startswith("REPLAY, not live"), "the replay banner")
    check(all(g["title"].endswith("NVIDIA H200") for g in s["gpus"]), "GPU names from the trace")


def check_reconnect(page, args, assets, mock):
    mock.stop()
    conn = page.wait_for("document.body.dataset.stream !== 'open' && document.body.dataset.connection", 10)
    check(conn == "reconnecting", "server gone: the badge shows reconnecting (%r)" % conn)
    stale = page.wait_for("!document.getElementById('banner-stale').hidden", 10)
    check(stale, "server gone: the stale banner shows")
    before = state(page)["updates"]
    mock = Mock(args, assets, port=mock.port, extra=["--sampler-down"])
    back = page.wait_for("document.body.dataset.stream === 'open' && Number(document.body.dataset.updates) >= %d"
                         % (before + 2), 20)
    check(back, "server back: the stream is open again and updating")
    down = page.wait_for("!document.getElementById('banner-sampler').hidden", 5)
    check(down, "the sampler-down banner shows when the server says so")
    s = state(page)
    check(not s["staleBanner"], "the stale banner is gone once updates flow")
    check(s["badge"] == "stale" and s["badgeColor"] != GREEN,
          "the sampler down: the badge says stale, not green (%r, %s)" % (s["badge"], s["badgeColor"]))
    return mock


def control(mock, **what):
    body = json.dumps(what).encode()
    req = urllib.request.Request(mock.url + "test/control", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def badge_becomes(page, want, timeout):
    page.wait_for("document.body.dataset.connection === %s" % json.dumps(want), timeout)
    return state(page)


def check_badge_states(page, mock):
    """What the badge says, steered through the mock: replay, a real backend, a stalled stream."""
    control(mock, sampler_up=True)
    s = badge_becomes(page, "replay", 5)
    check(s["badge"] == "replay" and s["badgeColor"] != GREEN and s["replayBanner"],
          "a replay with the sampler up: the badge says replay, not green, beside the REPLAY banner (%r, %s)"
          % (s["badge"], s["badgeColor"]))
    control(mock, backend="nvml")
    s = badge_becomes(page, "live", 5)
    check(s["badge"] == "live" and s["badgeColor"] == GREEN and s["replayBanner"] is None,
          "a real backend: the badge says live, green, and no replay banner (%r, %s)" % (s["badge"], s["badgeColor"]))
    control(mock, stall=True)  # the stream stays open; no snapshot comes
    s = badge_becomes(page, "stale", 10)
    check(s["badge"] == "stale" and s["badgeColor"] != GREEN and s["stream"] == "open" and s["staleBanner"],
          "a stream open but stalled: the badge says stale, not green, with the stale banner (%r, %s, stream %r)"
          % (s["badge"], s["badgeColor"], s["stream"]))
    control(mock, stall=False)
    s = badge_becomes(page, "live", 5)
    check(s["badge"] == "live" and not s["staleBanner"], "snapshots again: live (%r)" % s["badge"])


# Every finding label of every plot, with its box and the box of the plot area it lies over.
LABELS_JS = r"""JSON.stringify(Array.from(document.querySelectorAll("article.gpu")).map(function (a) {
  return { gpu: Number(a.dataset.gpu), plots: Array.from(a.querySelectorAll(".plot")).map(function (p) {
    var over = p.querySelector(".u-over").getBoundingClientRect();
    var box = p.querySelector(".gpudoc-finding-labels");
    return { plot: p.dataset.plot, hidden: box ? Number(box.dataset.hidden) : null,
             over: [over.left, over.top, over.right, over.bottom],
             labels: Array.from(p.querySelectorAll(".gpudoc-finding-label")).map(function (e) {
               var r = e.getBoundingClientRect();
               return { id: e.dataset.finding, text: e.textContent, title: e.title, box: [r.left, r.top, r.right, r.bottom],
                        cut: e.scrollWidth > e.clientWidth, ellipsis: getComputedStyle(e).textOverflow === "ellipsis" };
             }) };
  }) };
}))"""


def intersect(a, b):
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def label_problems(labels, over):
    """What is wrong with one plot's labels: two that intersect, one outside the plot area, one
    that does not hold its id (whole in its title, cut with an ellipsis if need be)."""
    problems = ["%s and %s intersect" % (a["id"], b["id"])
                for i, a in enumerate(labels) for b in labels[i + 1:] if intersect(a["box"], b["box"])]
    problems += ["%s outside the plot" % l["id"] for l in labels
                 if not (over[0] - 0.5 <= l["box"][0] and l["box"][2] <= over[2] + 0.5 and
                         over[1] - 0.5 <= l["box"][1] and l["box"][3] <= over[3] + 0.5)]
    problems += ["%s: text %r, title %r" % (l["id"], l["text"], l["title"]) for l in labels
                 if l["text"] != l["id"] or not l["title"].startswith(l["id"]) or not l["ellipsis"]]
    return problems


def check_label_boxes(where, labels, over):
    problems = label_problems(labels, over)
    check(not problems, "%s: %d labels, none intersecting, all over the plot, each with its id (%r)"
          % (where, len(labels), problems[:3]))


def check_finding_labels(page, base, mock):
    """The labels of the findings the server lists, on every plot of their GPUs."""
    findings = json.loads(get(base + "api/v1/snapshot")[2])["findings"]
    want = {}
    for f in findings:
        for g in f.get("gpus", []):
            want.setdefault(g, set()).add(f["id"])
    page.wait_for("document.querySelectorAll('.gpudoc-finding-label').length >= %d" % sum(map(len, want.values())), 10)
    for g in json.loads(page.eval(LABELS_JS)):
        problems, counts = [], []
        for p in g["plots"]:
            problems += ["plot %s: %s" % (p["plot"], x) for x in label_problems(p["labels"], p["over"])]
            ids = sorted(l["id"] for l in p["labels"])
            counts.append(len(ids))
            if mock and (ids != sorted(want.get(g["gpu"], ())) or p["hidden"] != 0):
                problems.append("plot %s: labels %r, %r hidden" % (p["plot"], ids, p["hidden"]))
        check(g["plots"] and not problems,
              "GPU %d: the labels of its findings (%s per plot%s) on %d plots: none intersecting, all over their "
              "plot, each with its id (%r)" % (g["gpu"], "/".join(map(str, sorted(set(counts)))),
                                             ", all over one window" if mock else "", len(g["plots"]), problems[:3]))
    if mock:
        cut = [l for g in json.loads(page.eval(LABELS_JS)) for p in g["plots"] for l in p["labels"] if l["cut"]]
        check(any(l["id"] == "memory_growth" for l in cut),
              "a label wider than its window is cut with an ellipsis, its title whole: %r" % [l["title"] for l in cut][:3])


# A plot made in the page with the shared shading plugin (findings_shading.js) over windows given
# by the test: the layout alone, the same code the dashboard and the diagnose report draw with.
LAYOUT_JS = r"""(function (windows) {
  var host = document.createElement("div");
  host.style.width = "600px";
  document.body.appendChild(host);
  var t = [], v = [];
  for (var i = 0; i <= 100; i++) { t.push(1000 + i); v.push(i & 7); }
  var u = new uPlot({ width: 600, height: 180, scales: { x: { time: false } }, series: [{}, { stroke: "red" }],
                      plugins: [gpudocShading.plugin(function () { return windows; })] }, [t, v], host);
  return new Promise(function (resolve) { requestAnimationFrame(function () {  // uPlot draws after a microtask
    var over = u.over.getBoundingClientRect(), box = u.over.querySelector(".gpudoc-finding-labels");
    var out = { hidden: box ? Number(box.dataset.hidden) : null, over: [over.left, over.top, over.right, over.bottom],
                labels: Array.from(u.over.querySelectorAll(".gpudoc-finding-label")).map(function (e) {
                  var r = e.getBoundingClientRect();
                  return { id: e.dataset.finding, text: e.textContent, title: e.title, box: [r.left, r.top, r.right, r.bottom],
                           cut: e.scrollWidth > e.clientWidth, ellipsis: getComputedStyle(e).textOverflow === "ellipsis" };
                }) };
    u.destroy();
    host.remove();
    resolve(JSON.stringify(out));
  }); });
})(WINDOWS)"""


def check_label_layout(page):
    def windows(n, start, end, name="finding_with_a_long_name_"):
        return [{"id": name + str(k), "severity": ("critical", "warning", "info")[k % 3], "start": start, "end": end}
                for k in range(n)]

    cases = [("2 findings over one window", windows(2, 1040, 1070), 2),
             ("3 findings over one window", windows(3, 1040, 1070), 3),
             ("3 findings over one narrow window", windows(3, 1050, 1051), 3),
             ("windows overlapping in part", [dict(w, start=1020 + 6 * k, end=1050 + 6 * k)
                                               for k, w in enumerate(windows(6, 0, 0))], 6),
             ("20 findings over one window: more than the lanes", windows(20, 1040, 1070), None)]
    for name, wins, shown in cases:
        got = json.loads(page.eval(LAYOUT_JS.replace("WINDOWS", json.dumps(wins)), await_promise=True))
        check_label_boxes(name, got["labels"], got["over"])
        n = len(got["labels"])
        if shown is not None:
            check(n == shown and got["hidden"] == 0, "%s: %d labels shown, none hidden (%d, %r)" % (name, shown, n, got["hidden"]))
        else:
            check(n > 3 and n + (got["hidden"] or 0) == len(wins),
                  "%s: %d shown, the other %r counted in data-hidden" % (name, n, got["hidden"]))
        if name.startswith("3 findings over one narrow"):
            check(all(l["cut"] for l in got["labels"]), "%s: the ids cut with an ellipsis" % name)


# Every time the page shows, as one observation: each <time> (its datetime and its text), each plot's
# time axis as last drawn, the legends' time labels, the stored choice and the page's whole text.
TIMES_JS = r"""JSON.stringify({
  zone: document.body.dataset.timezone, stored: localStorage.getItem("gpudoc.timezone"),
  pressed: document.querySelector(".tz [aria-pressed=true]").id,
  times: Array.from(document.querySelectorAll("time")).map(function (t) {
    return { dt: t.dateTime, date: t.dataset.date === "1", text: t.textContent };
  }),
  axes: Array.from(document.querySelectorAll("article.gpu")).map(function (a) {
    return window.gpudocDashboard.axes(Number(a.dataset.gpu));
  }),
  legends: Array.from(document.querySelectorAll(".u-legend .u-series:first-child .u-label")).map(function (e) {
    return e.textContent;
  }),
  text: document.body.innerText
})"""


def shown_time(value, with_date, utc):
    """What the page must show for a time (an ISO string or unix seconds): 24-hour, its zone named."""
    if isinstance(value, str):
        t = datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ")
    else:
        t = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=value)
    if not utc:
        t += ZONE_OFFSET
    return t.strftime("%Y-%m-%d %H:%M:%S" if with_date else "%H:%M:%S") + " " + ("UTC" if utc else ZONE_NAME)


def check_times(page, label, utc):
    """Every time on the page, the axes and legends included, in the zone chosen, 24-hour."""
    zone = "UTC" if utc else ZONE_NAME
    page.wait_for("(function () { var a = Array.from(document.querySelectorAll('article.gpu')).map(function (x) {"
                  " return window.gpudocDashboard.axes(Number(x.dataset.gpu)); });"
                  " return a.length && a.every(function (p) { var v = Object.values(p);"
                  " return v.length && v.every(function (t) { return t.zone === %s; }); }); })()" % json.dumps(zone), 10)
    got = json.loads(page.eval(TIMES_JS))
    mode = "utc" if utc else "local"
    check(got["zone"] == mode and got["pressed"] == "tz-" + mode,
          "%s: the page is in %s time, its toggle pressed (%r, %r)" % (label, mode, got["zone"], got["pressed"]))
    wrong = [(t["dt"], t["text"]) for t in got["times"] if t["text"] != shown_time(t["dt"], t["date"], utc)]
    check(got["times"] and not wrong, "%s: all %d times on the page are 24-hour %s, the zone named (wrong: %r)"
          % (label, len(got["times"]), zone, wrong[:3]))
    ticks = [(k, t) for p in got["axes"] for k, t in p.items()]
    bad = [k for k, t in ticks if t["zone"] != zone or
           t["labels"] != [shown_time(v, False, utc)[:8] if v is not None else "" for v in t["splits"]]]
    check(ticks and not bad, "%s: the time axes of all %d plots are labelled in %s, 24-hour (wrong: %r; e.g. %r)"
          % (label, len(ticks), zone, bad[:3], ticks[0][1]["labels"][:3] if ticks else None))
    check(got["legends"] and all(x == "time (%s)" % zone for x in got["legends"]),
          "%s: each plot's legend names the zone: %r" % (label, sorted(set(got["legends"]))))
    check(not re.search(r"\b[AP]M\b", got["text"]), "%s: no AM/PM anywhere on the page" % label)
    return got


def check_time_zone_toggle(page, base):
    check_times(page, "local (nothing stored)", utc=False)
    page.click("#tz-utc")
    got = check_times(page, "after clicking UTC", utc=True)
    check(got["stored"] == "utc", "the choice is kept in localStorage (%r)" % got["stored"])
    page.call("Page.reload")
    page.wait_for("document.body.dataset.rendered === 'ok' && document.querySelectorAll('.uplot').length > 0", 30)
    check_times(page, "after a reload", utc=True)
    page.click("#tz-local")
    got = check_times(page, "after clicking local", utc=False)
    check(got["stored"] == "local", "local kept in localStorage (%r)" % got["stored"])


def check_browser_log(page, base):
    origin = base.rstrip("/")
    urls = [e["request"]["url"] for e in page.events("Network.requestWillBeSent")]
    foreign = [u for u in urls if not (u.startswith(origin + "/") or u.startswith("data:"))]
    check(urls and not foreign, "offline: all %d requests same-origin (foreign: %r)" % (len(urls), foreign[:5]))
    logged = [e["entry"] for e in page.events("Log.entryAdded") if e["entry"]["level"] == "error"]
    check(not logged, "no error in the browser's log (CSP violations land there): %r" % [e.get("text") for e in logged][:5])
    thrown = page.events("Runtime.exceptionThrown")
    check(not thrown, "no uncaught exception: %r" % [t["exceptionDetails"].get("text") for t in thrown][:5])


def main():
    ap = argparse.ArgumentParser(description="the live dashboard in headless chromium")
    ap.add_argument("--url", default=os.environ.get("GPUDOC_DASHBOARD_URL"), help="a running gpudoc serve")
    ap.add_argument("--dumper", help="dump_dashboard_assets (for the mock)")
    ap.add_argument("--trace", help="the trace the mock serves")
    ap.add_argument("--screenshot", help="write a PNG of the page after the first observation")
    ap.add_argument("--late-s", type=float, help="how late a sample may reach the page (mock: 8 s; a server: 25 s)")
    args = ap.parse_args()

    exe = find_browser()
    if exe is None:
        if os.environ.get("GPUDOC_ALLOW_NO_BROWSER") == "1":
            print("skipped: no chromium and GPUDOC_ALLOW_NO_BROWSER=1")
            return SKIP
        print("FAIL chromium not found (scripts/setup.sh installs Debian's chromium; set GPUDOC_ALLOW_NO_BROWSER=1 to skip)")
        return 1

    tmp = tempfile.mkdtemp(prefix="gpudoc-dashboard-")  # private (0700), unpredictable name
    mock = browser = None
    try:
        if args.url:
            base = args.url if args.url.endswith("/") else args.url + "/"
        else:
            if not (args.dumper and args.trace):
                ap.error("--dumper and --trace are needed without --url / GPUDOC_DASHBOARD_URL")
            assets = os.path.join(tmp, "assets")
            os.mkdir(assets, 0o700)
            subprocess.run([args.dumper, assets], check=True)
            mock = Mock(args, assets)
            base = mock.url
        if args.late_s is None:  # the mock drains every 2 s; a server's utilization group every 10 s by default
            args.late_s = 25.0 if args.url else 8.0
        print("dashboard at " + base, flush=True)
        check_headers(base)
        expected = json.loads(get(base + "api/v1/snapshot")[2])
        browser = Browser(exe, os.path.join(tmp, "profile"))
        page = Page(browser)
        s = check_first_render(page, base, expected, mock is not None)
        if mock:
            check_mock_content(s)
        check_live(page, "first observation", expected["backend"])
        if args.screenshot:
            shot = page.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
            with open(args.screenshot, "wb") as f:
                f.write(base64.b64decode(shot["data"]))
        check_browser_log(page, base)
        check_waveforms(page, base, args.late_s)
        check_finding_labels(page, base, mock is not None)
        check_label_layout(page)
        check_time_zone_toggle(page, base)
        if mock:
            mock = check_reconnect(page, args, assets, mock)
            check_badge_states(page, mock)
        s = state(page)
        check(s["errors"] is None, "still no script error at the end: %r" % s["errors"])
    except Exception as e:  # a broken run is a failure with its reason, never a pass
        check(False, "the test ran to its end: %s: %s" % (type(e).__name__, e))
    finally:
        if browser:
            browser.close()
        if mock:
            mock.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
