import os
import pickle
import shutil
import stat
import tempfile
import unittest
from unittest import mock

from gpudoc import CheckpointError, checkpoint, load_checkpoint


class CheckpointTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="gpudoc-ckpt-test-")
        self.path = os.path.join(self.folder, "ckpt.pkl")

    def tearDown(self):
        shutil.rmtree(self.folder, ignore_errors=True)

    def leftovers(self):
        return sorted(n for n in os.listdir(self.folder) if n != "ckpt.pkl")

    def test_writes_and_loads_back(self):
        state = {"step": 7, "weights": [0.5, 1.5], "optim": {"lr": 1e-3}}
        self.assertEqual(checkpoint(state, self.path), self.path)
        self.assertEqual(load_checkpoint(self.path), state)
        self.assertEqual(self.leftovers(), [])
        self.assertEqual(stat.S_IMODE(os.stat(self.path).st_mode), 0o600)

    def test_a_crash_between_write_and_rename_leaves_the_old_file(self):
        checkpoint({"step": 1}, self.path)
        pid = os.fork()
        if pid == 0:  # the child dies for real just before the rename
            with mock.patch("os.replace", side_effect=lambda *a: os._exit(9)):
                checkpoint({"step": 2}, self.path)
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        self.assertEqual(os.WEXITSTATUS(status), 9)
        self.assertEqual(load_checkpoint(self.path), {"step": 1})
        # The dead writer's temporary file is a private one, never the checkpoint's name.
        (tmp,) = self.leftovers()
        self.assertTrue(tmp.startswith(".ckpt.pkl.") and tmp.endswith(".tmp"), tmp)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.folder, tmp)).st_mode), 0o600)

    def test_an_error_before_the_rename_cleans_up(self):
        checkpoint({"step": 1}, self.path)
        with mock.patch("os.replace", side_effect=OSError(28, "No space left on device")):
            with self.assertRaises(OSError):
                checkpoint({"step": 2}, self.path)
        self.assertEqual(load_checkpoint(self.path), {"step": 1})
        self.assertEqual(self.leftovers(), [])

    def test_a_checkpoint_that_does_not_load_never_replaces_the_last_one(self):
        checkpoint({"step": 1}, self.path)

        def corrupt(state, f):
            f.write(pickle.dumps(state)[:-3])  # cut short: pickle.load fails

        with self.assertRaises(CheckpointError) as raised:
            checkpoint({"step": 2}, self.path, save=corrupt)
        self.assertIn("does not load back", str(raised.exception))
        self.assertEqual(load_checkpoint(self.path), {"step": 1})
        self.assertEqual(self.leftovers(), [])

    def test_a_caller_check_can_refuse(self):
        def verify(loaded):
            if loaded["step"] < 0:
                raise ValueError("negative step")

        with self.assertRaises(CheckpointError):
            checkpoint({"step": -1}, self.path, verify=verify)
        self.assertFalse(os.path.exists(self.path))

    def test_loading_a_corrupt_file_names_it(self):
        with open(self.path, "wb") as f:
            f.write(b"\x80\x05garbage")
        with self.assertRaises(CheckpointError) as raised:
            load_checkpoint(self.path)
        self.assertIn(repr(self.path), str(raised.exception))

    def test_a_planted_link_is_never_followed(self):
        # Someone else's file where a predictable temporary name would be: untouched.
        victim = os.path.join(self.folder, "victim")
        with open(victim, "w") as f:
            f.write("keep")
        for name in (".ckpt.pkl.tmp", "ckpt.pkl.tmp"):
            os.symlink(victim, os.path.join(self.folder, name))
        checkpoint({"step": 3}, self.path)
        with open(victim) as f:
            self.assertEqual(f.read(), "keep")
        self.assertEqual(load_checkpoint(self.path), {"step": 3})


if __name__ == "__main__":
    unittest.main()
