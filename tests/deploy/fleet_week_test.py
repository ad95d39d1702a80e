"""A small fleet-week on a real Prometheus (tools/fleet_week.py): 16 GPUs on two nodes over two
days of `gpudoc serve`'s fleet counters, made from the bundled H200 traces by `gpudoc trace
counters`, backfilled with `promtool tsdb create-blocks-from openmetrics`, and read back by
`gpudoc report --fleet --until`. Its checks must all pass: the GPU time, energy and money, each
cause, each namespace and the vanished node within 2 % of what was written, the counter resets
(a serve restart per node and day), the vanished node, the GPUs and the nodes. The same checks are
then shown to fail on a report altered by 3 % or missing what it must say. Exit 77 (skipped) when
prometheus or promtool is not installed (apt-get install prometheus).

    python3 fleet_week_test.py SOURCE_DIR GPUDOC_BINARY
"""
import copy
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(".")
GPUDOC = sys.argv[2] if len(sys.argv) > 2 else "gpudoc"
GPUS, DAYS, PER_NODE = 16, 2, 8

sys.path.insert(0, str(SOURCE / "tools"))
import fleet_week  # noqa: E402


class FleetWeek(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="gpudoc-fleet-week-test-")
        cls.proc = subprocess.run(
            [sys.executable, str(SOURCE / "tools" / "fleet_week.py"), cls.dir, "--gpus", str(GPUS), "--days",
             str(DAYS), "--gpus-per-node", str(PER_NODE), "--gpudoc", GPUDOC],
            capture_output=True, text=True, timeout=600)  # a hang guard: it takes seconds
        path = pathlib.Path(cls.dir, "fleet_week.json")
        cls.result = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_checks_pass(self):
        self.assertIsNotNone(self.result,
                             f"no result: exit {self.proc.returncode}\n{self.proc.stdout}{self.proc.stderr}")
        failed = [c for c in self.result["checks"] if not c["ok"]]
        self.assertEqual(failed, [], self.proc.stdout)
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        self.assertEqual(self.result["gpus"], GPUS)
        self.assertGreaterEqual(self.result["restarts"], 2)
        self.assertGreater(self.result["samples"], GPUS * DAYS * 1440)
        causes = {c["what"] for c in self.result["checks"]}
        for cause in ("idle", "pulse", "sawtooth"):
            self.assertIn(f"lost to {cause} (s)", causes)

    def checks(self, by_node, by_namespace):
        fleet = fleet_week.Fleet(self.result["gpus"], self.result["days"], self.result["gpus_per_node"],
                                 self.result["end_unix_s"])
        injected = {(i["sample"], i["id"], i["node"]): i["value"] for i in self.result["injected"]}
        rows, _ = fleet_week.check(by_node, by_namespace, injected, fleet)
        return {r["what"]: r["ok"] for r in rows}

    def test_checks_can_fail(self):
        self.assertIsNotNone(self.result, self.proc.stdout + self.proc.stderr)
        node, ns = self.result["report_by_node"], self.result["report_by_namespace"]
        self.assertTrue(all(self.checks(node, ns).values()))
        altered = copy.deepcopy(node)
        altered["totals"]["observed_s"] *= 1.03
        altered["causes"][0]["gpu_s"] *= 0.97
        altered["counter_resets"] += 1
        altered["vanished_nodes"] = []
        failed = {k for k, ok in self.checks(altered, ns).items() if not ok}
        self.assertEqual(failed, {"observed GPU time (s)", f"lost to {node['causes'][0]['id']} (s)", "counter resets",
                                  "vanished nodes"})
        fewer = copy.deepcopy(ns)
        fewer["groups"] = fewer["groups"][1:]
        self.assertIn(False, self.checks(node, fewer).values())


if __name__ == "__main__":
    missing = [t for t in ("prometheus", "promtool") if not shutil.which(t)]
    if missing:
        print(f"skipped: {' and '.join(missing)} not found (apt-get install prometheus)")
        sys.exit(77)
    sys.exit(0 if unittest.main(argv=sys.argv[:1], exit=False).result.wasSuccessful() else 1)
