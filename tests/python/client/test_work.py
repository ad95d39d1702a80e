"""The work keys of a report (docs/cost.md): step, samples and tokens reach the ::gpudoc line as
given, once each, so that gpudoc can count the cost per step, sample and token."""
import io
import json
import os
import unittest
from unittest import mock

from gpudoc import report
from gpudoc.rank import RANK_VARIABLES


class WorkInReportsTest(unittest.TestCase):
    def test_step_samples_and_tokens_are_on_the_line(self):
        out = io.StringIO()
        env = {k: v for k, v in os.environ.items() if k not in RANK_VARIABLES}
        with mock.patch.dict(os.environ, env, clear=True):
            report(stream=out, step=10, samples=256, tokens=256 * 2048, loss=1.5)
            report(stream=out, step=20, samples=256, tokens=524288)
        lines = [json.loads(line[len("::gpudoc "):]) for line in out.getvalue().splitlines()]
        self.assertEqual(lines, [{"step": 10, "samples": 256, "tokens": 524288, "loss": 1.5},
                                 {"step": 20, "samples": 256, "tokens": 524288}])
        self.assertEqual(sum(line["tokens"] for line in lines), 2 * 524288)


if __name__ == "__main__":
    unittest.main()
