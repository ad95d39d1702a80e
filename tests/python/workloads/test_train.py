"""workloads/guard_train.py on the CPU: advice over the guard channel (a fake guard server), the
opted-in signals, resume bit for bit, out of memory at a fixed batch and under the search.
Needs torch (the interpreter running the tests starts the job)."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "workloads"))
sys.path.insert(0, os.path.join(REPO, "tests", "python"))

from client.fake_guard import FakeGuard, wait_until  # noqa: E402  (tests/python/client)

TRAIN = os.path.join(REPO, "workloads", "guard_train.py")
TINY = ["--device", "cpu", "--width", "32", "--layers", "1", "--heads", "2", "--context", "16",
        "--vocab", "128", "--workers", "1", "--eval-every-s", "0.5", "--log-every-s", "0.2"]


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def has_checkpoint_digest(path, step):
    """Whether the job's digest file holds the checkpoint of `step` (a line being written: not yet)."""
    try:
        return any(r["event"] == "checkpoint" and r["step"] == step for r in read_jsonl(path))
    except (OSError, ValueError):
        return False


def gpudoc_lines(text):
    return [json.loads(line[len("::gpudoc "):]) for line in text.splitlines() if line.startswith("::gpudoc ")]


class Job:
    """guard_train.py started in the background, its stdout read to a file."""

    def __init__(self, folder, *args, socket_path=None):
        self.out_path = os.path.join(folder, "out.log")
        env = {k: v for k, v in os.environ.items() if k != "GPUDOC_GUARD_SOCKET"}
        if socket_path:
            env["GPUDOC_GUARD_SOCKET"] = socket_path
        self.out = open(self.out_path, "w")
        self.proc = subprocess.Popen([sys.executable, TRAIN, *TINY, *args], stdout=self.out,
                                     stderr=subprocess.PIPE, env=env, text=True)

    def lines(self):
        with open(self.out_path) as f:
            return gpudoc_lines(f.read())

    def wait_for(self, predicate, timeout=60):
        return wait_until(lambda: any(predicate(r) for r in self.lines()), timeout)

    def finish(self, timeout=60):
        try:
            _, err = self.proc.communicate(timeout=timeout)
        finally:
            self.out.close()
        return self.proc.returncode, err


class AdviceTest(unittest.TestCase):
    """Every action of the protocol, acted on and acknowledged with what was done."""

    def test_every_advice_is_acted_on_and_acked(self):
        with tempfile.TemporaryDirectory() as folder:
            server = FakeGuard()
            digest = os.path.join(folder, "digest.jsonl")
            job = Job(folder, "--duration", "120", "--controller", "fixed", "--batch-size", "4",
                      "--effective-batch", "8", "--ckpt-dir", folder, "--state-digest", digest,
                      socket_path=server.path)
            try:
                hello = server.wait_for("hello", timeout=60)[0]
                self.assertEqual(hello["gpus"], [0])
                self.assertEqual(hello["signals"], ["checkpoint_now", "stop"])
                self.assertIn("shrink_batch", hello["capabilities"])
                self.assertTrue(job.wait_for(lambda r: "samples_per_s" in r))

                def advise(n, action, **extra):
                    server.send({"v": 1, "type": "advice", "id": f"t-{n}", "level": 1, "action": action, **extra})
                    return server.wait_for("ack", n, timeout=30)[n - 1]

                ack = advise(1, "shrink_batch", factor=0.75)
                self.assertEqual((ack["id"], ack["status"]), ("t-1", "done"))
                self.assertEqual((ack["previous_batch_size"], ack["batch_size"]), (4, 3))
                self.assertEqual((ack["previous_accumulation_steps"], ack["accumulation_steps"]), (2, 3))
                self.assertEqual(ack["effective_batch"], 8)
                self.assertTrue(job.wait_for(lambda r: r.get("batch_size") == 3 and "samples_per_s" in r
                                             and r["effective_batch"] == 8))
                self.assertEqual(advise(2, "shrink_batch", factor=1.5)["status"], "failed")

                ack = advise(3, "pause_noncritical")
                self.assertEqual((ack["status"], ack["paused"]), ("done", True))
                evals_at_pause = sum(1 for r in job.lines() if r.get("event") == "eval")
                time.sleep(1.5)  # evaluation would come every 0.5 s
                self.assertEqual(sum(1 for r in job.lines() if r.get("event") == "eval"), evals_at_pause)
                ack = advise(4, "resume_noncritical")
                self.assertEqual((ack["status"], ack["paused"]), ("done", False))
                self.assertTrue(wait_until(
                    lambda: sum(1 for r in job.lines() if r.get("event") == "eval") > evals_at_pause, 30))

                ack = advise(5, "checkpoint_now")
                self.assertEqual(ack["status"], "done")
                self.assertTrue(os.path.isfile(ack["checkpoint_path"]))
                # The job hashes the checkpoint after it acked (write_digest: the ack is not held up
                # by the hash), so its digest line comes a moment later.
                self.assertTrue(wait_until(lambda: has_checkpoint_digest(digest, ack["step"]), 30))
                saved = read_jsonl(digest)
                self.assertEqual((saved[-1]["event"], saved[-1]["step"]), ("checkpoint", ack["step"]))

                self.assertEqual(advise(6, "dance")["status"], "unsupported")

                ack = advise(7, "stop")
                self.assertEqual((ack["status"], ack["stopped"]), ("done", True))
                self.assertTrue(os.path.isfile(ack["checkpoint_path"]))
                rc, err = job.finish()
            finally:
                if job.proc.poll() is None:
                    job.proc.kill()
                    job.finish()
                server.close()
            self.assertEqual(rc, 0, err)
            end = [r for r in job.lines() if r.get("event") == "end"][-1]
            self.assertEqual((end["stopped"], end["stopped_by"], end["batch_size"]), (True, "guard", 3))
            self.assertEqual(end["checkpoint_step"], ack["step"])
            handled = [r["action"] for r in job.lines() if r.get("event") == "advice"]
            # The factor of 1.5 and the undeclared "dance" break the advice's table: the client acks
            # them itself (failed, unsupported) and never hands them to the loop.
            self.assertEqual(handled, ["shrink_batch", "pause_noncritical", "resume_noncritical", "checkpoint_now",
                                       "stop"])
            self.assertTrue(server.wait_for("bye"))


class SignalTest(unittest.TestCase):
    """Without a guard: SIGUSR1 checkpoints, SIGTERM checkpoints and stops (exit 0), SIGINT too
    (exit 130)."""

    def run_with_signals(self, signals):
        folder = tempfile.mkdtemp(prefix="guard-train-test-")
        job = Job(folder, "--duration", "120", "--ckpt-dir", folder, "--batch-size", "2", "--effective-batch", "4")
        self.assertTrue(job.wait_for(lambda r: "samples_per_s" in r), "no step line")
        for sig in signals:
            job.proc.send_signal(sig)
            time.sleep(0.5)
        rc, err = job.finish()
        return rc, err, job.lines(), folder

    def test_usr1_checkpoints_and_term_stops_cleanly(self):
        rc, err, lines, folder = self.run_with_signals([signal.SIGUSR1, signal.SIGTERM])
        self.assertEqual(rc, 0, err)
        advice = [(r["action"], r["source"], r["acked"]) for r in lines if r.get("event") == "advice"]
        self.assertEqual(advice, [("checkpoint_now", "signal", False), ("stop", "signal", False)])
        end = lines[-1]
        self.assertEqual((end["event"], end["stopped"], end["stopped_by"]), ("end", True, "signal"))
        self.assertTrue(os.path.isfile(end["checkpoint_path"]))
        self.assertEqual(end["checkpoint_step"], end["steps"])

    def test_sigint_checkpoints_and_exits_130(self):
        rc, err, lines, _ = self.run_with_signals([signal.SIGINT])
        self.assertEqual(rc, 130, err)
        end = lines[-1]
        self.assertEqual((end["stopped"], end["stopped_by"]), (False, "SIGINT"))
        self.assertEqual(end["checkpoint_step"], end["steps"])


class ResumeTest(unittest.TestCase):
    """Six steps straight equal three, a checkpoint, a new process resumed from it, three more."""

    def run_job(self, folder, name, *args):
        digest = os.path.join(folder, f"{name}.jsonl")
        proc = subprocess.run([sys.executable, TRAIN, *TINY, "--eval-every-s", "0", "--duration", "120",
                               "--controller", "fixed", "--batch-size", "2", "--effective-batch", "4",
                               "--save-at-end", "--ckpt-dir", os.path.join(folder, name), "--state-digest", digest,
                               *args], capture_output=True, text=True, timeout=120,
                              env={k: v for k, v in os.environ.items() if k != "GPUDOC_GUARD_SOCKET"})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        return read_jsonl(digest)

    def test_resume_continues_bit_for_bit(self):
        with tempfile.TemporaryDirectory() as folder:
            straight = self.run_job(folder, "a", "--max-steps", "6")
            first = self.run_job(folder, "b", "--max-steps", "3")
            resumed = self.run_job(folder, "c", "--max-steps", "6", "--resume", first[-1]["path"])
        self.assertEqual([(d["event"], d["step"]) for d in resumed], [("resume", 3), ("checkpoint", 6)])
        self.assertEqual(resumed[0]["sha256"], first[-1]["sha256"])     # restored bit for bit
        self.assertEqual(resumed[-1]["sha256"], straight[-1]["sha256"])  # and trained on identically
        self.assertNotEqual(first[-1]["sha256"], straight[-1]["sha256"])

    def test_a_checkpoint_of_another_model_is_refused(self):
        with tempfile.TemporaryDirectory() as folder:
            first = self.run_job(folder, "b", "--max-steps", "1")
            proc = subprocess.run([sys.executable, TRAIN, *TINY, "--width", "64", "--resume", first[-1]["path"]],
                                  capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("was written with", proc.stderr)


class OutOfMemoryTest(unittest.TestCase):
    def run_job(self, *args):
        return subprocess.run([sys.executable, TRAIN, *TINY, "--eval-every-s", "0", "--simulate-oom-above", "4",
                               "--effective-batch", "16", *args], capture_output=True, text=True, timeout=120)

    def test_fixed_batch_out_of_memory_is_a_result(self):
        proc = self.run_job("--controller", "fixed", "--batch-size", "8", "--duration", "30")
        self.assertEqual(proc.returncode, 5, proc.stderr)
        lines = gpudoc_lines(proc.stdout)
        self.assertEqual([r["batch_size"] for r in lines if r.get("event") == "oom"], [8])
        self.assertEqual((lines[-1]["event"], lines[-1]["oom"], lines[-1]["steps"]), ("end", True, 0))

    def test_the_search_retries_smaller(self):
        # From 4 the search's first move is to 8 whatever the throughput measured (nothing to compare
        # with yet), so the out-of-memory at 8 happens on a loaded machine too; started at 1, whether
        # it got past 4 hung on 4 measuring 3 % faster than 2 over three steps, and under load it
        # once did not (1 -> 2 -> 4 -> 3).
        proc = self.run_job("--controller", "seek", "--batch-size", "4", "--duration", "6", "--window", "3",
                            "--warmup", "1")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        lines = gpudoc_lines(proc.stdout)
        changes = [(r["old"], r["new"], r["reason"]) for r in lines if r.get("event") == "batch_change"]
        self.assertIn((4, 8, "search"), changes)
        self.assertTrue(any(reason == "oom" for _, _, reason in changes), changes)
        self.assertLessEqual(lines[-1]["batch_size"], 4)
        self.assertFalse(lines[-1]["oom"])


class DigestTest(unittest.TestCase):
    def test_the_digest_covers_every_tensor_and_hyperparameter(self):
        import torch
        import guard_train as T

        model = torch.nn.Linear(3, 2)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        model(torch.randn(4, 3)).sum().backward()
        opt.step()
        base = T.state_digest(model.state_dict(), opt.state_dict())
        self.assertEqual(base, T.state_digest(model.state_dict(), opt.state_dict()))
        state = opt.state_dict()
        first = next(iter(state["state"].values()))
        first["exp_avg_sq"].view(-1)[0] = torch.nextafter(first["exp_avg_sq"].view(-1)[0], torch.tensor(1.0))
        self.assertNotEqual(base, T.state_digest(model.state_dict(), state))  # one ulp of optimizer state
        state = opt.state_dict()
        state["param_groups"][0]["lr"] = 2e-3
        self.assertNotEqual(base, T.state_digest(model.state_dict(), state))
        bf16 = {"w": torch.ones(2, dtype=torch.bfloat16)}
        self.assertNotEqual(T.state_digest(bf16, {}), T.state_digest({"w": torch.ones(2)}, {}))


if __name__ == "__main__":
    unittest.main()
