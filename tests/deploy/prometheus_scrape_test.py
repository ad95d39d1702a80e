"""A real Prometheus server (Debian's prometheus) scraping a real `gpudoc serve` on the replay
backend: a real H200 sawtooth trace, served with --dcgm-compatible. Read back through Prometheus's
HTTP API: the target is up, gpudoc's and dcgm-exporter's series are stored with their labels, the
sliding diagnosis's sawtooth finding is a series, and the GpudocFinding alert of
deploy/prometheus/gpudoc-alerts.yml fires (its `for:` shortened to 0s here, the expression as
shipped). Every gpudoc_* name the scrape holds is one tests/deploy/exporter_metrics.py allows (the
list the dashboard and rules tests check against).

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
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import exporter_metrics  # noqa: E402

SOURCE = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(".")
GPUDOC = sys.argv[2] if len(sys.argv) > 2 else "gpudoc"
TRACE = SOURCE / "tests/data/sawtooth_p1000_d50.jsonl"


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


class PrometheusScrapesServe(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.prometheus = shutil.which("prometheus")
        if not cls.prometheus:
            raise AssertionError("prometheus not found: apt-get install prometheus (scripts/setup.sh does)")
        cls.dir = tempfile.mkdtemp(prefix="gpudoc-prometheus-")
        cls.procs = []
        env = dict(os.environ, GPUDOC_BACKEND=f"replay:{TRACE}@1")
        serve = subprocess.Popen(
            [GPUDOC, "serve", "--listen", "127.0.0.1:0", "--dcgm-compatible", "--no-store",
             "--diagnose-window", "10", "--diagnose-every", "1"],
            env=env, stderr=subprocess.PIPE, text=True)
        cls.procs.append(serve)
        line = ""
        while "serving" not in line:
            line = serve.stderr.readline()
            if not line:
                raise AssertionError("gpudoc serve ended before it listened")
        cls.serve_port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", line).group(1))
        rules = (SOURCE / "deploy/prometheus/gpudoc-alerts.yml").read_text(encoding="utf-8")
        rules = re.sub(r"(\n\s+for:\s*)\S+", r"\g<1>0s", rules)
        pathlib.Path(cls.dir, "rules.yml").write_text(rules, encoding="utf-8")
        pathlib.Path(cls.dir, "prometheus.yml").write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            "rule_files: [rules.yml]\n"
            "scrape_configs:\n"
            "  - job_name: gpudoc\n"
            f"    static_configs: [{{targets: ['127.0.0.1:{cls.serve_port}']}}]\n", encoding="utf-8")
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
        names = {line.split("{")[0].split(" ")[0] for line in text.splitlines() if line.startswith("gpudoc_")}
        self.assertIn("gpudoc_power_watts", names)
        unknown = names - exporter_metrics.exposed(SOURCE)
        self.assertEqual(unknown, set(), "series the deploy/ tests do not know: add them to exporter_metrics.EXTRA")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
