#!/usr/bin/env python3
"""Tests of tools/function_length.py: the limit is exact (120 passes, 121 fails), the length is
counted as clang-tidy counts it, and braces in comments, literals and directives are not code.

    python3 tests/tools/function_length_test.py SOURCE_DIR
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(SOURCE_DIR, "tools", "function_length.py")


def body(lines: int, filler: str = "  x += 1;") -> str:
    """A body `lines` long as clang-tidy counts it: `{` then lines-1 statements then `}`."""
    return "{\n" + "\n".join([filler] * (lines - 1)) + "\n}\n"


class FunctionLengthTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="function-length-")  # private (0700), unpredictable name

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write(self, name: str, text: str) -> str:
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def run_tool(self, *args):
        return subprocess.run([sys.executable, SCRIPT, self.dir, *args], capture_output=True, text=True, check=False)

    def test_120_lines_pass_and_121_fail(self):
        self.write("ok.cpp", "int fits(int x) " + body(120) + "\nint small() { return 1; }\n")
        r = self.run_tool()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout, "")
        self.write("long.cu", "namespace a {\n__global__ void too_long(float* x) " + body(121) + "}\n")
        r = self.run_tool()
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout.splitlines(), [f"{self.dir}/long.cu:2: too_long is 121 lines (max 120)"])

    def test_max_sets_the_limit(self):
        self.write("f.hpp", "struct S {\n  void m() const " + body(30) + "};\n")
        self.assertEqual(self.run_tool("--max", "30").returncode, 0)
        r = self.run_tool("--max", "29")
        self.assertEqual(r.returncode, 1)
        self.assertIn("f.hpp:2: m is 30 lines (max 29)", r.stdout)

    def test_braces_in_comments_literals_and_directives_are_not_code(self):
        # Each of these would close the function early, or open a new one, if read as code.
        tricky = "\n".join([
            "  // }",
            "  /* } { */",
            '  const char* s = "}}}";',
            "  char c = '}';",
            '  auto r = R"x(})x";',
            "  int big = 1'000'000;",
            "#define CLOSE }",
        ])
        self.write("t.cpp", "int f() {\n" + tricky + "\n" + "\n".join(["  x += 1;"] * 120) + "\n}\n")
        r = self.run_tool()
        self.assertEqual(r.returncode, 1)
        self.assertIn("t.cpp:1: f is 128 lines (max 120)", r.stdout)

    def test_constructor_initializer_lists_lambdas_and_classes(self):
        self.write("c.cpp", "\n".join([
            "namespace n {",
            "class C {",
            " public:",
            "  C(int a) : a_{a}, b_(a) " + body(121).rstrip(),
            "  bool operator==(const C& o) const { return a_ == o.a_; }",
            "  int a_, b_;",
            "};",
            "const auto lambda = [](int x) " + body(200).rstrip() + ";",  # a variable, not a function
            "}  // namespace n",
            "TEST(Suite, Name) " + body(121).rstrip(),
            "",
        ]))
        r = self.run_tool()
        self.assertEqual(r.returncode, 1)
        # C's body ends on line 125, the class on 128, the lambda spans 129-329, the namespace ends on 330.
        self.assertEqual(r.stdout.splitlines(), [
            f"{self.dir}/c.cpp:4: C is 121 lines (max 120)",
            f"{self.dir}/c.cpp:331: TEST(Suite, Name) is 121 lines (max 120)",
        ])

    def test_only_sources_are_read(self):
        self.write("notes.txt", "int f() " + body(500))
        self.write("sub/ok.h", "inline int g() " + body(10))
        self.assertEqual(self.run_tool().returncode, 0)

    def test_bad_arguments_exit_2(self):
        r = subprocess.run([sys.executable, SCRIPT, os.path.join(self.dir, "absent")], capture_output=True, text=True,
                           check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("absent: not a folder", r.stderr)
        r = self.run_tool("--max", "0")
        self.assertEqual(r.returncode, 2)
        self.assertIn("--max must be >= 1", r.stderr)


if __name__ == "__main__":
    unittest.main()
