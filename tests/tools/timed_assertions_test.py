#!/usr/bin/env python3
"""Tests of tools/timed_assertions.py: an upper bound on a measured time fails the check unless a
`hang guard` comment stands on its line or the line before; a lower bound, a bound on a count and
an assertion on data pass.

The inputs are C++ lines written with « » inside the macro's name (EXPECT_«LT»); check() removes
them before the tool reads the file, so that this file holds no timed assertion of its own.

    python3 tests/tools/timed_assertions_test.py SOURCE_DIR
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(SOURCE_DIR, "tools", "timed_assertions.py")


class TimedAssertionsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="timed-assertions-")  # private (0700), unpredictable name

    def tearDown(self):
        shutil.rmtree(self.dir)

    def check(self, name, text):
        text = text.replace("«", "").replace("»", "")
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(text)
        return subprocess.run([sys.executable, SCRIPT, self.dir], capture_output=True, text=True)

    def assert_flagged(self, name, text):
        r = self.check(name, text)
        self.assertEqual(r.returncode, 1, text)
        self.assertIn(name + ":", r.stdout)

    def assert_passes(self, name, text):
        r = self.check(name, text)
        self.assertEqual(r.returncode, 0, text + r.stdout)

    def test_speed_bounds_are_flagged(self):
        for line in ("  EXPECT_«LT»(took, 1.0);",
                     "  EXPECT_«LT»(seconds_of([&] { d = run(t); }), 1.0);",
                     "  EXPECT_«LT»(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));",
                     "  EXPECT_«LT»(slowest, 200ms);",
                     "  EXPECT_«LE»(*lost_reported - lost_at, 2 * period + 60ms);",
                     "  EXPECT_«LT»(m.wall_s, kMaxSeconds) << cmd;",
                     '  EXPECT_«LT»(a["latency_ms"].get<double>(), 1500) << a.dump();',
                     "  for (const auto& s : seeds) EXPECT_«LT»(timed_fuzz_input(s), 1.0);"):
            self.assert_flagged("a_test.cpp", line + "\n")
        self.assert_flagged("test_a.py", "        self.assertLess(elapsed, 2.0)\n")
        self.assert_flagged("test_b.py", "    assert time.monotonic() - start < 1.0\n")

    def test_a_hang_guard_says_so(self):
        self.assert_passes("a_test.cpp", "  EXPECT_«LT»(took, 30);  // hang guard: normally ~1 s; 30x margin\n")
        self.assert_passes("b_test.cpp", "  // hang guard: normally ~1 s; 30x margin\n  EXPECT_«LT»(took, 30);\n")
        self.assert_passes("test_a.py", "        self.assertLess(elapsed, 30.0)  # hang guard: normally ~0.1 s\n")
        # The comment two lines above is too far to be read as this assertion's.
        self.assert_flagged("c_test.cpp", "  // hang guard: normally ~1 s\n  x();\n  EXPECT_«LT»(took, 30);\n")

    def test_lower_bounds_counts_and_data_pass(self):
        self.assert_passes("a_test.cpp", "\n".join([
            "  EXPECT_«GE»(seconds_since(t0), 0.8);",
            "  EXPECT_«LE»(static_cast<double>(lines[2]), 1.0 * static_cast<double>(1s / period) + 2);",
            "  EXPECT_«LT»(dt, 0.30) << path;",
            "  EXPECT_«LT»(s.size(), 5u);",
            "  EXPECT_«LE»(run->wall_s, call_s);",
            "  EXPECT_«LT»(node->gpus[0].load.samples.size(), 100u);",
        ]) + "\n")


if __name__ == "__main__":
    unittest.main()
