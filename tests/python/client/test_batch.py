import random
import unittest

from gpudoc import BatchSizeController, is_oom_error


def curve(size):
    """Samples/s of a synthetic job: rises with the batch, peaks at 160, falls past it."""
    rising = 10000.0 * size / (size + 48)
    return rising if size <= 160 else rising * (160 / size) ** 0.5


class OutOfMemoryError(RuntimeError):
    """Named as torch names it; the controller must recognize it without torch."""


def drive(ctl, steps, throughput=curve, noise=0.0, oom_at=None, seed=7):
    """Runs a synthetic loop; returns the change per step (None where none)."""
    rng = random.Random(seed)
    changes = []
    for _ in range(steps):
        size = ctl.micro_batch
        if oom_at is not None and size >= oom_at:
            changes.append(ctl.on_oom())
            continue
        speed = throughput(size) * (1 + rng.uniform(-noise, noise))
        if rng.random() < 0.05:
            speed *= 0.3  # a slow step: a checkpoint, a data-loader hiccup
        changes.append(ctl.step(size, size / speed))
        assert ctl.micro_batch * ctl.accumulation_steps >= ctl.target_batch
    return changes


class SearchTest(unittest.TestCase):
    def best(self, limit=512, oom_at=None):
        sizes = [s for s in range(1, limit + 1) if oom_at is None or s < oom_at]
        return max(curve(s) for s in sizes)

    def test_reaches_within_5_percent_of_the_best_despite_noise_and_outliers(self):
        ctl = BatchSizeController(512, micro_batch=4, window=10, warmup=2)
        drive(ctl, 400, noise=0.03)
        self.assertTrue(ctl.settled)
        self.assertGreaterEqual(curve(ctl.micro_batch), 0.95 * self.best())
        self.assertGreaterEqual(ctl.effective_batch, 512)

    def test_is_deterministic(self):
        a = BatchSizeController(512, micro_batch=4)
        b = BatchSizeController(512, micro_batch=4)
        self.assertEqual(drive(a, 300), drive(b, 300))
        self.assertEqual(a.history, b.history)

    def test_never_changes_once_settled(self):
        ctl = BatchSizeController(512, micro_batch=4, hold_steps=50)
        changes = drive(ctl, 3000, noise=0.15)
        settled_at = max(i for i, c in enumerate(changes) if c is not None)
        self.assertLess(settled_at, 300)
        self.assertTrue(ctl.settled)
        self.assertEqual(ctl.steps, 3000)

    def test_a_flat_curve_settles_on_the_first_size(self):
        ctl = BatchSizeController(256, micro_batch=32)
        drive(ctl, 200, throughput=lambda s: 5000.0)
        self.assertEqual(ctl.micro_batch, 32)
        self.assertTrue(ctl.settled)

    def test_the_target_bounds_the_micro_batch(self):
        ctl = BatchSizeController(64, micro_batch=8)
        drive(ctl, 200)
        self.assertEqual(ctl.micro_batch, 64)
        self.assertEqual(ctl.accumulation_steps, 1)

    def test_memory_headroom_stops_the_growth(self):
        ctl = BatchSizeController(1024, micro_batch=16, memory_headroom=0.2)
        total = 80e9
        for _ in range(400):
            size = ctl.micro_batch
            used = 10e9 + size * 0.5e9  # 10 GB fixed, 0.5 GB a sample
            self.assertLessEqual(used, 0.8 * total + 1, f"size {size} leaves under 20 % free")
            ctl.step(size, size / (100.0 * size), used, total)
        self.assertTrue(ctl.settled)
        self.assertEqual(ctl.micro_batch, 108)  # (0.8 * 80 - 10) / 0.5, the largest that fits

    def test_micro_batches_split_the_batch_exactly(self):
        ctl = BatchSizeController(256, micro_batch=96)
        self.assertEqual(ctl.accumulation_steps, 3)
        self.assertEqual(ctl.micro_batch_sizes(), [96, 96, 64])
        self.assertEqual(sum(ctl.micro_batch_sizes(250)), 250)


class OutOfMemoryTest(unittest.TestCase):
    def test_oom_during_the_search_backs_off_and_keeps_the_effective_batch(self):
        ctl = BatchSizeController(512, micro_batch=4)
        changes = drive(ctl, 400, oom_at=100)
        self.assertTrue(ctl.settled)
        self.assertLess(ctl.micro_batch, 100)
        self.assertEqual(ctl.ceiling, 100)
        self.assertGreaterEqual(curve(ctl.micro_batch), 0.95 * max(curve(s) for s in range(1, 100)))
        self.assertTrue(any(c is not None and c.reason == "oom" for c in changes))
        self.assertGreaterEqual(ctl.effective_batch, 512)

    def test_oom_at_the_first_size_shrinks_by_the_factor(self):
        ctl = BatchSizeController(256, micro_batch=64, oom_factor=0.5)
        change = ctl.on_oom()
        self.assertEqual((change.old, change.new, change.accumulation_steps), (64, 32, 8))

    def test_oom_at_the_minimum_cannot_shrink(self):
        ctl = BatchSizeController(256, micro_batch=1)
        self.assertIsNone(ctl.on_oom())

    def test_run_step_retries_smaller_and_splits_the_batch(self):
        ctl = BatchSizeController(64, micro_batch=64, window=1, warmup=0)
        calls, zeroed = [], []

        def fn(part, weight):
            if len(part) > 16:
                raise OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
            calls.append((len(part), weight))
            return sum(part)

        results = ctl.run_step(fn, list(range(64)), zero_grad=lambda: zeroed.append(1), measure=False)
        self.assertEqual(ctl.micro_batch, 16)
        self.assertEqual(ctl.accumulation_steps, 4)
        self.assertEqual(len(zeroed), 2)  # 64 -> 32 -> 16
        self.assertEqual(calls, [(16, 0.25)] * 4)
        self.assertEqual(sum(results), sum(range(64)))
        self.assertEqual(ctl.ceiling, 32)

    def test_run_step_splits_tuples_and_dicts(self):
        ctl = BatchSizeController(10, micro_batch=4)
        seen = []
        ctl.run_step(lambda part, w: seen.append((part[0], part[1], w)), (list("abcdefghij"), list(range(10))),
                     measure=False)
        self.assertEqual([len(p[0]) for p in seen], [4, 4, 2])
        self.assertEqual(seen[2][1], [8, 9])
        seen.clear()
        ctl.run_step(lambda part, w: seen.append(part["x"]), {"x": list(range(10))}, measure=False)
        self.assertEqual(seen, [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]])

    def test_run_step_lets_other_errors_through(self):
        ctl = BatchSizeController(8, micro_batch=8)
        with self.assertRaises(ValueError):
            ctl.run_step(lambda part, w: int("x"), list(range(8)))
        self.assertEqual(ctl.micro_batch, 8)

    def test_run_step_reraises_oom_at_the_minimum(self):
        ctl = BatchSizeController(8, micro_batch=1)

        def fn(part, weight):
            raise RuntimeError("CUDA error: out of memory")

        with self.assertRaises(RuntimeError):
            ctl.run_step(fn, list(range(8)))

    def test_recognizes_oom_errors_without_torch(self):
        self.assertTrue(is_oom_error(OutOfMemoryError("x")))
        self.assertTrue(is_oom_error(RuntimeError("CUDA out of memory. Tried to allocate 20 MiB")))
        self.assertTrue(is_oom_error(RuntimeError("CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate")))
        self.assertFalse(is_oom_error(RuntimeError("shape mismatch")))
        self.assertFalse(is_oom_error(ValueError("out of memory")))


class AdviceTest(unittest.TestCase):
    def test_shrink_advice_keeps_the_effective_batch_and_caps_the_size(self):
        ctl = BatchSizeController(512, micro_batch=4)
        drive(ctl, 400)
        settled = ctl.micro_batch
        change = ctl.shrink(0.75)
        self.assertEqual(change.reason, "advice")
        self.assertEqual(ctl.micro_batch, int(settled * 0.75))
        self.assertGreaterEqual(ctl.effective_batch, 512)
        drive(ctl, 500)  # no regrowth on its own
        self.assertEqual(ctl.micro_batch, int(settled * 0.75))

    def test_release_waits_for_the_hold(self):
        ctl = BatchSizeController(256, micro_batch=128, hold_steps=100)
        ctl.shrink(0.5)
        self.assertEqual(ctl.micro_batch, 64)
        drive(ctl, 10)
        self.assertIsNone(ctl.release())  # only 10 steps since the shrink
        changes = drive(ctl, 200)
        moved = [i for i, c in enumerate(changes) if c is not None]
        self.assertEqual(len(moved), 1)
        self.assertEqual(moved[0], 89)  # the 100th step after the shrink
        self.assertEqual(ctl.micro_batch, 128)

    def test_shrink_rejects_factors_outside_0_1(self):
        ctl = BatchSizeController(64)
        for factor in (0, 1, 1.5, -0.2):
            with self.assertRaises(ValueError):
                ctl.shrink(factor)

    def test_shrink_refuses_what_is_not_a_finite_fraction_and_changes_nothing(self):
        ctl = BatchSizeController(256, micro_batch=128)
        for factor in (float("nan"), float("inf"), float("-inf"), None, "0.5", b"0.5", True, 2, 10 ** 400,
                       [0.5], {}):
            with self.assertRaises(ValueError, msg=repr(factor)):
                ctl.shrink(factor)
        self.assertEqual((ctl.micro_batch, ctl.cap, ctl.history), (128, None, []))
        self.assertEqual(ctl.shrink(0.5).new, 64)


if __name__ == "__main__":
    unittest.main()
