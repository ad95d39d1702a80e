"""tools/thermal_ramp.py: the replay trace it makes is a valid gpudoc trace whose temperatures follow
the profile against the header's own limits, and the real guard (`gpudoc --backend replay:RAMP@20 guard
--dry-run`, default policy) enters levels 1, 2, (cleared), 3 in order with time between them.
Standard library only; the gpudoc checks run when a build is found (GPUDOC_BIN)."""
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest
from contextlib import redirect_stderr

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(REPO, "tools"))

import thermal_ramp as R  # noqa: E402

SOURCE = os.path.join(REPO, "tests", "data", "gemm_saturated.jsonl")


def make(*args):
    folder = tempfile.mkdtemp(prefix="ramp-test-")
    out = os.path.join(folder, "ramp.jsonl")
    with redirect_stderr(io.StringIO()):
        rc = R.main([SOURCE, out, *args])
    return rc, out


def gpudoc_binary():
    binary = os.environ.get("GPUDOC_BIN") or os.path.join(REPO, "build", "src", "cli", "gpudoc")
    return binary if os.access(binary, os.X_OK) else None


def guard_levels(binary, ramp, speed=20.0):
    """Each decision's (trace second, level) from a dry run of the real guard over the ramp."""
    folder = tempfile.mkdtemp(prefix="ramp-guard-")
    log = os.path.join(folder, "guard.jsonl")
    env = {k: v for k, v in os.environ.items() if k not in ("GPUDOC_BACKEND", "GPUDOC_GUARD_SOCKET")}
    proc = subprocess.run([binary, "--backend", f"replay:{ramp}@{speed:g}", "guard", "--dry-run", "--no-store",
                           "--log", log, "-q", "--", sys.executable, "-c", f"import time; time.sleep({160 / speed})"],
                          capture_output=True, text=True, env=env, timeout=120)
    if proc.returncode != 0:
        raise AssertionError(proc.stderr)
    events = [json.loads(line) for line in open(log)]
    start = next(e["t_unix"] for e in events if e["type"] == "start")
    return [((e["t_unix"] - start) * speed, e["level"]) for e in events if e["type"] == "decision"]


class RampTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        rc, cls.path = make()
        assert rc == 0
        with open(cls.path) as f:
            cls.lines = [json.loads(line) for line in f]
        cls.header, cls.body, cls.end = cls.lines[0], cls.lines[1:-1], cls.lines[-1]
        cls.limits = cls.header["gpus"][0]

    def test_the_format_holds(self):
        self.assertEqual((self.header["type"], self.header["format"], self.header["version"]), ("header", "gpudoc-trace", 1))
        self.assertEqual(self.end["type"], "end")
        samples = [r for r in self.body if r["type"] == "sample"]
        self.assertEqual(self.end["sample_lines"], len(samples))
        self.assertEqual({r["type"] for r in self.body}, {"sample", "event"})  # no process lines
        metrics = {m["name"] for m in self.header["metrics"]}
        for r in samples:
            self.assertLessEqual(set(r) - {"type", "t", "gpu"}, metrics)
            self.assertTrue(0 <= r["t"] <= 150)
            self.assertEqual(round(r["t"], 6), r["t"])
        self.assertEqual({r["kind"] for r in self.body if r["type"] == "event"}, {"annotation"})
        self.assertIn("synthetic", self.header["synthetic"]["what"])
        self.assertEqual(self.header["command"], [])
        energy = [r["energy_joules"] for r in samples if "energy_joules" in r]
        self.assertEqual(energy, sorted(energy))
        self.assertGreater(self.end["t"], 149)

    def test_temperatures_follow_the_profile(self):
        die = {round(r["t"], 1): r["gpu_temperature_celsius"] for r in self.body if "gpu_temperature_celsius" in r}
        at = lambda t: die[min(die, key=lambda k: abs(k - t))]  # noqa: E731
        mo, sd, sh = (self.limits[k] for k in ("temperature_gpu_max_celsius", "temperature_slowdown_celsius",
                                               "temperature_shutdown_celsius"))
        self.assertEqual((at(10), at(44), at(58), at(74), at(130)), (mo - 12, mo - 1, sd, sd - 8, sh - 2))
        hbm = [r["memory_temperature_celsius"] for r in self.body if "memory_temperature_celsius" in r]
        self.assertLessEqual(max(hbm), self.limits["temperature_memory_max_celsius"] - 8)
        self.assertTrue(all(isinstance(v, int) for v in die.values()))
        masks = [(r["gpu_temperature_celsius"], r["clock_event_reasons_mask"]) for r in self.body
                 if "clock_event_reasons_mask" in r]
        self.assertTrue(all(bool(m & 0x40) == (t >= sd) for t, m in masks))
        self.assertTrue(all(bool(m & 0x20) == (t >= mo) for t, m in masks))

    def test_the_default_levels_come_in_order_with_time_between(self):
        binary = gpudoc_binary()
        if binary is None:
            self.skipTest("no gpudoc build (GPUDOC_BIN)")
        decisions = guard_levels(binary, self.path)
        sequence = [level for _, level in decisions]
        first = {}
        for t, level in decisions:
            first.setdefault(level, t)
        self.assertEqual(sequence[:3], [1, 2, 1], decisions)   # level 2 clears before level 3
        self.assertEqual(sequence[-1], 3, decisions)
        self.assertGreaterEqual(first[1], 20, decisions)       # the job has started by then
        self.assertGreaterEqual(first[2] - first[1], 5, decisions)
        self.assertGreaterEqual(first[3] - first[2], 30, decisions)

    def test_gpudoc_reads_it(self):
        binary = os.environ.get("GPUDOC_BIN") or os.path.join(REPO, "build", "src", "cli", "gpudoc")
        if not os.access(binary, os.X_OK):
            self.skipTest("no gpudoc build (GPUDOC_BIN)")
        proc = subprocess.run([binary, "trace", "info", self.path], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("a valid gpudoc trace", proc.stdout)


class ProfileTest(unittest.TestCase):
    def test_a_custom_profile(self):
        rc, path = make("--profile", "0:70,10:slowdown-1:hot,20:slowdown-1")
        self.assertEqual(rc, 0)
        with open(path) as f:
            lines = [json.loads(line) for line in f]
        temps = [r["gpu_temperature_celsius"] for r in lines if "gpu_temperature_celsius" in r]
        self.assertEqual((temps[0], temps[-1]), (70, lines[0]["gpus"][0]["temperature_slowdown_celsius"] - 1))
        self.assertLessEqual(lines[-1]["t"], 20)

    def test_bad_profiles_and_missing_limits(self):
        self.assertEqual(make("--profile", "0:70,0:80")[0], 2)
        self.assertEqual(make("--profile", "0:hot+1,5:70")[0], 2)
        with tempfile.TemporaryDirectory() as folder:
            with open(SOURCE) as f:
                header, *rest = f.readlines()
            h = json.loads(header)
            del h["gpus"][0]["temperature_slowdown_celsius"]
            bare = os.path.join(folder, "bare.jsonl")
            with open(bare, "w") as f:
                f.write(json.dumps(h) + "\n" + "".join(rest))
            with redirect_stderr(io.StringIO()) as err:
                self.assertEqual(R.main([bare, os.path.join(folder, "o.jsonl")]), 1)
            self.assertIn("temperature_slowdown_celsius", err.getvalue())


if __name__ == "__main__":
    unittest.main()
