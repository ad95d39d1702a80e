"""deploy/grafana/gpudoc-dashboard.json: it loads as JSON and is a dashboard Grafana can import
(unique panel ids, grid positions, a `datasource` variable every panel and query uses, a `gpu`
variable), and every query of every panel and variable reads only series `gpudoc serve` exposes
(tests/deploy/exporter_metrics.py: src/gpu/metrics.hpp's catalog and the exporter's own series),
filtered to the selected GPUs where the series is per GPU. It covers what the dashboard must do (docs/serve.md):
power, temperature, clocks, utilization, memory, throttle reasons, findings and health, and the
cost row (waste by cause and by namespace, the useful share, money per day).
Standard library only.

    python3 tests/deploy/dashboard_test.py SOURCE_DIR
"""
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import exporter_metrics  # noqa: E402

SOURCE = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
DASHBOARD = SOURCE / "deploy/grafana/gpudoc-dashboard.json"


def load():
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))


def all_panels(dash):
    for p in dash["panels"]:
        yield p
        yield from p.get("panels", [])  # a collapsed row holds its panels


def queries(dash):
    """(where, PromQL) for every panel target and every query variable."""
    for p in all_panels(dash):
        for t in p.get("targets", []):
            yield f"panel {p['id']} {p['title']!r} {t.get('refId')}", t["expr"]
    for v in dash["templating"]["list"]:
        if v["type"] == "query":
            q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            m = re.fullmatch(r"label_values\((.*),\s*\w+\)", q)
            yield f"variable {v['name']}", m.group(1) if m else q


class DashboardTest(unittest.TestCase):
    def setUp(self):
        self.dash = load()
        self.vars = {v["name"]: v for v in self.dash["templating"]["list"]}

    def test_importable_shape(self):
        d = self.dash
        for key in ("uid", "title", "panels", "templating", "schemaVersion"):
            self.assertIn(key, d)
        ids = [p["id"] for p in all_panels(d)]
        self.assertEqual(len(ids), len(set(ids)), "panel ids must be unique")
        for p in all_panels(d):
            g = p["gridPos"]
            self.assertTrue(0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0, p["title"])
            if p["type"] != "row":
                self.assertTrue(p.get("targets"), f"{p['title']}: no query")

    def test_no_panels_overlap(self):
        cells = {}
        for p in all_panels(self.dash):
            g = p["gridPos"]
            for x in range(g["x"], g["x"] + g["w"]):
                for y in range(g["y"], g["y"] + g["h"]):
                    self.assertNotIn((x, y), cells, f"{p['title']} overlaps {cells.get((x, y))}")
                    cells[(x, y)] = p["title"]

    def test_datasource_variable_used_everywhere(self):
        v = self.vars.get("datasource")
        self.assertIsNotNone(v, "no datasource variable")
        self.assertEqual((v["type"], v["query"]), ("datasource", "prometheus"))
        want = {"type": "prometheus", "uid": "${datasource}"}
        for p in all_panels(self.dash):
            if p["type"] == "row":
                continue
            self.assertEqual(p["datasource"], want, p["title"])
            for t in p["targets"]:
                self.assertEqual(t["datasource"], want, p["title"])
        for v in self.dash["templating"]["list"]:
            if v["type"] == "query":
                self.assertEqual(v["datasource"], want, v["name"])

    def test_gpu_variable(self):
        v = self.vars.get("gpu")
        self.assertIsNotNone(v, "no gpu variable")
        self.assertEqual(v["type"], "query")
        self.assertIn(", gpu)", v["query"]["query"])
        self.assertTrue(v["multi"] and v["includeAll"])

    def test_only_exposed_metrics(self):
        allowed = exporter_metrics.exposed(SOURCE)
        for where, expr in queries(self.dash):
            used = exporter_metrics.metric_names_in(expr)
            self.assertTrue(used, f"{where}: reads no metric: {expr}")
            self.assertLessEqual(used, allowed, f"{where}: not exposed by gpudoc serve: {used - allowed}")

    def test_per_gpu_series_follow_the_gpu_variable(self):
        per_gpu = {"gpudoc_" + n for n in exporter_metrics.catalog_names(SOURCE)} | {
            "gpudoc_clock_event_reason", "gpudoc_finding", "gpudoc_finding_severity",
            "gpudoc_finding_gpu_time_lost_seconds", "gpudoc_xid_errors_total"}
        for where, expr in queries(self.dash):
            if where.startswith("variable"):
                continue
            for name in exporter_metrics.metric_names_in(expr) & per_gpu:
                for m in re.finditer(re.escape(name) + r"(\{[^}]*\})?", expr):
                    self.assertIn('gpu=~"$gpu"', m.group(1) or "", f"{where}: {name} not filtered by $gpu")

    def test_covers_what_issue_19_asks(self):
        used = set()
        for _, expr in queries(self.dash):
            used |= exporter_metrics.metric_names_in(expr)
        for name in ("gpudoc_power_watts", "gpudoc_gpu_temperature_celsius", "gpudoc_sm_clock_mhz",
                     "gpudoc_gpu_utilization_percent", "gpudoc_memory_used_bytes", "gpudoc_clock_event_reason",
                     "gpudoc_finding_severity", "gpudoc_health_check",
                     # the cost row: waste by cause and namespace, useful share, money per day
                     "gpudoc_gpu_lost_seconds_total", "gpudoc_gpu_useful_seconds_total",
                     "gpudoc_gpu_observed_seconds_total", "gpudoc_price_gpu_hour", "gpudoc_price_kwh"):
            self.assertIn(name, used)
        types = {p["type"] for p in all_panels(self.dash)}
        self.assertIn("table", types)  # the findings and health tables

    @unittest.skipIf(shutil.which("promtool") is None, "no promtool (Debian: prometheus) to parse the queries")
    def test_queries_parse(self):
        """Each query, with Grafana's variables put in, parses as PromQL: promtool checks it as a
        recording rule (JSON is YAML, so the rule file is written with json.dumps)."""
        subst = {"$gpu": ".*", "$instance": ".*", "$__rate_interval": "1m", "$__range": "6h"}
        rules = []
        for i, (where, expr) in enumerate(queries(self.dash)):
            for k, v in subst.items():
                expr = expr.replace(k, v)
            self.assertNotIn("$", expr, f"{where}: a variable this test does not know")
            rules.append({"record": f"gpudoc_dashboard_query_{i}", "expr": expr})
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "queries.yml"
            path.write_text(json.dumps({"groups": [{"name": "dashboard", "rules": rules}]}), encoding="utf-8")
            r = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_checker_catches_a_wrong_name(self):
        self.assertEqual(exporter_metrics.metric_names_in('rate(gpudoc_power_wats{gpu=~"$gpu"}[5m])'),
                         {"gpudoc_power_wats"})
        self.assertEqual(exporter_metrics.metric_names_in(
            'sum by (gpu) (gpudoc_finding_severity >= 2) or vector(0)'), {"gpudoc_finding_severity"})


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
