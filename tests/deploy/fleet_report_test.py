"""`gpudoc report --fleet` against a real Prometheus (Debian's prometheus) scraping three real
`gpudoc serve` on replayed H200 traces, each a node of its own (a host starved by its input, two
GPUs waiting on a straggler, a saturated GEMM), with prices on one. Once the replays have ended,
the counters stand still: the report's GPU time observed, useful and lost per cause (aggregated by
Prometheus with increase()) equal the counters' final values within 2 %; one
node's serve is then stopped and restarted on the same port (its replay again from the start), and
the report's total for that node equals the counts before and after the restart within one scrape
interval; a Prometheus that cannot be reached is exit 3 naming it. The report's HTML page (written
by the same run that prints the JSON) opens offline in headless Chromium, draws its plots without a
script error, and every figure it shows is the JSON's, at the JSON's place.

    python3 fleet_report_test.py SOURCE_DIR GPUDOC_BINARY
"""
import html.parser
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from prometheus_scrape_test import free_port, get, start_serve, wait_for  # noqa: E402

SOURCE = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(".")
GPUDOC = sys.argv[2] if len(sys.argv) > 2 else "gpudoc"
NODES = {  # instance label -> trace
    "node-a": "sawtooth_p1000_d50.jsonl",
    "node-b": "allreduce_straggler_slow0.jsonl",
    "node-c": "gemm_saturated.jsonl",
}
KINDS = ("observed", "useful", "unexplained", "lost")


class FleetReportOnPrometheus(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.prometheus = shutil.which("prometheus")
        if not cls.prometheus:
            raise AssertionError("prometheus not found: apt-get install prometheus (scripts/setup.sh does)")
        cls.dir = tempfile.mkdtemp(prefix="gpudoc-fleet-")
        cls.procs, cls.ports = {}, {}
        cls.started = time.time()
        for node, trace in NODES.items():
            cls.start_node(node, trace, 0)
        targets = "".join(
            f"      - {{targets: ['127.0.0.1:{cls.ports[n]}'], labels: {{instance: {n}}}}}\n" for n in NODES)
        pathlib.Path(cls.dir, "prometheus.yml").write_text(
            "global: {scrape_interval: 500ms}\nscrape_configs:\n  - job_name: gpudoc\n    static_configs:\n" + targets,
            encoding="utf-8")
        cls.prom_port = free_port()
        cls.prom = subprocess.Popen(
            [cls.prometheus, f"--config.file={cls.dir}/prometheus.yml", f"--storage.tsdb.path={cls.dir}/data",
             f"--web.listen-address=127.0.0.1:{cls.prom_port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cls.dir)

    @classmethod
    def start_node(cls, node, trace, port):
        env = dict(os.environ, GPUDOC_BACKEND=f"replay:{SOURCE / 'tests/data' / trace}@1")
        if node == "node-a":
            env.update(GPUDOC_PRICE_GPU_HOUR="3.72", GPUDOC_CURRENCY="USD")
        cls.procs[node], cls.ports[node] = start_serve(
            ["serve", "--listen", f"127.0.0.1:{port}", "--no-store", "--diagnose-window", "10",
             "--diagnose-every", "1"], env, "http")

    @classmethod
    def tearDownClass(cls):
        for p in [*cls.procs.values(), cls.prom]:
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
            if p.stderr:
                p.stderr.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def report(self, *args):
        r = subprocess.run([GPUDOC, "report", "--fleet", "--prometheus", f"http://127.0.0.1:{self.prom_port}",
                            "--since", "30m", *args], capture_output=True, text=True, timeout=120)
        return r

    def counters(self):
        """{node: {"observed"|"useful"|"unexplained"|"lost:ID": seconds}}: the counters' newest values
        as Prometheus scraped them (the test reads no /metrics itself: a series shows 0 on its first
        scrape, whoever scrapes it)."""
        out = {n: {} for n in NODES}
        for kind in KINDS:
            q = f"sum by (instance, id) (gpudoc_gpu_{kind}_seconds_total)"
            url = f"http://127.0.0.1:{self.prom_port}/api/v1/query?" + urllib.parse.urlencode({"query": q})
            for r in json.loads(get(url))["data"]["result"]:
                key = kind + (":" + r["metric"]["id"] if kind == "lost" else "")
                out[r["metric"]["instance"]][key] = float(r["value"][1])
        return out

    def settled(self, started):
        """Waits until every replay (the longest: 35 s) has ended and its counters stand still in
        Prometheus (a trace's gap in the readings holds them still for seconds before that)."""
        time.sleep(max(0.0, started + 40 - time.time()))
        def still():
            now = self.counters()
            time.sleep(3)
            return now if all(now.values()) and now == self.counters() else None
        return wait_for("the replays' end", still, 120)

    def long_sampled(self):
        """Waits until every lost-time series has 110 samples in Prometheus: increase() extrapolates a
        series to the range's end by up to 1.1 scrape intervals, so a series sampled over N intervals
        may read up to 1.1/N high; at 110 that is within 1 % (a cause found late, seconds before the
        report, would otherwise read a few per cent high by Prometheus's design, not gpudoc's)."""
        q = "min(count_over_time(gpudoc_gpu_lost_seconds_total[30m]))"
        url = f"http://127.0.0.1:{self.prom_port}/api/v1/query?" + urllib.parse.urlencode({"query": q})
        def enough():
            res = json.loads(get(url))["data"]["result"]
            return res and float(res[0]["value"][1]) >= 110
        wait_for("110 samples of every lost-time series", enough, 180)

    def test_1_report_equals_the_counters(self):
        self.settled(self.started)
        self.long_sampled()
        final = self.counters()
        r = self.report("--json", "--by", "node")
        self.assertEqual(r.returncode, 0, r.stderr)
        rep = json.loads(r.stdout)
        want = {}
        for c in final.values():
            for k, v in c.items():
                want[k] = want.get(k, 0.0) + v
        self.assertGreater(want["observed"], 60, final)
        self.assertAlmostEqual(rep["totals"]["observed_s"], want["observed"], delta=0.02 * want["observed"])
        self.assertAlmostEqual(rep["totals"]["useful_s"], want["useful"], delta=0.02 * want["observed"])
        causes = {c["id"]: c["gpu_s"] for c in rep["causes"]}
        lost = {k[5:]: v for k, v in want.items() if k.startswith("lost:") and v > 0}
        self.assertTrue(lost, want)
        for cause, v in lost.items():
            self.assertAlmostEqual(causes.get(cause, 0), v, delta=0.02 * v, msg=cause)
        say("report against the counters: " + ", ".join(
            [f"observed {rep['totals']['observed_s']:.1f} s / {want['observed']:.1f} s "
             f"({percent(rep['totals']['observed_s'], want['observed'])})",
             f"useful {percent(rep['totals']['useful_s'], want['useful'])}"] +
            [f"{c} {causes.get(c, 0):.1f} s / {v:.1f} s ({percent(causes.get(c, 0), v)})" for c, v in sorted(lost.items())]))
        self.assertEqual(sorted(rep["nodes"]), sorted(NODES))
        self.assertEqual({g["key"] for g in rep["groups"]}, set(NODES))
        self.assertIn("USD", rep["totals"]["money"])  # node-a's price
        self.assertGreater(rep["totals"]["unpriced_s"], 0)  # the others have none
        text = self.report("--by", "node")
        self.assertEqual(text.returncode, 0, text.stderr)
        self.assertIn("top causes of waste", text.stdout)

    def test_1b_the_page_says_what_the_json_says(self):
        browser = next((p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
                        if os.access(p, os.X_OK)), None)
        if browser is None:
            if os.environ.get("GPUDOC_ALLOW_NO_BROWSER") == "1":
                self.skipTest("no chromium and GPUDOC_ALLOW_NO_BROWSER=1")
            self.fail("chromium not found (scripts/setup.sh installs Debian's chromium)")
        self.settled(self.started)
        page = pathlib.Path(self.dir, "fleet.html")
        r = self.report("--json", "--by", "node", "--html", str(page))
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        dom = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
             f"--user-data-dir={self.dir}/profile", "--window-size=1280,2000", "--virtual-time-budget=10000",
             "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
        self.assertIn('data-rendered="ok"', dom, "the page's script did not finish")
        self.assertNotIn("data-errors=", dom, "a script error on the page")
        self.assertIn('data-plots="3"', dom, "the timeline, causes and groups plots")
        figures = Figures()
        figures.feed(dom)
        self.assertGreater(len(figures.found), 40, "the tables' figures")
        paths = {path for path, _, _, _ in figures.found}
        for want in ("totals.gpu_hours", "totals.useful_share", "causes.0.gpu_hours", "groups.0.lost_s",
                     "totals.money.USD"):
            self.assertIn(want, paths)
        for path, value, scale, text in figures.found:
            at = doc
            for key in path.split("."):
                at = at[int(key)] if isinstance(at, list) else at[key]
            self.assertEqual(value, at, path)  # the exact number, as in the JSON
            shown = float(text.split()[0])
            decimals = len(text.split()[0].partition(".")[2])
            self.assertAlmostEqual(shown, at * scale, delta=0.51 * 10 ** -decimals, msg=f"{path}: {text}")

    def test_2_a_restart_changes_no_total_by_more_than_a_scrape(self):
        node, port = "node-a", self.ports["node-a"]
        before = self.settled(self.started)[node]  # its replay has ended: the counts so far
        self.procs[node].terminate()
        self.procs[node].wait(timeout=10)
        time.sleep(2)
        restarted = time.time()
        self.start_node(node, NODES[node], port)  # the same trace again: as much once more
        final = self.settled(restarted)
        r = self.report("--json", "--by", "node")
        self.assertEqual(r.returncode, 0, r.stderr)
        rep = json.loads(r.stdout)
        got = next(g for g in rep["groups"] if g["key"] == node)
        want = before["observed"] + final[node]["observed"]
        self.assertAlmostEqual(got["observed_s"], want, delta=1.0)  # one second of one GPU
        say(f"{node} restarted: report {got['observed_s']:.2f} s, counts before and after {want:.2f} s "
            f"({got['observed_s'] - want:+.2f} s; a scrape is 0.5 s of one GPU)")
        self.assertGreaterEqual(rep["counter_resets"], 1)
        self.assertTrue(any("restarted" in n for n in rep["notes"]), rep["notes"])

    def test_3_unreachable_prometheus_is_exit_3(self):
        r = subprocess.run([GPUDOC, "report", "--fleet", "--prometheus", f"http://127.0.0.1:{free_port()}"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("cannot be reached", r.stderr)
        bad = subprocess.run([GPUDOC, "report", "--fleet", "--prometheus", "ftp://x"], capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(bad.returncode, 2, bad.stderr)


def percent(got, want):
    return f"{100 * (got - want) / want:+.2f} %" if want else "n/a"


def say(line):
    """The measured figures, on stderr for the results page (docs/results/cost.md)."""
    print("measured: " + line, file=sys.stderr, flush=True)


class Figures(html.parser.HTMLParser):
    """The page's figures: (JSON path, exact value, scale, the text shown) of every element with
    data-figure."""

    def __init__(self):
        super().__init__()
        self.found, self.open = [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "data-figure" in a:
            self.open = [a["data-figure"], float(a["data-value"]), float(a.get("data-scale", 1)), ""]

    def handle_data(self, data):
        if self.open is not None:
            self.open[3] += data

    def handle_endtag(self, tag):
        if self.open is not None:
            self.found.append(tuple(self.open))
            self.open = None


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
