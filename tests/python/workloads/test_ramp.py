"""tools/thermal_ramp.py: the replay trace it makes is a valid gpudoc trace whose temperatures follow
the profile against the header's own limits, and the default guard levels, fed by a persistence
or a slope-extrapolating forecast, come in order 1, 2, (cleared), 3 with time between them.
Standard library only; `gpudoc trace info` is run on it when a build is found (GPUDOC_BIN)."""
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
sys.path.insert(0, HERE)

import guard_stand_in as S  # noqa: E402
import thermal_ramp as R  # noqa: E402

SOURCE = os.path.join(REPO, "tests", "data", "gemm_saturated.jsonl")


def make(*args):
    folder = tempfile.mkdtemp(prefix="ramp-test-")
    out = os.path.join(folder, "ramp.jsonl")
    with redirect_stderr(io.StringIO()):
        rc = R.main([SOURCE, out, *args])
    return rc, out


def levels(records, header, forecast):
    """First entry time of each level and the level sequence, ticking every 0.1 s of trace time."""
    esc = S.Escalator(header["gpus"][0])
    die = [(r["t"], r["gpu_temperature_celsius"]) for r in records if "gpu_temperature_celsius" in r]
    first, sequence = {}, []
    t, i = 0.0, 0
    while t < records[-1]["t"]:
        while i + 1 < len(die) and die[i + 1][0] <= t:
            i += 1
        d = esc.tick(t, {"gpu": forecast(die, i)})
        if d:
            sequence.append(d["level"])
            if d["level"] > d["previous_level"]:
                first.setdefault(d["level"], t)
        t += 0.1
    return first, sequence


def persistence(die, i):
    return float(die[i][1])


def extrapolated(die, i):
    """The least-squares slope of the last 10 s, 5 s ahead (the guard's linear baseline)."""
    t_now = die[i][0]
    pts = [(t, v) for t, v in die[:i + 1] if t >= t_now - 10]
    n = len(pts)
    mt, mv = sum(t for t, _ in pts) / n, sum(v for _, v in pts) / n
    var = sum((t - mt) ** 2 for t, _ in pts)
    slope = sum((t - mt) * (v - mv) for t, v in pts) / var if var > 0 else 0.0
    return die[i][1] + 5 * slope


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
        samples = [r for r in self.body if r["type"] == "sample"]
        for name, forecast in (("persistence", persistence), ("extrapolated", extrapolated)):
            first, sequence = levels(samples, self.header, forecast)
            with self.subTest(forecast=name):
                self.assertEqual(sorted(first), [1, 2, 3])
                self.assertLess(first[1], first[2])
                self.assertLess(first[2], first[3])
                self.assertGreaterEqual(first[1], 20)       # the job has started by then
                self.assertGreaterEqual(first[2] - first[1], 5)
                self.assertGreaterEqual(first[3] - first[2], 30)
                down = sequence.index(2) + 1             # level 2 clears before level 3
                self.assertLess(sequence[down], 2)
        first, _ = levels(samples, self.header, persistence)
        self.assertTrue(all(10 <= b - a <= 55 for a, b in zip([first[1], first[2]], [first[2], first[3]])), first)

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
