"""A real Prometheus server (Debian's prometheus) scraping a real `gpudoc serve` on the replay
backend: a real H200 sawtooth trace, served with --dcgm-compatible. Read back through Prometheus's
HTTP API: the target is up, gpudoc's and dcgm-exporter's series are stored with their labels, the
sliding diagnosis's sawtooth finding is a series, and the GpudocFinding alert of
deploy/prometheus/gpudoc-alerts.yml fires (its `for:` shortened to 0s here, the expression as
shipped). Every gpudoc_* and process_* name the scrape holds is one tests/deploy/exporter_metrics.py
allows (the list the dashboard and rules tests check against). A second `gpudoc serve`, on a fake
GPU, is scraped over TLS with basic authentication (a web config; a CA and certificate made by
`openssl`, a bcrypt hash by Python's crypt): Prometheus's own TLS client and credentials against
gpudoc's server. A third, on another replay (a saturated GEMM), beside the first: every query of
deploy/grafana and of NVIDIA's dcgm-exporter dashboard (its queries as shipped, in
NVIDIA_DASHBOARD below) returns data from the two replays.

    python3 prometheus_scrape_test.py SOURCE_DIR GPUDOC_BINARY
"""
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import ssl
import urllib.error
import urllib.request
import warnings

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import exporter_metrics  # noqa: E402

SOURCE = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(".")
GPUDOC = sys.argv[2] if len(sys.argv) > 2 else "gpudoc"
TRACE = SOURCE / "tests/data/sawtooth_p1000_d50.jsonl"
SECOND_TRACE = SOURCE / "tests/data/gemm_saturated.jsonl"

# The panels' queries of NVIDIA's Grafana dashboard for dcgm-exporter
# (github.com/NVIDIA/dcgm-exporter, grafana/dcgm-exporter-dashboard.json), which runs unchanged on
# `gpudoc serve --dcgm-compatible` (docs/serve.md).
NVIDIA_DASHBOARD = [
    'DCGM_FI_DEV_GPU_TEMP{instance=~"$instance", gpu=~"$gpu"}',
    'avg(DCGM_FI_DEV_GPU_TEMP{instance=~"$instance", gpu=~"$gpu"})',
    'DCGM_FI_DEV_POWER_USAGE{instance=~"$instance", gpu=~"$gpu"}',
    'sum(DCGM_FI_DEV_POWER_USAGE{instance=~"$instance", gpu=~"$gpu"})',
    'DCGM_FI_DEV_SM_CLOCK{instance=~"$instance", gpu=~"$gpu"} * 1000000',
    'DCGM_FI_DEV_GPU_UTIL{instance=~"$instance", gpu=~"$gpu"}',
    'DCGM_FI_DEV_FB_USED{instance=~"$instance", gpu=~"$gpu"}',
    'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{instance=~"$instance", gpu=~"$gpu"}',
    'label_values(DCGM_FI_DEV_GPU_TEMP, instance)',
    'label_values(DCGM_FI_DEV_GPU_TEMP, gpu)',
]

# Series these replays cannot have: the last health run (serve --no-store here), the per-number
# XID counters (each there from its number's first XID; gpudoc_gpu_xid_errors_total is there at 0
# from the start), and the error counters of the `errors` group (ECC, PCIe replay, NVLink), which
# the replayed traces were recorded without (`gpudoc trace info` lists their metrics). Their
# queries still parse and run; they are the only ones allowed to come back empty.
NO_DATA_ON_A_REPLAY = ("gpudoc_health_check", "gpudoc_xid_errors_total", "gpudoc_nvlink_", "gpudoc_ecc_",
                       "gpudoc_pcie_replay_")


def dashboard_queries():
    """Every query of deploy/grafana's dashboard: panel targets, then the variables' queries."""
    board = json.loads((SOURCE / "deploy/grafana/gpudoc-dashboard.json").read_text(encoding="utf-8"))

    def panels(ps):
        for p in ps:
            yield p
            yield from panels(p.get("panels", []))
    out = [t["expr"] for p in panels(board["panels"]) for t in p.get("targets", []) if t.get("expr")]
    for v in board.get("templating", {}).get("list", []):
        q = v.get("query")
        if isinstance(q, dict):
            q = q.get("query")
        if v.get("type") == "query" and q:
            out.append(q)
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode("utf-8")


def wait_for(what, check, seconds):
    """Calls check() until it returns something true, or fails naming `what`."""
    end = time.monotonic() + seconds
    last = None
    while time.monotonic() < end:
        try:
            last = check()
            if last:
                return last
        except OSError as e:  # not listening yet
            last = e
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {seconds} s (last: {last!r})")


def start_serve(args, env, scheme):
    """gpudoc serve with `args`, and the port it says it serves on."""
    serve = subprocess.Popen([GPUDOC, *args], env=env, stderr=subprocess.PIPE, text=True)
    line = ""
    while "serving" not in line:
        line = serve.stderr.readline()
        if not line:
            raise AssertionError("gpudoc serve ended before it listened")
    return serve, int(re.search(scheme + r"://127\.0\.0\.1:(\d+)/", line).group(1))


def make_web_config(folder):
    """A CA, a certificate for 127.0.0.1 signed by it, and a web config with TLS and one user."""
    openssl = shutil.which("openssl")
    if not openssl:
        raise AssertionError("openssl not found: apt-get install openssl (scripts/setup.sh does)")
    run = lambda *a: subprocess.run([openssl, *a], cwd=folder, check=True, capture_output=True)  # noqa: E731
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
        "-subj", "/CN=gpudoc test CA", "-keyout", "ca.key", "-out", "ca.crt")
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=127.0.0.1",
        "-keyout", "tls.key", "-out", "tls.csr")
    pathlib.Path(folder, "san.ext").write_text("subjectAltName=IP:127.0.0.1\n", encoding="utf-8")
    run("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
        "-extfile", "san.ext", "-out", "tls.crt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt  # Python 3.11's (Debian 12's): libxcrypt's bcrypt
        hashed = crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16))
    web = pathlib.Path(folder, "web.yml")
    web.write_text("tls_server_config: {cert_file: tls.crt, key_file: tls.key}\n"
                   f"basic_auth_users:\n  prometheus: '{hashed}'\n", encoding="utf-8")
    for name in ("web.yml", "tls.key", "ca.key"):
        os.chmod(pathlib.Path(folder, name), 0o600)
    return str(web)


class PrometheusScrapesServe(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.prometheus = shutil.which("prometheus")
        if not cls.prometheus:
            raise AssertionError("prometheus not found: apt-get install prometheus (scripts/setup.sh does)")
        cls.dir = tempfile.mkdtemp(prefix="gpudoc-prometheus-")
        cls.started = time.time()
        cls.procs = []
        # prices, so that the cost panels' money and the gpudoc_price_* series have data
        env = dict(os.environ, GPUDOC_BACKEND=f"replay:{TRACE}@1", GPUDOC_PRICE_GPU_HOUR="3.72",
                   GPUDOC_PRICE_KWH="0.14", GPUDOC_PUE="1.3", GPUDOC_CURRENCY="USD")
        serve, cls.serve_port = start_serve(
            ["serve", "--listen", "127.0.0.1:0", "--dcgm-compatible", "--no-store",
             "--diagnose-window", "10", "--diagnose-every", "1"], env, "http")
        cls.procs.append(serve)
        web = make_web_config(cls.dir)
        tls_serve, cls.tls_port = start_serve(
            ["--backend", "fake:1", "serve", "--listen", "127.0.0.1:0", "--no-store", "--web-config-file", web],
            {k: v for k, v in os.environ.items() if k != "GPUDOC_BACKEND"}, "https")
        cls.procs.append(tls_serve)
        second, cls.second_port = start_serve(
            ["serve", "--listen", "127.0.0.1:0", "--dcgm-compatible", "--no-store",
             "--diagnose-window", "10", "--diagnose-every", "1"],
            dict(os.environ, GPUDOC_BACKEND=f"replay:{SECOND_TRACE}@0.5"), "http")
        cls.procs.append(second)
        rules = (SOURCE / "deploy/prometheus/gpudoc-alerts.yml").read_text(encoding="utf-8")
        rules = re.sub(r"(\n\s+for:\s*)\S+", r"\g<1>0s", rules)
        pathlib.Path(cls.dir, "rules.yml").write_text(rules, encoding="utf-8")
        pathlib.Path(cls.dir, "prometheus.yml").write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "rule_files: [rules.yml]\n"
            "scrape_configs:\n"
            "  - job_name: gpudoc\n"
            f"    static_configs: [{{targets: ['127.0.0.1:{cls.serve_port}']}}]\n"
            # the TLS one: only its own series kept, so that the queries above see one gpudoc
            "  - job_name: gpudoc-tls\n"
            "    scheme: https\n"
            f"    tls_config: {{ca_file: {cls.dir}/ca.crt}}\n"
            "    basic_auth: {username: prometheus, password: s3cret}\n"
            f"    static_configs: [{{targets: ['127.0.0.1:{cls.tls_port}']}}]\n"
            "    metric_relabel_configs:\n"
            "      - {source_labels: [__name__], regex: 'gpudoc_build_info|process_.*', action: keep}\n"
            # the second replay, a job of its own so that the queries above see one gpudoc
            "  - job_name: gpudoc-second\n"
            f"    static_configs: [{{targets: ['127.0.0.1:{cls.second_port}']}}]\n",
            encoding="utf-8")
        cls.prom_port = free_port()
        cls.procs.append(subprocess.Popen(
            [cls.prometheus, f"--config.file={cls.dir}/prometheus.yml", f"--storage.tsdb.path={cls.dir}/data",
             f"--web.listen-address=127.0.0.1:{cls.prom_port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cls.dir))

    @classmethod
    def tearDownClass(cls):
        for p in cls.procs:
            p.terminate()
        for p in cls.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
            if p.stderr:
                p.stderr.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def query(self, q):
        url = f"http://127.0.0.1:{self.prom_port}/api/v1/query?" + urllib.parse.urlencode({"query": q})
        body = json.loads(get(url))
        self.assertEqual(body["status"], "success", body)
        return body["data"]["result"]

    def test_1_series_reach_prometheus(self):
        up = wait_for("up{job=\"gpudoc\"} == 1", lambda: self.query('up{job="gpudoc"} == 1'), 60)
        self.assertEqual(len(up), 1)
        power = wait_for("gpudoc_power_watts", lambda: self.query("gpudoc_power_watts"), 30)
        labels = power[0]["metric"]
        self.assertEqual(labels["name"], "NVIDIA H200")
        self.assertEqual(labels["gpu"], "0")
        self.assertTrue(labels["uuid"].startswith("GPU-"))
        self.assertGreater(float(power[0]["value"][1]), 50)
        dcgm = wait_for("DCGM_FI_DEV_POWER_USAGE", lambda: self.query("DCGM_FI_DEV_POWER_USAGE"), 30)
        self.assertEqual(dcgm[0]["metric"]["modelName"], "NVIDIA H200")
        self.assertEqual(self.query("gpudoc_sampler_up")[0]["value"][1], "1")

    def test_2_finding_series_and_alert_fire(self):
        found = wait_for("gpudoc_finding{id=\"sawtooth\"}",
                         lambda: self.query('gpudoc_finding_severity{id="sawtooth"} >= 2'), 60)
        self.assertEqual(found[0]["metric"]["gpu"], "0")
        lost = self.query('gpudoc_finding_gpu_time_lost_seconds{id="sawtooth"}')
        self.assertGreater(float(lost[0]["value"][1]), 0)

        def firing():
            alerts = json.loads(get(f"http://127.0.0.1:{self.prom_port}/api/v1/alerts"))["data"]["alerts"]
            return [a for a in alerts if a["labels"]["alertname"] == "GpudocFinding" and a["state"] == "firing"]
        alert = wait_for("the GpudocFinding alert firing", firing, 30)[0]
        self.assertEqual(alert["labels"]["id"], "sawtooth")
        self.assertIn("sawtooth", alert["annotations"]["summary"])

    def test_3_every_exposed_name_is_known(self):
        text = get(f"http://127.0.0.1:{self.serve_port}/metrics")
        names = {line.split("{")[0].split(" ")[0] for line in text.splitlines()
                 if line.startswith(("gpudoc_", "process_"))}
        self.assertIn("gpudoc_power_watts", names)
        self.assertIn("process_cpu_seconds_total", names)
        unknown = names - exporter_metrics.exposed(SOURCE)
        self.assertEqual(unknown, set(), "series the deploy/ tests do not know: add them to exporter_metrics.EXTRA")

    def test_3b_cost_counters_close_in_every_scrape(self):
        """The fleet counters of one scrape add up: useful + every cause + unexplained = observed,
        on each GPU (docs/serve-metrics.md, "GPU time and energy counters")."""
        wait_for("a cause of lost GPU time", lambda: self.query('gpudoc_gpu_lost_seconds_total{job="gpudoc"} > 0'), 60)
        # one evaluation time for all, a scrape after the wait: every series of a target at that
        # time comes from the target's last scrape before it
        time.sleep(1.5)
        at = time.time()
        def values(name):
            url = f"http://127.0.0.1:{self.prom_port}/api/v1/query?" + urllib.parse.urlencode(
                {"query": f'sum by (gpu) ({name}{{job="gpudoc"}})', "time": at})
            return {r["metric"]["gpu"]: float(r["value"][1]) for r in json.loads(get(url))["data"]["result"]}
        observed = values("gpudoc_gpu_observed_seconds_total")
        self.assertTrue(observed and all(v > 0 for v in observed.values()), observed)
        parts = [values(n) for n in ("gpudoc_gpu_useful_seconds_total", "gpudoc_gpu_lost_seconds_total",
                                     "gpudoc_gpu_unexplained_seconds_total")]
        for gpu, total in observed.items():
            self.assertAlmostEqual(sum(p.get(gpu, 0) for p in parts), total, delta=1e-5)
        self.assertEqual(float(self.query('gpudoc_price_gpu_hour{job="gpudoc"}')[0]["value"][1]), 3.72)

    def test_4_scraped_over_tls_with_basic_auth(self):
        up = wait_for('up{job="gpudoc-tls"} == 1', lambda: self.query('up{job="gpudoc-tls"} == 1'), 60)
        self.assertEqual(len(up), 1)
        start = wait_for("process_start_time_seconds",
                         lambda: self.query('process_start_time_seconds{job="gpudoc-tls"}'), 30)
        self.assertGreater(float(start[0]["value"][1]), time.time() - 3600)
        self.assertTrue(self.query('gpudoc_build_info{job="gpudoc-tls"}'))
        # without the password: 401, over TLS that the CA verifies
        context = ssl.create_default_context(cafile=f"{self.dir}/ca.crt")
        with self.assertRaises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"https://127.0.0.1:{self.tls_port}/metrics", timeout=10, context=context)
        self.assertEqual(refused.exception.code, 401)
        self.assertIn("Basic", refused.exception.headers["WWW-Authenticate"])

    def over_window(self, q):
        """q over the whole test as a Grafana panel over the last minutes (a range query, 1 s step:
        the replays are short), with the dashboards' variables set for every GPU."""
        q = (q.replace("$instance", ".*").replace("$gpu", ".*").replace("$__rate_interval", "10s")
             .replace("$__interval", "1s").replace("$__range", "5m"))
        m = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", q)
        now = time.time()
        url = f"http://127.0.0.1:{self.prom_port}/api/v1/query_range?" + urllib.parse.urlencode(
            {"query": m.group(1) if m else q, "start": self.started, "end": now, "step": "1"})
        body = json.loads(get(url))
        self.assertEqual(body["status"], "success", body)
        series = [r for r in body["data"]["result"] if r["values"]]
        if m:  # a variable's query: the label's values on the series
            return sorted({r["metric"].get(m.group(2)) for r in series} - {None})
        return series

    def test_5_every_dashboard_query_returns_data(self):
        wait_for('up{job="gpudoc-second"} == 1', lambda: self.query('up{job="gpudoc-second"} == 1'), 60)
        wait_for("a finding on both replays",
                 lambda: len(self.query("count by (instance) (gpudoc_finding_severity)")) == 2, 60)
        time.sleep(12)  # samples enough for increase() over the panels' interval
        empty, ran = [], 0
        for q in dashboard_queries() + NVIDIA_DASHBOARD:
            with self.subTest(query=q):
                # An error panel shows only new errors (`... > 0`), the health panel only its
                # results (`== 1`): on healthy replays the first is empty by design; the
                # expression under the filter must return data.
                base = re.sub(r"\s*(>|==)\s*[0-9]+\s*$", "", q)
                result = self.over_window(base)
                ran += 1
                if not result:
                    empty.append(q)
                    self.assertTrue(any(name in q for name in NO_DATA_ON_A_REPLAY), f"no data for {q}")
        self.assertGreaterEqual(ran, 40)
        self.assertLessEqual(len(empty), 9, empty)
        self.assertEqual(self.over_window("label_values(DCGM_FI_DEV_GPU_TEMP, gpu)"), ["0"])
        self.assertEqual(len(self.over_window("label_values(DCGM_FI_DEV_GPU_TEMP, instance)")), 2)

if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
