#!/usr/bin/env python3
"""Tests of tools/check_dependencies.py: finds through gpudoc_find_* of listed names pass; a REQUIRED
find of anything else, a name the package list lacks, and a package the gpudoc binary needs but the
list gives to the tests only each fail naming the file and line; the repository itself passes.

    python3 tests/tools/check_dependencies_test.py SOURCE_DIR
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(SOURCE_DIR, "tools", "check_dependencies.py")

PACKAGES = """\
# ROLE PACKAGE PROVIDES
build   cmake               cmd:cmake
gpudoc  libfmt-dev          fmt
gpudoc  libcpp-httplib-dev  cpp-httplib
tests   libgtest-dev        GTest
"""


class CheckDependenciesTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="check-dependencies-")  # private (0700), unpredictable name
        self.write("cmake/debian-packages.txt", PACKAGES)
        self.write("cmake/Require.cmake", "find_package(${name} REQUIRED)  # the helper itself may\n")
        self.write("CMakeLists.txt", "find_package(Threads REQUIRED)\ngpudoc_find_package(fmt)\n")
        self.write("src/serve/CMakeLists.txt", "gpudoc_find_pkg_config(HTTPLIB cpp-httplib)\n")
        self.write("tests/CMakeLists.txt", "gpudoc_find_package(GTest)\nfind_program(X promtool)\n")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    def run_tool(self, root=None):
        return subprocess.run([sys.executable, SCRIPT, root or self.dir], capture_output=True, text=True, check=False)

    def test_listed_finds_pass(self):
        r = self.run_tool()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_a_required_find_outside_the_helper_fails(self):
        self.write("src/serve/CMakeLists.txt", "# a comment: find_package(Foo REQUIRED)\n\n"
                   "find_package(PkgConfig REQUIRED)\npkg_check_modules(H REQUIRED IMPORTED_TARGET cpp-httplib)\n")
        r = self.run_tool()
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("src/serve/CMakeLists.txt:3: find_package(PkgConfig REQUIRED)", r.stdout)
        self.assertIn("src/serve/CMakeLists.txt:4: pkg_check_modules(", r.stdout)
        self.assertNotIn("Foo", r.stdout)

    def test_an_optional_find_passes(self):
        self.write("src/CMakeLists.txt", "find_package(CUDAToolkit QUIET)\nfind_path(X cupti.h)\n")
        self.assertEqual(self.run_tool().returncode, 0)

    def test_a_name_the_list_lacks_fails(self):
        self.write("src/CMakeLists.txt", "\ngpudoc_find_package(nlohmann_json 3.10)\n")
        r = self.run_tool()
        self.assertEqual(r.returncode, 1)
        self.assertIn("src/CMakeLists.txt:2: 'nlohmann_json' has no row", r.stdout)

    def test_the_binary_needing_a_tests_package_fails(self):
        # what the quick start met: the binary needed a package installed only with the tests
        self.write("cmake/debian-packages.txt", PACKAGES.replace("gpudoc  libcpp-httplib-dev", "tests   libcpp-httplib-dev"))
        r = self.run_tool()
        self.assertEqual(r.returncode, 1)
        self.assertIn("src/serve/CMakeLists.txt:1: the gpudoc binary needs 'cpp-httplib'", r.stdout)

    def test_a_malformed_row_fails(self):
        self.write("cmake/debian-packages.txt", PACKAGES + "gpudoc only-two\n")
        r = self.run_tool()
        self.assertEqual(r.returncode, 1)
        self.assertIn("debian-packages.txt:6:", r.stdout)

    def test_the_repository_passes(self):
        r = self.run_tool(SOURCE_DIR)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


if __name__ == "__main__":
    unittest.main()
