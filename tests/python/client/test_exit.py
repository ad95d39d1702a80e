"""How a ``with Guard(...)`` block ends, as the guard hears it in the bye: sys.exit(0) is a clean
exit, a non-zero exit an error, Ctrl-C an interruption."""
import sys
import unittest

from gpudoc import Guard
from client.fake_guard import FakeGuard


def leave_with(raise_it):
    """The bye's reason when a with-block over a connected guard ends by ``raise_it()``."""
    server = FakeGuard()
    try:
        try:
            with Guard(server.path, name="train"):
                raise_it()
        except BaseException:  # noqa: B036 - the block's own exit is what is tested
            pass
        return server.wait_for("bye")[0]["reason"]
    finally:
        server.close()


class ExitTest(unittest.TestCase):
    def test_a_zero_exit_is_clean(self):
        for name, how in [("sys.exit()", lambda: sys.exit()), ("sys.exit(0)", lambda: sys.exit(0)),
                          ("sys.exit(None)", lambda: sys.exit(None)), ("sys.exit(False)", lambda: sys.exit(False)),
                          ("SystemExit()", lambda: (_ for _ in ()).throw(SystemExit()))]:
            with self.subTest(name):
                self.assertEqual(leave_with(how), "done")

    def test_a_non_zero_exit_is_an_error(self):
        for name, how in [("sys.exit(1)", lambda: sys.exit(1)), ("sys.exit(3)", lambda: sys.exit(3)),
                          ("sys.exit('message')", lambda: sys.exit("failed")),
                          ("sys.exit(True)", lambda: sys.exit(True))]:
            with self.subTest(name):
                self.assertEqual(leave_with(how), "error")

    def test_ctrl_c_is_an_interruption(self):
        def interrupt():
            raise KeyboardInterrupt

        self.assertEqual(leave_with(interrupt), "interrupted")

    def test_an_exception_is_an_error_and_the_end_of_the_block_is_done(self):
        def fail():
            raise RuntimeError("boom")

        self.assertEqual(leave_with(fail), "error")
        self.assertEqual(leave_with(lambda: None), "done")


if __name__ == "__main__":
    unittest.main()
