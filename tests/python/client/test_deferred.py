"""report(loss=tensor) never makes the host wait for the GPU: the tensor is kept (detached), its
copy to the host queued, and its value reported later, once its CUDA event has completed.

A fake CUDA tensor and a fake torch module count what would make the host wait (.item(),
.cpu(), float(), a blocking copy, event.synchronize()); a real CPU tensor (python3-torch, when
this interpreter has it) is reported at once."""
import io
import json
import os
import sys
import types
import unittest
from unittest import mock

from gpudoc import Guard, deferred, metrics, report
from gpudoc.rank import RANK_VARIABLES
from client.fake_guard import FakeGuard

try:
    import torch  # noqa: F401 - only for the CPU-tensor test
except ImportError:
    torch = None


class Device:
    def __init__(self, kind, index=0):
        self.type, self.index = kind, index


class FakeTorch(types.ModuleType):
    """torch.cuda.Event and current_stream, with a switch for "the GPU has got this far"."""

    def __init__(self):
        super().__init__("torch")
        self.done = False
        self.synchronized = 0
        self.recorded = []
        owner = self

        class Event:
            def record(self, stream=None):
                owner.recorded.append(stream)

            def query(self):
                return owner.done

            def synchronize(self):
                owner.synchronized += 1

        self.cuda = types.SimpleNamespace(Event=Event, current_stream=lambda device=None: ("stream", device.index))


class HostCopy:
    def __init__(self, value):
        self.value = value

    def item(self):  # a read of host memory: never waits for the GPU
        return self.value


class FakeCudaTensor:
    """A 0-d CUDA tensor that counts every call that would wait for the GPU."""

    is_cuda = True

    def __init__(self, value):
        self.value = value
        self.device = Device("cuda", 1)
        self.waits = []  # what made the host wait
        self.copies = []

    def detach(self):
        return self

    def item(self):
        self.waits.append("item")
        return self.value

    def cpu(self):
        self.waits.append("cpu")
        return HostCopy(self.value)

    def tolist(self):
        self.waits.append("tolist")
        return self.value

    def __float__(self):
        self.waits.append("float")
        return float(self.value)

    def to(self, device, non_blocking=False):
        if not non_blocking:
            self.waits.append("blocking copy")
        self.copies.append(device)
        return HostCopy(self.value)


def lines(out):
    return [json.loads(line[len("::gpudoc "):]) for line in out.getvalue().splitlines()]


class DeferredReportTest(unittest.TestCase):
    def setUp(self):
        self.torch = FakeTorch()
        env = {k: v for k, v in os.environ.items() if k not in RANK_VARIABLES}
        for patch in (mock.patch.dict(sys.modules, {"torch": self.torch}),
                      mock.patch.dict(os.environ, env, clear=True),
                      mock.patch.object(metrics, "_pending", deferred.Deferred()),
                      mock.patch.object(metrics, "_atexit_registered", False),
                      mock.patch("atexit.register")):
            started = patch.start()
            self.addCleanup(patch.stop)
        self.atexit = started

    def test_a_gpu_tensor_is_read_at_a_later_report_without_a_wait(self):
        out = io.StringIO()
        first, second = FakeCudaTensor(2.5), FakeCudaTensor(2.25)
        report(stream=out, step=1, samples=32, samples_per_s=100.0, loss=first)
        report(stream=out, step=2, samples=32, samples_per_s=101.0, loss=second)  # the GPU is not there yet
        self.assertEqual(lines(out), [{"step": 1, "samples": 32, "samples_per_s": 100.0},
                                      {"step": 2, "samples": 32, "samples_per_s": 101.0}])
        self.torch.done = True  # the GPU has computed both
        report(stream=out, step=3, samples_per_s=102.0)
        # A late line repeats the step, never the work done (samples: counted once, docs/cost.md).
        self.assertEqual(lines(out)[2:], [{"step": 1, "loss": 2.5}, {"step": 2, "loss": 2.25},
                                          {"step": 3, "samples_per_s": 102.0}])
        for t in (first, second):
            self.assertEqual(t.waits, [])
            self.assertEqual(t.copies, ["cpu"])  # queued, non-blocking
        self.assertEqual(self.torch.synchronized, 0)
        self.assertEqual(self.torch.recorded, [("stream", 1), ("stream", 1)])  # on the tensor's device
        self.atexit.assert_called_once_with(metrics.flush)

    def test_plain_numbers_stay_immediate(self):
        out = io.StringIO()
        report(stream=out, step=1, loss=1.5, tokens=4096, ok=True, name="x")
        self.assertEqual(lines(out), [{"step": 1, "loss": 1.5, "tokens": 4096, "ok": True, "name": "x"}])
        self.assertEqual(len(metrics._pending), 0)
        self.atexit.assert_not_called()

    def test_past_the_bound_only_the_oldest_is_waited_for(self):
        out = io.StringIO()
        tensors = [FakeCudaTensor(float(n)) for n in range(deferred.MAX_PENDING + 1)]
        for n, t in enumerate(tensors):
            report(stream=out, step=n, loss=t)
        self.assertEqual(self.torch.synchronized, 1)
        self.assertEqual(metrics._pending.waited, 1)
        self.assertEqual(lines(out)[-2:], [{"step": 0, "loss": 0.0}, {"step": deferred.MAX_PENDING}])
        self.assertTrue(all(t.waits == [] for t in tensors))

    def test_flush_writes_what_is_left(self):
        out = io.StringIO()
        report(stream=out, epoch=2, step=7, loss=FakeCudaTensor(0.5), acc=FakeCudaTensor(0.75))
        self.assertEqual(metrics.flush(stream=out, wait=False), 0)  # not ready, not waited for
        self.assertEqual(metrics.flush(stream=out), 1)
        self.assertEqual(lines(out), [{"epoch": 2, "step": 7}, {"epoch": 2, "step": 7, "loss": 0.5, "acc": 0.75}])
        self.assertEqual(self.torch.synchronized, 2)  # one event per tensor

    def test_the_guard_gets_the_late_figures_before_its_bye(self):
        server = FakeGuard()
        try:
            with mock.patch.dict(os.environ, {"RANK": "2"}), mock.patch("sys.stdout", new_callable=io.StringIO) as out:
                with Guard(server.path, name="train") as guard:
                    report(step=1, loss=FakeCudaTensor(3.0))
                    guard.report(step=1, grad_norm=FakeCudaTensor(0.1))
            figures = [r["figures"] for r in server.wait_for("report", 4)]
            self.assertEqual(figures, [{"rank": 2, "step": 1}, {"rank": 2, "step": 1},
                                       {"rank": 2, "step": 1, "loss": 3.0}, {"rank": 2, "step": 1, "grad_norm": 0.1}])
            self.assertEqual(server.received[-1]["type"], "bye")
            self.assertEqual(lines(out), [{"rank": 2, "step": 1}, {"rank": 2, "step": 1, "loss": 3.0}])
        finally:
            server.close()

    def test_without_an_event_it_is_read_at_the_next_report(self):
        out = io.StringIO()
        with mock.patch.dict(sys.modules, {"torch": None}):  # no torch module to make an event
            t = FakeCudaTensor(1.0)
            report(stream=out, step=1, loss=t)
            self.assertEqual(t.waits, [])
            report(stream=out, step=2)
        self.assertEqual(lines(out), [{"step": 1}, {"step": 1, "loss": 1.0}, {"step": 2}])


@unittest.skipIf(torch is None, "no torch in this interpreter (Debian: python3-torch)")
class RealTensorTest(unittest.TestCase):
    def test_a_cpu_tensor_is_reported_at_once(self):
        out = io.StringIO()
        with mock.patch.object(metrics, "_pending", deferred.Deferred()):
            loss = (torch.ones(3, requires_grad=True) * 0.5).sum()
            report(stream=out, step=1, loss=loss)
        self.assertEqual(lines(out)[0]["loss"], 1.5)
        self.assertFalse(deferred.is_device_tensor(loss))


if __name__ == "__main__":
    unittest.main()
