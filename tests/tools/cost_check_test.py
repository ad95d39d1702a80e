#!/usr/bin/env python3
"""Tests of tools/cost_check.py (the GPU machine's check of the Cost block, tools/cost_check.sh): a
run whose energy agrees with the second reader's counter and with the power readings, and whose split
closes, passes; energy 5 % off, or a split a microsecond short, fails naming the check; bad input is
exit 2. And tools/power_vs_counter.py on a recorded H200 trace.

    python3 tests/tools/cost_check_test.py SOURCE_DIR
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
CHECK = os.path.join(SOURCE_DIR, "tools", "cost_check.py")
POWER = os.path.join(SOURCE_DIR, "tools", "power_vs_counter.py")


def cost(energy_mj, useful_us=6_000_000, lost_us=3_000_000, rest_us=1_000_000):
    """A cost object of one GPU over 10 s (0 .. 10 s) with the given parts."""
    total = 10_000_000
    parts_mj = [energy_mj * 6 // 10, energy_mj * 3 // 10]
    parts_mj.append(energy_mj - sum(parts_mj))
    gpu = {"gpu": 0, "run": 1, "useful_us": useful_us, "unexplained_us": rest_us, "gpu_time_us": total,
           "causes": [{"cause": "sawtooth", "gpu_time_us": lost_us, "energy_mj": parts_mj[1]}],
           "energy_mj": energy_mj, "useful_mj": parts_mj[0], "unexplained_mj": parts_mj[2],
           "energy": {"method": "counter", "power_shift_s": 0.5}}
    split = [{"part": "useful", "gpu_time_us": useful_us, "energy_mj": parts_mj[0]},
             {"part": "sawtooth", "gpu_time_us": lost_us, "energy_mj": parts_mj[1]},
             {"part": "unexplained", "gpu_time_us": rest_us, "energy_mj": parts_mj[2]}]
    return {"run": {"start_s": 0.0, "end_s": 10.0, "span": "the command's start to its exit"},
            "gpu_time_us": total, "energy_mj": energy_mj, "split": split, "gpus": [gpu]}


class CostCheckTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="cost-check-")  # private (0700), unpredictable name
        # 500 W for 10 s read every 0.1 s: 5000 J by the power readings and by the counter.
        with open(self.path("run.jsonl"), "w", encoding="utf-8") as f:
            for k in range(0, 112):
                f.write(json.dumps({"type": "sample", "t": k * 0.1, "gpu": 0, "power_watts": 500.0}) + "\n")
        self.write("nvml.json", {"duration_s": 10.0, "gpus": [{"index": 0, "name": "NVIDIA H200", "energy_j": 5000.0,
                                                               "power": [[k * 0.1, 500.0] for k in range(101)]}]})

    def tearDown(self):
        shutil.rmtree(self.dir)

    def path(self, name):
        return os.path.join(self.dir, name)

    def write(self, name, doc):
        with open(self.path(name), "w", encoding="utf-8") as f:
            json.dump(doc, f)

    def run_check(self, doc):
        self.write("diagnose.json", doc)
        return subprocess.run([sys.executable, CHECK, self.path("diagnose.json"), self.path("nvml.json"),
                               self.path("run.jsonl")], capture_output=True, text=True, check=False)

    def test_agreeing_energy_and_a_closing_split_pass(self):
        r = self.run_check({"cost": cost(5_020_000)})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("of the counter read by another tool (0.40%)", r.stdout)
        self.assertNotIn("FAIL", r.stdout)

    def test_energy_five_percent_off_fails(self):
        r = self.run_check({"cost": cost(5_250_000)})
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("FAIL  GPU 0: gpudoc's energy within 2% of the counter", r.stdout)

    def test_a_split_a_microsecond_short_fails(self):
        r = self.run_check({"traces": [{"cost": cost(5_000_000, rest_us=999_999)}]})
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("FAIL  GPU 0 run 1: useful + causes + unexplained = 9999999 us", r.stdout)

    def test_bad_input_is_exit_2(self):
        with open(self.path("diagnose.json"), "w", encoding="utf-8") as f:
            f.write("{not json")
        r = subprocess.run([sys.executable, CHECK, self.path("diagnose.json"), self.path("nvml.json"),
                            self.path("run.jsonl")], capture_output=True, text=True, check=False)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(self.run_check({"findings": []}).returncode, 2)


class PowerVsCounterTest(unittest.TestCase):
    def test_a_recorded_h200_trace(self):
        trace = os.path.join(SOURCE_DIR, "tests", "data", "gemm_saturated.jsonl")
        r = subprocess.run([sys.executable, POWER, trace], capture_output=True, text=True, check=True)
        lines = r.stdout.splitlines()
        self.assertEqual(len(lines), 2, r.stdout)
        cells = lines[1].split()
        self.assertEqual(cells[0], "gemm_saturated.jsonl")
        self.assertAlmostEqual(float(cells[3]), 17421.346 - 5687.813, places=1)  # the counter's difference
        moved = float(cells[-2])
        self.assertLess(abs(moved), 1.0)  # the readings placed 0.5 s earlier: within 1 % of the counter


if __name__ == "__main__":
    unittest.main()
