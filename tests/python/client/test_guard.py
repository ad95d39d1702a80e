import io
import json
import os
import socket
import time
import unittest
from unittest import mock

from gpudoc import Guard, protocol, report
from gpudoc import guard as guard_module
from client.fake_guard import FakeGuard, wait_until

ADVICE = {"v": 1, "type": "advice", "id": "a-1", "level": 1, "action": "shrink_batch", "factor": 0.75,
          "reason": {"metric": "gpu_temperature_celsius", "now": 83.0, "forecast": 88.4, "horizon_s": 5,
                     "threshold": 87, "threshold_source": "nvml_slowdown_temperature"},
          "deadline_unix": 1.5e9}


class GuardTest(unittest.TestCase):
    def setUp(self):
        self.server = FakeGuard()
        self.err = io.StringIO()
        self.guard = Guard(self.server.path, name="train", gpus=[0, "GPU-abc"], stderr=self.err)

    def tearDown(self):
        self.guard.close()
        self.server.close()

    def test_hello_names_the_job(self):
        hello = self.server.wait_for("hello")[0]
        self.assertEqual(hello["v"], 1)
        self.assertEqual(hello["pid"], os.getpid())
        self.assertEqual(hello["name"], "train")
        self.assertEqual(hello["gpus"], [0, "GPU-abc"])
        self.assertIn("shrink_batch", hello["capabilities"])
        self.assertTrue(self.guard.connected)

    def test_advice_is_queued_and_acknowledged(self):
        self.assertEqual(self.guard.poll(), [])
        self.server.send(ADVICE)
        self.assertTrue(wait_until(lambda: self.guard.queued))
        advice = self.guard.poll()
        self.assertEqual(len(advice), 1)
        self.assertEqual((advice[0].id, advice[0].level, advice[0].action, advice[0].factor),
                         ("a-1", 1, "shrink_batch", 0.75))
        self.assertEqual(advice[0].reason["forecast"], 88.4)
        self.assertEqual(self.guard.poll(), [])
        self.assertTrue(self.guard.ack(advice[0], batch_size=48, accumulation_steps=6))
        ack = self.server.wait_for("ack")[0]
        self.assertEqual((ack["id"], ack["status"], ack["batch_size"], ack["accumulation_steps"]),
                         ("a-1", "done", 48, 6))

    def test_unknown_fields_are_ignored(self):
        self.server.send({**ADVICE, "id": "a-2", "colour": "blue", "reason": {"new": [1, 2]}})
        self.assertTrue(wait_until(lambda: self.guard.queued))
        self.assertEqual(self.guard.poll()[0].id, "a-2")
        self.assertEqual(self.guard.garbage_lines, 0)

    def test_garbage_partial_and_long_lines(self):
        self.server.send_raw(b"not json\n[1,2]\n{\"v\":1}\n\xff\xfe\n")
        half = json.dumps({**ADVICE, "id": "a-3"}).encode()
        self.server.send_raw(half[:20])
        time.sleep(0.15)  # the reader sees the first half alone
        self.server.send_raw(half[20:] + b"\n")
        self.server.send_raw(b"{\"pad\": \"" + b"x" * (protocol.MAX_LINE_BYTES * 3) + b"\"}\n")
        self.server.send({**ADVICE, "id": "a-4"})
        self.assertTrue(wait_until(lambda: self.guard.queued >= 2))
        self.assertEqual([a.id for a in self.guard.poll()], ["a-3", "a-4"])
        self.assertEqual(self.guard.garbage_lines, 5)  # 4 bad lines and the long one
        errors = self.server.wait_for("error", 5)
        self.assertEqual([e["code"] for e in errors],
                         ["bad_json", "not_an_object", "missing_field", "bad_json", "line_too_long"])
        self.assertTrue(self.guard.connected)
        # Said once on stderr, escaped.
        self.assertEqual(self.err.getvalue().count("not a message"), 1)
        self.assertIn('"not json"', self.err.getvalue())

    def test_unknown_type_is_answered_with_an_error(self):
        self.server.send({"v": 1, "type": "dance", "with": "me"})
        self.server.send({"v": 2, "type": "advice", "id": "x", "action": "stop"})
        errors = self.server.wait_for("error", 2)
        self.assertEqual(errors[0]["code"], "unknown_type")
        self.assertEqual(errors[0]["ref"], "dance")
        self.assertEqual(errors[1]["code"], "unsupported_version")
        self.assertEqual(self.guard.poll(), [])
        self.assertTrue(self.guard.connected)

    def test_a_bad_error_is_never_answered_and_version_zero_is_refused(self):
        self.server.wait_for("hello")
        self.server.send({"type": "error", "code": "x"})          # no "v": skipped, not answered
        self.server.send({"v": 2, "type": "error", "code": "x"})  # a newer version: not answered either
        self.server.send({"v": 0, "type": "advice", "id": "a", "action": "stop"})
        errors = self.server.wait_for("error", 1)
        self.assertEqual([e["code"] for e in errors], ["unsupported_version"])
        time.sleep(0.2)
        self.assertEqual(len(self.server.messages("error")), 1)
        self.assertEqual(self.guard.poll(), [])

    def test_the_guard_dying_mid_run_leaves_a_noop(self):
        self.server.wait_for("hello")
        self.server.die()
        self.assertTrue(wait_until(lambda: not self.guard.connected))
        self.assertFalse(self.guard.report(step=1))
        self.assertEqual(self.guard.poll(), [])
        self.guard.close()
        self.assertIn("went away", self.err.getvalue())

    def test_a_full_socket_never_blocks_the_sender(self):
        # The fake guard stops reading: the kernel buffers fill, then the client's own buffer.
        self.server.wait_for("hello")
        self.server._stop.set()
        time.sleep(0.2)
        started = time.monotonic()
        sent = sum(self.guard.report(step=i, pad="y" * 4000) for i in range(2000))
        elapsed = time.monotonic() - started
        self.assertLess(elapsed, 30.0)  # hang guard: normally ~0.1 s; 10x+ margin
        self.assertLess(sent, 2000)
        self.assertEqual(self.guard.dropped_sends, 2000 - sent)
        self.assertTrue(self.guard.connected)

    def test_a_line_over_the_limit_is_not_sent(self):
        self.assertFalse(self.guard.report(blob="z" * protocol.MAX_LINE_BYTES))
        self.assertEqual(self.guard.dropped_sends, 1)
        self.assertTrue(self.guard.report(step=2))
        report_line = self.server.wait_for("report")[0]
        self.assertEqual(report_line["figures"], {"step": 2})
        self.assertEqual(report_line["dropped"], 1)

    def test_module_report_prints_and_sends(self):
        out = io.StringIO()
        report(stream=out, step=3, samples_per_s=float("nan"), loss=0.5)
        self.assertEqual(out.getvalue(), '::gpudoc {"step": 3, "samples_per_s": null, "loss": 0.5}\n')
        sent = self.server.wait_for("report")[0]
        self.assertEqual(sent["figures"], {"step": 3, "samples_per_s": None, "loss": 0.5})

    def test_close_says_bye(self):
        self.guard.close()
        bye = self.server.wait_for("bye")[0]
        self.assertEqual(bye["reason"], "done")
        self.assertFalse(self.guard.connected)
        self.assertIsNone(guard_module.active_guard())


class NoGuardTest(unittest.TestCase):
    def test_without_the_variable_every_method_is_a_noop_said_once(self):
        err = io.StringIO()
        with mock.patch.dict(os.environ, {}, clear=False):
            os.environ.pop(protocol.SOCKET_ENV, None)
            with Guard(stderr=err) as guard:
                self.assertFalse(guard.connected)
                self.assertEqual(guard.poll(), [])
                self.assertFalse(guard.report(step=1))
                self.assertFalse(guard.hello())
        self.assertEqual(err.getvalue().count("\n"), 1)
        self.assertIn("GPUDOC_GUARD_SOCKET is not set", err.getvalue())

    def test_a_missing_socket_is_a_noop_naming_the_path_escaped(self):
        err = io.StringIO()
        path = "/nonexistent/gpudoc\n\x1b[31m.sock"
        with mock.patch.dict(os.environ, {protocol.SOCKET_ENV: path}):
            guard = Guard(stderr=err)
        self.assertFalse(guard.connected)
        self.assertIn(json.dumps(path), err.getvalue())
        self.assertNotIn("\x1b", err.getvalue())
        self.assertEqual(err.getvalue().count("\n"), 1)

    def test_a_plain_file_is_not_taken_for_a_guard(self):
        server = FakeGuard()
        try:
            path = os.path.join(server.folder, "plain")
            open(path, "w").close()
            guard = Guard(path, stderr=io.StringIO())
            self.assertFalse(guard.connected)
        finally:
            server.close()


class SignalTest(unittest.TestCase):
    def test_opted_in_signals_arrive_as_advice(self):
        import signal
        old = {s: signal.getsignal(s) for s in (signal.SIGUSR1, signal.SIGTERM)}
        try:
            guard = Guard("", signals=True, stderr=io.StringIO())
            os.kill(os.getpid(), signal.SIGUSR1)
            os.kill(os.getpid(), signal.SIGTERM)
            self.assertTrue(wait_until(lambda: guard.queued == 2))
            got = guard.poll()
            self.assertEqual([(a.action, a.source, a.id) for a in got],
                             [("checkpoint_now", "signal", None), ("stop", "signal", None)])
            self.assertFalse(guard.ack(got[0]))
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)


if __name__ == "__main__":
    unittest.main()
