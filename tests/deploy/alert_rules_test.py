"""deploy/prometheus: the alerting rules load (`promtool check rules`), pass their unit tests
(`promtool test rules`), and each rule is tested both firing and not firing, carries a severity and
its annotations, reads only series gpudoc serve exposes, and names the reset-class XIDs that
src/health/xid.cpp names. Needs promtool (Debian: prometheus) and PyYAML (python3-yaml),
both installed by scripts/setup.sh.

    python3 tests/deploy/alert_rules_test.py SOURCE_DIR
"""
import pathlib
import re
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import exporter_metrics  # noqa: E402

SOURCE = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
RULES = SOURCE / "deploy/prometheus/gpudoc-alerts.yml"
TESTS = SOURCE / "deploy/prometheus/gpudoc-alerts.test.yml"
RECORDING = SOURCE / "deploy/prometheus/gpudoc-rules.yml"
RECORDING_TESTS = SOURCE / "deploy/prometheus/gpudoc-rules.test.yml"
# Series of kube-state-metrics that the recording rules join gpudoc's pod UIDs and container ids with.
KUBE_STATE_METRICS = {"kube_pod_info", "kube_pod_container_info"}


def load_yaml(path):
    try:
        import yaml
    except ImportError:
        raise AssertionError("PyYAML is missing: apt-get install python3-yaml (scripts/setup.sh)")
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def promtool():
    p = shutil.which("promtool")
    if p is None:
        raise AssertionError("promtool not found: apt-get install prometheus (scripts/setup.sh)")
    return p


def rules():
    return [r for g in load_yaml(RULES)["groups"] for r in g["rules"]]


class PromtoolTest(unittest.TestCase):
    def run_promtool(self, *args):
        r = subprocess.run([promtool(), *args], cwd=RULES.parent, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, f"promtool {' '.join(args)} failed:\n{r.stdout}\n{r.stderr}")
        return r.stdout

    def test_check_rules(self):
        out = self.run_promtool("check", "rules", RULES.name)
        self.assertIn(f"SUCCESS: {len(rules())} rules found", out)

    def test_unit_tests_pass(self):
        self.assertIn("SUCCESS", self.run_promtool("test", "rules", TESTS.name))


class RecordingRulesTest(unittest.TestCase):
    """gpudoc-rules.yml: the attribution joins load, pass their unit tests, each is tested, and they
    read only gpudoc's series, kube-state-metrics' and their own records."""

    def recording(self):
        return [r for g in load_yaml(RECORDING)["groups"] for r in g["rules"]]

    def run_promtool(self, *args):
        r = subprocess.run([promtool(), *args], cwd=RECORDING.parent, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, f"promtool {' '.join(args)} failed:\n{r.stdout}\n{r.stderr}")
        return r.stdout

    def test_check_and_test(self):
        self.assertIn(f"SUCCESS: {len(self.recording())} rules found", self.run_promtool("check", "rules", RECORDING.name))
        self.assertIn("SUCCESS", self.run_promtool("test", "rules", RECORDING_TESTS.name))

    def test_every_record_is_tested(self):
        tested = {t["expr"] for case in load_yaml(RECORDING_TESTS)["tests"] for t in case.get("promql_expr_test", [])}
        for r in self.recording():
            self.assertIn(r["record"], tested, f"{r['record']}: no promql_expr_test")

    def test_only_known_series(self):
        records = {r["record"] for r in self.recording()}
        allowed = exporter_metrics.exposed(SOURCE) | KUBE_STATE_METRICS | records
        for r in self.recording():
            used = exporter_metrics.metric_names_in(r["expr"])
            self.assertLessEqual(used, allowed, f"{r['record']}: unknown series {used - allowed}")


class RuleContentTest(unittest.TestCase):
    def test_every_rule_is_tested_firing_and_not_firing(self):
        firing, quiet = set(), set()
        for case in load_yaml(TESTS)["tests"]:
            for t in case.get("alert_rule_test", []):
                (firing if t.get("exp_alerts") else quiet).add(t["alertname"])
        for r in rules():
            self.assertIn(r["alert"], firing, f"{r['alert']}: no test where it fires")
            self.assertIn(r["alert"], quiet, f"{r['alert']}: no test where it stays quiet")

    def test_severity_and_annotations(self):
        for r in rules():
            sev = r.get("labels", {}).get("severity")
            self.assertIn(sev, ("warning", "critical", "{{ $labels.severity }}"), r["alert"])
            for key in ("summary", "description"):
                self.assertTrue(r.get("annotations", {}).get(key), f"{r['alert']}: no {key}")

    def test_only_exposed_series(self):
        allowed = exporter_metrics.exposed(SOURCE)
        for r in rules():
            used = exporter_metrics.metric_names_in(r["expr"])
            self.assertTrue(used, r["alert"])
            self.assertLessEqual(used, allowed, f"{r['alert']}: unknown series {used - allowed}")

    def test_reset_xids_match_the_health_check(self):
        text = (SOURCE / "src/health/xid.cpp").read_text(encoding="utf-8")
        want = {int(n) for n, c in re.findall(r"\{(\d+), XidClass::k(\w+),", text) if c in ("ResetGpu", "Reboot")}
        self.assertIn(79, want)
        for r in rules():
            if not r["alert"].startswith("GpudocXid"):
                continue
            for listed in re.findall(r'xid=~"([0-9|]+)"', r["expr"]):
                self.assertEqual({int(n) for n in listed.split("|")}, want, r["alert"])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
