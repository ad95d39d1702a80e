"""The rank label: from the launcher's environment, in the documented order, carried in the
hello, in every ::gpudoc line and in every report to the guard."""
import io
import json
import os
import unittest
from unittest import mock

from gpudoc import Guard, report
from gpudoc.rank import RANK_VARIABLES, rank_from_env
from client.fake_guard import FakeGuard


def clean_env(**values):
    """os.environ without any rank variable, plus ``values``."""
    env = {k: v for k, v in os.environ.items() if k not in RANK_VARIABLES}
    env.update(values)
    return mock.patch.dict(os.environ, env, clear=True)


class RankFromEnvTest(unittest.TestCase):
    def test_the_order(self):
        every = {"RANK": "5", "OMPI_COMM_WORLD_RANK": "6", "SLURM_PROCID": "7", "LOCAL_RANK": "1"}
        self.assertEqual(RANK_VARIABLES, ("RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "LOCAL_RANK"))
        self.assertEqual(rank_from_env(every), (5, "RANK"))
        del every["RANK"]
        self.assertEqual(rank_from_env(every), (6, "OMPI_COMM_WORLD_RANK"))
        del every["OMPI_COMM_WORLD_RANK"]
        self.assertEqual(rank_from_env(every), (7, "SLURM_PROCID"))
        del every["SLURM_PROCID"]
        self.assertEqual(rank_from_env(every), (1, "LOCAL_RANK"))
        self.assertIsNone(rank_from_env({}))

    def test_a_value_that_is_not_a_rank_is_skipped(self):
        for bad in ("", "x", "-1", "1.5", "３", str(2**31)):
            with self.subTest(bad=bad):
                self.assertEqual(rank_from_env({"RANK": bad, "SLURM_PROCID": "2"}), (2, "SLURM_PROCID"))
        self.assertEqual(rank_from_env({"RANK": " 4 "}), (4, "RANK"))


class RankInReportsTest(unittest.TestCase):
    def test_the_metrics_line_carries_the_rank(self):
        out = io.StringIO()
        with clean_env(RANK="3", LOCAL_RANK="1"):
            report(stream=out, step=1, loss=0.5)
            report(stream=out, step=2, rank=9)  # the job's own rank wins
        self.assertEqual(out.getvalue().splitlines(),
                         ['::gpudoc {"rank": 3, "step": 1, "loss": 0.5}', '::gpudoc {"step": 2, "rank": 9}'])

    def test_without_a_rank_the_line_has_none(self):
        out = io.StringIO()
        with clean_env():
            report(stream=out, step=1)
        self.assertEqual(out.getvalue(), '::gpudoc {"step": 1}\n')

    def test_the_hello_and_the_reports_to_the_guard_carry_it(self):
        server = FakeGuard()
        try:
            with clean_env(SLURM_PROCID="12"):
                guard = Guard(server.path, name="train")
                self.assertEqual(guard.rank, 12)
                guard.report(step=1)
                guard.close()
            self.assertEqual(server.wait_for("hello")[0]["rank"], 12)
            self.assertEqual(server.wait_for("report")[0]["figures"], {"rank": 12, "step": 1})
        finally:
            server.close()

    def test_an_explicit_rank_wins_and_none_leaves_the_hello_without(self):
        for env, given, want in [({"RANK": "1"}, 4, 4), ({}, None, None)]:
            server = FakeGuard()
            try:
                with clean_env(**env):
                    Guard(server.path, rank=given).close()
                hello = server.wait_for("hello")[0]
                self.assertEqual(hello.get("rank"), want)
                self.assertEqual("rank" in hello, want is not None)
            finally:
                server.close()


if __name__ == "__main__":
    unittest.main()
