#!/usr/bin/env python3
"""Tests of tools/process_words.py: lines that narrate how the work went (the phrases the tool
lists) are named; the same words used for the product's own things (the guard's sessions, an RNG's
seed, a fuzzer's corpus, a benchmark's rounds) pass; the folders it reads and skips; file names.

The narrating inputs are written with their key word between « and » (unmask() removes them), so
that this file, which the tool and the repository's own checks read, holds no narrating phrase.

    python3 tests/tools/process_words_test.py SOURCE_DIR
"""

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(SOURCE_DIR, "tools", "process_words.py")

_spec = importlib.util.spec_from_file_location("process_words", SCRIPT)
process_words = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(process_words)

def unmask(text):
    """An input as the tool sees it: the « » that keep it from narrating here removed."""
    return text.replace("«", "").replace("»", "")


NARRATING = [
    ("// Fixed in «issue» 12: the reader skips blank lines.", "issue"),
    ("See «issue» #7 for the history.", "issue"),
    ("the gate («round» 3) judges the median", "round"),
    ("As measured in the previous «round», the copy wins.", "round"),
    ("This «session» adds the HTML report.", "session"),
    ("// Measured in the previous «session» on the H200", "session"),
    ("Added in «session» 4.", "session"),
    ("written in a «session» without a GPU", "session"),
    ("as the «seed» articles describe", "seed"),
    ("The «seeds» suggest nvidia-smi dmon.", "seed"),
    ("copied from «seeds»/gpu_waveforms.md", "seed"),
    ("hbm.copy: the «seed»: bandwidth down > 5 %", "seed"),
    ("the CUDA Graph verdict follows the «seed»'s decision tree", "seed"),
]

PRODUCT = [
    "// The guard session: sampler, watches, channel, signals, events.",
    "#include \"guard/session.hpp\"",
    "guard::SessionOptions o;  // one session per GPU set",
    "`GuardSession.AJobThatDiesEndsTheGuardWithItsExitCode`",
    "the session emits one JSON line per event",
    "torch.manual_seed(0)",
    "python3 tools/thermal_ramp.py --seed 3",
    "rng = random.Random(seed=42)",
    "std::mt19937 rng(seed);",
    "// The seeds of tests/fuzz/corpus/csv and 2000 mutations of them",
    "over the seed corpora (tests/unit/telemetry)",
    "3 interleaved rounds, the order reversed every round",
    "(`--quick`, 1 round) or 1 s (default, 2 rounds)",
    "a round trip through the writer",
    "std::round(x * 10) / 10",
    "an issue with the driver is reported as an environment error",
    "the source articles read GPU load from nvidia-smi",
]


class PatternTest(unittest.TestCase):
    def test_narrating_lines_are_named_with_their_kind(self):
        for masked, kind in NARRATING:
            line = unmask(masked)
            with self.subTest(line=line):
                found = process_words.hits(line)
                self.assertTrue(found, line)
                self.assertIn(kind, [k for _, k in found])

    def test_the_products_words_pass(self):
        for line in PRODUCT:
            with self.subTest(line=line):
                self.assertEqual(process_words.hits(line), [])

    def test_file_names(self):
        self.assertTrue(process_words.name_hits(unmask("docs/notes/«issue»_12.md")))
        self.assertTrue(process_words.name_hits(unmask("tools/«round»3/check.py")))
        self.assertTrue(process_words.name_hits(unmask("docs/«seeds»/gpu.md")))
        self.assertEqual(process_words.name_hits("src/guard/session.cpp"), [])
        self.assertEqual(process_words.name_hits("tests/unit/guard/session_test.cpp"), [])


class TreeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="process-words-")  # private (0700), unpredictable name

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write(self, name, text):
        name, text = unmask(name), unmask(text)
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    def run_tool(self):
        return subprocess.run([sys.executable, SCRIPT, self.dir], capture_output=True, text=True, check=False)

    def test_a_clean_tree_passes(self):
        self.write("src/guard/session.cpp", "// The guard session.\n")
        self.write("docs/guard.md", "Each guard session keeps its log.\n")
        r = self.run_tool()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout, "")

    def test_hits_are_named_by_file_and_line(self):
        self.write("src/bench/gemm.cu", "// one\n// two («round» 2)\n")
        self.write("docs/architecture.md", "intro\n\nWritten in this «session».\n")
        self.write("tests/unit/x_test.cpp", "// «issue» #4\n")
        r = self.run_tool()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(unmask('src/bench/gemm.cu:2: "«round» 2" (round)'), r.stdout)
        self.assertIn(unmask('docs/architecture.md:3: "this «session»" (session)'), r.stdout)
        self.assertIn(unmask('tests/unit/x_test.cpp:1: "«issue» #4" (issue)'), r.stdout)

    def test_recorded_data_raw_results_and_other_folders_are_not_read(self):
        self.write("tests/data/jobs/notes.txt", "this «session»'s trace\n")
        self.write("docs/results/raw/profile/README.md", "«issue» 3\n")
        self.write("workloads/train.py", "# previous «session»\n")
        r = self.run_tool()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_results_pages_are_read(self):
        self.write("docs/results/guard.md", "Measured in «session» 5.\n")
        r = self.run_tool()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("docs/results/guard.md:1:", r.stdout)

    def test_file_names_anywhere_are_read(self):
        self.write("workloads/«seeds»/a.md", "nothing\n")
        r = self.run_tool()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(unmask("workloads/«seeds»/a.md:0:"), r.stdout)

    def test_bad_arguments(self):
        r = subprocess.run([sys.executable, SCRIPT, os.path.join(self.dir, "missing")], capture_output=True,
                           text=True, check=False)
        self.assertEqual(r.returncode, 2)


if __name__ == "__main__":
    unittest.main()
