"""The client against a hostile guard: lines that break the parser or the protocol, advice that
breaks the protocol's table, floods while the loop polls rarely. After each, the reader carries
on (the next advice, a level-3 stop included, is delivered), nothing raises into the loop, and
memory stays bounded."""
import gc
import io
import json
import tracemalloc
import unittest
from unittest import mock

from gpudoc import Advice, BatchSizeController, Guard
from gpudoc import guard as guard_module
from client.fake_guard import FakeGuard, wait_until

QUEUE = getattr(guard_module, "MAX_QUEUED_ADVICE", 256)
KEPT_ERRORS = getattr(guard_module, "MAX_KEPT_ERRORS", 64)


def advice(ident, action="shrink_batch", level=1, **extra):
    body = {"v": 1, "type": "advice", "id": ident, "level": level, "action": action,
            "gpu": "GPU-5c7c9a2e", "issued_unix": 1764500000.2, "deadline_unix": 1764500010.2,
            "reason": {"metric": "gpu_temperature_celsius", "now": 83.0, "forecast": 88.4, "horizon_s": 5.0,
                       "forecast_error": 0.6, "threshold": 87.0, "threshold_source": "nvml_slowdown_temperature",
                       "limits": {"slowdown_celsius": 87, "shutdown_celsius": 92, "max_operating_celsius": 85}},
            "message": "GPU 0 is forecast at 88.4 \u00b0C in 5 s, over its slowdown temperature 87 \u00b0C"}
    if action == "shrink_batch":
        body["factor"] = 0.75
    body.update(extra)
    return body


def line(body):
    return json.dumps(body).encode() + b"\n"


def with_raw_factor(ident, raw):
    """A shrink_batch advice whose factor is the raw JSON text ``raw`` (NaN, 1e999, 401 digits)."""
    return line(advice(ident, factor="@@")).replace(b'"@@"', raw)


STOP = advice("stop-1", "stop", 3)
# An empty line after a burst: once the reader counts it, every line before it has been handled
# (lines_received counts a line when its handling starts).
END = b"\n"


class Hostile(unittest.TestCase):
    def setUp(self):
        self.server = FakeGuard()
        self.err = io.StringIO()
        self.guard = Guard(self.server.path, name="train", gpus=[0], stderr=self.err)
        self.server.wait_for("hello")

    def tearDown(self):
        self.guard.close()
        self.server.close()

    def collect(self, ids, timeout=10.0):
        """Poll as a loop does until every id of ``ids`` came (hang guard: ``timeout``, normally
        well under 0.1 s); every advice polled, in order."""
        got = []
        wait_until(lambda: got.extend(self.guard.poll()) or set(ids) <= {a.id for a in got}, timeout)
        return got

    def assert_carries_on(self, after):
        """The guard's next advice and a level-3 stop still arrive, and the job is still connected."""
        self.server.send(advice(after))
        self.server.send(STOP)
        got = self.collect([after, "stop-1"])
        self.assertEqual([a.id for a in got], [after, "stop-1"])
        self.assertEqual((got[1].action, got[1].level), ("stop", 3))
        self.assertTrue(self.guard.connected)
        return got


class LinesThatBreakTheParser(Hostile):
    def test_60_kb_of_brackets(self):
        self.server.send_raw(b"[" * 60000 + b"\n")
        self.assert_carries_on("after-brackets")
        self.assertEqual(self.guard.lines_rejected, 1)
        self.assertEqual([e["code"] for e in self.server.wait_for("error")], ["bad_json"])

    def test_nesting_past_32_levels_is_refused_and_32_is_not(self):
        def nested(depth):  # a field whose value nests ``depth`` levels: the advice, one more
            return b'{"a":' * (depth - 1) + b"0" + b"}" * (depth - 1)

        self.server.send_raw(line(advice("deep-33", "checkpoint_now", 2, x="@@")).replace(b'"@@"', nested(32)))
        self.server.send_raw(line(advice("deep-32", "checkpoint_now", 2, x="@@")).replace(b'"@@"', nested(31)))
        self.server.send(STOP)
        self.assertEqual([a.id for a in self.collect(["deep-32", "stop-1"])], ["deep-32", "stop-1"])
        self.assertEqual(self.guard.lines_rejected, 1)
        self.assertEqual([e["code"] for e in self.server.wait_for("error")], ["bad_json"])

    def test_a_401_digit_factor(self):
        self.server.send_raw(with_raw_factor("huge", b"1" * 401))
        self.assert_carries_on("after-huge")
        self.assertEqual(self.guard.lines_rejected, 1)
        self.assertEqual(self.guard.advice_rejected, 1)

    def test_a_failure_while_handling_one_line_is_that_line_alone(self):
        real = self.guard._on_advice
        failures = iter([MemoryError(), OverflowError("x"), RecursionError()])

        def flaky(message):
            error = next(failures, None)
            if error is not None:
                raise error
            real(message)

        with mock.patch.object(self.guard, "_on_advice", flaky):
            for n in range(3):
                self.server.send(advice(f"fails-{n}"))
            self.assert_carries_on("after-failures")
        self.assertEqual(self.guard.lines_rejected, 3)

    def test_a_reader_that_must_stop_disconnects_and_says_so_once(self):
        with mock.patch.object(self.guard._splitter, "feed", side_effect=RuntimeError("broken")):
            self.server.send(advice("never"))
            self.assertTrue(wait_until(lambda: not self.guard.connected))
        self.assertEqual(self.err.getvalue().count("reader stopped"), 1)
        self.assertEqual(self.guard.poll(), [])
        self.assertFalse(self.guard.report(step=1))  # a no-op now, as when the guard goes away


class AdviceThatBreaksTheTable(Hostile):
    BAD_FACTORS = (b"1e999", b"-1e999", b"NaN", b"Infinity", b"2", b"1", b"0", b"-0.5", b"null", b'"0.5"',
                   b"true", b"[0.5]")
    NOT_JSON = (b"NaN", b"Infinity")  # JSON has neither: the line is bad_json, its id unknown

    def test_a_bad_factor_is_never_delivered_and_the_next_advice_is(self):
        for n, raw in enumerate(self.BAD_FACTORS):
            self.server.send_raw(with_raw_factor(f"bad-{n}", raw))
            self.server.send(advice(f"good-{n}"))
        self.server.send(STOP)
        want = [f"good-{n}" for n in range(len(self.BAD_FACTORS))] + ["stop-1"]
        got = self.collect(want)
        self.assertEqual([a.id for a in got], want)
        self.assertEqual(self.guard.lines_rejected, len(self.BAD_FACTORS))
        refused = [f"bad-{n}" for n, raw in enumerate(self.BAD_FACTORS) if raw not in self.NOT_JSON]
        self.assertEqual(self.guard.advice_rejected, len(refused))
        # Answered at once: an ack (failed, with the reason) and a bad_advice error naming the id.
        acks = self.server.wait_for("ack", len(refused))
        self.assertEqual(sorted(a["id"] for a in acks), sorted(refused))
        self.assertEqual({a["status"] for a in acks}, {"failed"})
        self.assertIn("factor", acks[0]["error"])
        errors = self.server.wait_for("error", len(self.BAD_FACTORS))
        self.assertEqual(sorted(e.get("ref", "") for e in errors if e["code"] == "bad_advice"), sorted(refused))
        self.assertEqual(sum(e["code"] == "bad_json" for e in errors), len(self.NOT_JSON))

    def test_the_documented_loop_never_raises(self):
        # batch.py's example: ctl.shrink(advice.factor), then the ack, for whatever poll() gives.
        ctl = BatchSizeController(256, micro_batch=256)
        for n, raw in enumerate(self.BAD_FACTORS + (b"1" * 401, b"1e-400")):
            self.server.send_raw(with_raw_factor(f"bad-{n}", raw))
        self.server.send(STOP)
        got = self.collect(["stop-1"])
        for a in got:
            if a.action == "shrink_batch":
                ctl.shrink(a.factor)
            self.guard.ack(a, batch_size=ctl.micro_batch, accumulation_steps=ctl.accumulation_steps)
        self.assertEqual([a.id for a in got], ["stop-1"])
        self.assertEqual(ctl.micro_batch, 256)

    def test_fields_of_the_wrong_type_or_size_are_refused_whole(self):
        bad = [advice("b-level", level=7), advice("b-level-text", level="1"), advice("b-level-bool", level=True),
               advice("b-no-level", level=None), advice("b-dance", "dance"), advice("i" * 65),
               advice("b-message", message="m" * 2000), advice("b-reason", reason=[1, 2]),
               advice("b-deadline", deadline_unix="soon"), advice("b-values", pad=list(range(300))),
               advice("b-text", pad="p" * 9000), {**advice("x"), "id": ["x"]}]
        for body in bad:
            self.server.send(body)
        self.assert_carries_on("after-bad-fields")
        self.assertEqual(self.guard.advice_rejected, len(bad))
        acks = {a["id"]: a["status"] for a in self.server.wait_for("ack", len(bad) - 2)}
        self.assertEqual(acks["b-dance"], "unsupported")  # an action this job did not declare
        self.assertEqual(acks["b-level"], "failed")
        self.assertNotIn("i" * 65, acks)  # no usable id: an error only

    def test_an_action_the_job_did_not_declare_is_refused(self):
        self.guard.close()
        self.server.close()
        self.server = FakeGuard()
        self.guard = Guard(self.server.path, capabilities=["checkpoint_now", "stop"], stderr=self.err)
        self.server.send(advice("undeclared"))
        self.server.send(advice("ok", "checkpoint_now", 2))
        self.assertEqual([a.id for a in self.collect(["ok"])], ["ok"])
        self.assertEqual(self.server.wait_for("ack")[0]["status"], "unsupported")

    def test_from_message_refuses_rather_than_coerces(self):
        with self.assertRaises(ValueError):
            Advice.from_message(advice("x", factor=float("inf")))
        with self.assertRaises(ValueError):
            Advice.from_message(advice("x", level="2"))
        good = Advice.from_message(advice("x", factor=1e-300))
        self.assertEqual((good.id, good.level, good.factor), ("x", 1, 1e-300))


class NothingRaisesIntoTheLoop(Hostile):
    def test_ack_and_report_with_values_json_cannot_carry(self):
        deep = []
        for _ in range(5000):
            deep = [deep]
        circular = {}
        circular["me"] = circular
        self.server.send(advice("a-1"))
        got = self.collect(["a-1"])
        self.assertFalse(self.guard.ack(got[0], nested=deep))
        self.assertFalse(self.guard.report(nested=deep))
        self.assertFalse(self.guard.report(me=circular, what=object()))
        self.assertEqual(self.guard.dropped_sends, 3)
        self.assertTrue(self.guard.ack(got[0], batch_size=3))


class Floods(Hostile):
    def test_the_queue_keeps_its_bound_and_the_most_severe(self):
        count = 2000
        burst = bytearray()
        for n in range(count):
            if n == 10:
                burst += line(STOP)
            elif n == 500:
                burst += line(advice("checkpoint", "checkpoint_now", 2))
            else:
                burst += line(advice(f"f-{n}"))
        self.server.send_raw(bytes(burst) + END)
        self.assertTrue(wait_until(lambda: self.guard.lines_received > count, 60))  # hang guard
        got = self.guard.poll()
        self.assertEqual(len(got), QUEUE)
        ids = [a.id for a in got]
        self.assertIn("stop-1", ids)
        self.assertIn("checkpoint", ids)
        self.assertEqual(ids[-1], f"f-{count - 1}")  # the newest of the least severe kept
        self.assertEqual(self.guard.advice_dropped, count - QUEUE)
        # The guard hears of it once between two polls, and in every report and the bye.
        told = self.server.wait_for("error")
        self.assertEqual([e["code"] for e in told], ["advice_dropped"])
        self.assertTrue(self.guard.report(step=1))
        self.assertEqual(self.server.wait_for("report")[0]["advice_dropped"], count - QUEUE)
        self.guard.close()
        self.assertEqual(self.server.wait_for("bye")[0]["advice_dropped"], count - QUEUE)

    def test_critical_advice_goes_only_when_the_queue_holds_nothing_else(self):
        quiet = Guard("", stderr=io.StringIO())
        for n in range(QUEUE - 1):
            quiet._queue(Advice.from_message(advice(f"s-{n}", "stop", 3)))
        quiet._queue(Advice.from_message(advice("shrink")))
        quiet._queue(Advice.from_message(advice("stop-last", "stop", 3)))  # the shrink goes
        quiet._queue(Advice.from_message(advice("pause", "pause_noncritical", 2)))  # goes: all are stops
        quiet._queue(Advice.from_message(advice("stop-over", "stop", 3)))  # goes: the loop has stops enough
        got = quiet.poll()
        self.assertEqual(len(got), QUEUE)
        self.assertEqual({a.action for a in got}, {"stop"})
        self.assertEqual(got[-1].id, "stop-last")
        self.assertEqual(quiet.advice_dropped, 3)

    def test_a_flood_of_advice_with_rare_polls_stays_in_bounded_memory(self):
        count = 10000
        burst = b"".join(line(advice(f"f-{n}")) for n in range(count))
        gc.collect()
        tracemalloc.start()
        try:
            self.server.send_raw(burst[:len(burst) // 2])
            self.assertTrue(wait_until(lambda: self.guard.lines_received >= count // 2 - 1, 60))  # hang guard
            first = self.guard.poll()  # one rare poll in the middle
            self.server.send_raw(burst[len(burst) // 2:] + END)
            self.assertTrue(wait_until(lambda: self.guard.lines_received > count, 60))  # hang guard
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        second = self.guard.poll()
        self.assertLessEqual(len(first), QUEUE)
        self.assertLessEqual(len(second), QUEUE)
        self.assertEqual(len(first) + len(second) + self.guard.advice_dropped, count)
        # 10 000 queued advices would hold about 30 MB; the bound keeps 256 (well under 2 MB).
        self.assertLess(peak, 8 << 20)

    def test_a_flood_of_error_lines_keeps_the_newest(self):
        count = 20000
        burst = b"".join(line({"v": 1, "type": "error", "code": "x", "message": f"m{n}", "ref": f"r{n}"})
                         for n in range(count))
        gc.collect()
        tracemalloc.start()
        try:
            self.server.send_raw(burst + END)
            self.assertTrue(wait_until(lambda: self.guard.lines_received > count, 60))  # hang guard
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        self.assertEqual(len(self.guard.errors_received), KEPT_ERRORS)
        self.assertEqual(self.guard.errors_received[-1]["ref"], f"r{count - 1}")
        self.assertEqual(self.guard.errors_dropped, count - KEPT_ERRORS)
        self.assertLess(peak, 8 << 20)
        self.assert_carries_on("after-errors")

    def test_a_100_mb_line_is_read_in_bounded_memory(self):
        # Passes before the bounds on the queues too: the line splitter was bounded already.
        chunk = b"x" * (1 << 20)
        gc.collect()
        tracemalloc.start()
        try:
            self.server.send_raw(b'{"v":1,"type":"advice","id":"long","pad":"')
            for _ in range(100):
                self.server.send_raw(chunk)
            self.server.send_raw(b'"}\n')
            self.server.send(advice("after-long"))
            got = self.collect(["after-long"], timeout=60)  # hang guard: normally about 1 s
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        self.assertEqual([a.id for a in got], ["after-long"])
        self.assertEqual(self.guard.garbage_lines, 1)  # the older name of lines_rejected
        self.assertLess(peak, 4 << 20)
        self.assertEqual([e["code"] for e in self.server.wait_for("error")], ["line_too_long"])


if __name__ == "__main__":
    unittest.main()
