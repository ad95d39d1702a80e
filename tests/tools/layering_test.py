#!/usr/bin/env python3
"""Tests of tools/layering.py: an include that runs down passes, one that runs up or sideways fails
naming the file and line, a quoted include of a non-src folder is ignored, a folder without a layer
is named.

    python3 tests/tools/layering_test.py SOURCE_DIR
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(SOURCE_DIR, "tools", "layering.py")


class LayeringTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="layering-")  # private (0700), unpredictable name

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    def run_tool(self):
        return subprocess.run([sys.executable, SCRIPT, self.dir], capture_output=True, text=True, check=False)

    def test_downward_includes_pass(self):
        self.write("cli/main.cpp", '#include "view/page.hpp"\n#include "core/error.hpp"\n#include "cli/common.hpp"\n')
        self.write("telemetry/trace.cpp", '#include "gpu/backend.hpp"\n#include <vector>\n')
        r = self.run_tool()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout, "")

    def test_upward_include_fails_naming_file_and_line(self):
        self.write("gpu/nvml.cpp", '#include "core/error.hpp"\n\n#include "telemetry/trace.hpp"\n')
        r = self.run_tool()
        self.assertEqual(r.returncode, 1)
        self.assertIn(os.path.join("gpu", "nvml.cpp") + ":3:", r.stdout)
        self.assertIn("gpu (layer 1) includes telemetry (layer 2)", r.stdout)
        self.assertNotIn(":1:", r.stdout)  # the include of core is fine

    def test_same_layer_fails(self):
        self.write("bench/run.cpp", '#include "diagnose/classify.hpp"\n')
        r = self.run_tool()
        self.assertEqual(r.returncode, 1)
        self.assertIn("bench (layer 3) includes diagnose (layer 3)", r.stdout)

    def test_cli_cannot_be_included(self):
        self.write("view/page.cpp", '  #  include "cli/common.hpp"\n')
        r = self.run_tool()
        self.assertEqual(r.returncode, 1)
        self.assertIn("view (layer 7) includes cli (layer 8)", r.stdout)

    def test_serve_sits_between_baseline_and_view(self):
        self.write("serve/exposition.cpp", '#include "baseline/store.hpp"\n#include "diagnose/diagnose.hpp"\n')
        self.assertEqual(self.run_tool().returncode, 0)
        self.write("serve/page.cpp", '#include "view/html_page.hpp"\n')
        r = self.run_tool()
        self.assertEqual(r.returncode, 1)
        self.assertIn("serve (layer 6) includes view (layer 7)", r.stdout)

    def test_quoted_non_src_header_is_ignored(self):
        self.write("core/log.cpp", '#include "fmt/format.h"\n#include "nlohmann/json.hpp"\n')
        self.assertEqual(self.run_tool().returncode, 0)

    def test_folder_without_a_layer_is_named(self):
        self.write("billing/energy.cpp", '#include "core/error.hpp"\n')
        r = self.run_tool()
        self.assertEqual(r.returncode, 1)
        self.assertIn("src/billing has no layer", r.stdout)

    def test_missing_folder_is_a_usage_error(self):
        r = subprocess.run([sys.executable, SCRIPT, os.path.join(self.dir, "absent")], capture_output=True, text=True,
                           check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("not a folder", r.stderr)


if __name__ == "__main__":
    unittest.main()
