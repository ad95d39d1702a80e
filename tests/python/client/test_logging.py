"""The client speaks through ``logging`` (logger "gpudoc", a NullHandler only): nothing on stderr
unless the program configures logging; the ::gpudoc line on stdout, which is the protocol, stays."""
import io
import json
import logging
import os
import subprocess
import sys
import unittest
from unittest import mock

import gpudoc
from gpudoc import Guard, protocol

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(gpudoc.__file__)))  # the package under test

# A job that meets every "no guard" case and reports once, in a fresh interpreter (nothing configured).
QUIET_JOB = r"""
import os, sys
from gpudoc import Guard, report
os.environ.pop("GPUDOC_GUARD_SOCKET", None)
with Guard(name="a") as g:
    g.report(step=1)
Guard("/nonexistent/gpudoc.sock", name="b").close()
report(step=2, loss=0.5)
"""


def run_job(code, env_extra=None):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(PYTHON_DIR), PYTHONDONTWRITEBYTECODE="1")
    for name in ("RANK", "LOCAL_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"):
        env.pop(name, None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)


class LoggingTest(unittest.TestCase):
    def test_the_package_adds_a_null_handler_only(self):
        handlers = logging.getLogger("gpudoc").handlers
        self.assertEqual([type(h) for h in handlers], [logging.NullHandler])

    def test_nothing_reaches_stderr_by_default_and_the_protocol_line_stays(self):
        proc = run_job(QUIET_JOB)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stderr, "")
        self.assertEqual(proc.stdout, '::gpudoc {"step": 2, "loss": 0.5}\n')

    def test_a_program_that_configures_logging_sees_the_records(self):
        proc = run_job("import logging; logging.basicConfig(level=logging.INFO, format='%(name)s %(levelname)s "
                       "%(message)s')\n" + QUIET_JOB)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = proc.stderr.splitlines()
        self.assertEqual(len(lines), 2, proc.stderr)
        self.assertTrue(lines[0].startswith("gpudoc INFO no guard (GPUDOC_GUARD_SOCKET is not set)"), lines[0])
        self.assertTrue(lines[1].startswith('gpudoc WARNING cannot reach the guard at "/nonexistent/gpudoc.sock"'),
                        lines[1])

    def test_each_kind_is_said_once_then_at_debug(self):
        with mock.patch.dict(os.environ):
            os.environ.pop(protocol.SOCKET_ENV, None)
            with self.assertLogs("gpudoc", level="DEBUG") as logs:
                guard = Guard("/nonexistent/a.sock")
                guard._say("connect", "again")
        self.assertEqual([(r.levelname, r.getMessage()[:22]) for r in logs.records],
                         [("WARNING", "cannot reach the guard"), ("DEBUG", "again")])

    def test_an_explicit_stream_still_gets_the_lines(self):
        err = io.StringIO()
        Guard("/nonexistent/b.sock", stderr=err)
        self.assertEqual(err.getvalue().count("\n"), 1)
        self.assertTrue(err.getvalue().startswith("gpudoc: cannot reach the guard at " +
                                                  json.dumps("/nonexistent/b.sock")))


if __name__ == "__main__":
    unittest.main()
