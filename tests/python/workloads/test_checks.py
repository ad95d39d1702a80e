"""tools/guard_log.py, tools/check_guard_e2e.py and tools/check_batch_sweep.py on run folders built
here: a good run passes every check, and each kind of fault fails the check that covers it (and
only that one). Standard library only."""
import contextlib
import copy
import io
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(REPO, "tools"))

import check_batch_sweep as B  # noqa: E402
import check_guard_e2e as E  # noqa: E402
import guard_log as G  # noqa: E402

T0 = 1_800_000_000.0
NC_PID = 4242


def guard_records(latency_ms=40.0):
    """The guard's log of a good run: levels 1, 2, cleared, 3; the acks a job sends."""
    recs = []

    def decide(t, level, prev, actions):
        recs.append({"type": "decision", "t_unix": T0 + t, "gpu": 0, "level": level, "previous_level": prev,
                     "actions": actions, "reason": "test"})

    def advise(n, t, action, level, status="done", **details):
        recs.append({"type": "advice", "id": f"j-{n}", "action": action, "level": level,
                     "sample_unix": T0 + t - 0.01, "sent_unix": T0 + t})
        recs.append({"type": "ack", "id": f"j-{n}", "status": status, "received_unix": T0 + t - 0.01 + latency_ms / 1e3,
                     "latency_ms": latency_ms, **details})

    decide(36, 1, 0, ["shrink_batch"])
    advise(1, 36, "shrink_batch", 1, batch_size=12, accumulation_steps=6, previous_batch_size=16,
           previous_accumulation_steps=4, effective_batch=64, factor=0.75, work_ms=0.1)
    decide(51, 2, 1, ["checkpoint_now", "pause_noncritical"])
    advise(2, 51, "checkpoint_now", 2, checkpoint_path="/c/guard_train.pt", step=400, ckpt_ms=60.0, work_ms=70.0)
    recs.append({"type": "signal", "pid": NC_PID, "signal": "SIGSTOP", "t_unix": T0 + 51.02})
    advise(3, 51.03, "pause_noncritical", 2, paused=True, work_ms=0.0)
    decide(69, 1, 2, ["resume_noncritical"])
    recs.append({"type": "signal", "pid": NC_PID, "signal": "SIGCONT", "t_unix": T0 + 69.01})
    advise(4, 69.02, "resume_noncritical", 0, paused=False, work_ms=0.0)
    decide(89, 3, 1, ["checkpoint_now", "stop"])
    advise(5, 89, "checkpoint_now", 3, checkpoint_path="/c/guard_train.pt", step=900, ckpt_ms=50.0)
    advise(6, 89.01, "stop", 3, checkpoint_path="/c/guard_train.pt", step=900, stopped=True)
    return recs


def job_lines():
    lines = [{"workload": "guard_train", "event": "start", "time_unix": T0 + 5}]
    for t in range(10, 89):
        shrunk = t > 36
        lines.append({"step": t * 10, "samples_per_s": 900.0, "batch_size": 12 if shrunk else 16,
                      "accumulation_steps": 6 if shrunk else 4, "effective_batch": 64, "time_unix": T0 + t + 0.5})
    lines.append({"workload": "guard_train", "event": "end", "steps": 900, "stopped": True, "stopped_by": "guard",
                  "checkpoint_path": "/c/guard_train.pt", "time_unix": T0 + 89.2})
    return lines


def noncritical_lines(gap=(51.0, 69.05)):
    lines = [{"workload": "guard_noncritical", "event": "start", "pid": NC_PID, "time_unix": T0 + 2}]
    t = 3.0
    while t < 95:
        lines.append({"event": "tick", "time_unix": T0 + t, "gap_ms": 100.0})
        t = gap[1] if gap and gap[0] <= t < gap[1] else t + 0.1
    return lines


DIGESTS = [{"event": "checkpoint", "step": 400, "sha256": "aa" * 32}, {"event": "checkpoint", "step": 900, "sha256": "bb" * 32},
           {"event": "resume", "step": 900, "sha256": "bb" * 32}]


def write_run(folder, guard=None, train=None, noncritical=None, digests=None, train_rc=0, resume_rc=0):
    def jsonl(name, records, prefix=""):
        with open(os.path.join(folder, name), "w") as f:
            f.writelines(prefix + json.dumps(r) + "\n" for r in records)

    jsonl("guard.jsonl", guard if guard is not None else guard_records())
    jsonl("train.log", train if train is not None else job_lines(), "::gpudoc ")
    jsonl("noncritical.log", noncritical if noncritical is not None else noncritical_lines(), "::gpudoc ")
    jsonl("resume.log", [{"event": "start"}, {"event": "end", "steps": 950}], "::gpudoc ")
    jsonl("digest.jsonl", digests if digests is not None else DIGESTS)
    for name, rc in (("train.rc", train_rc), ("resume.rc", resume_rc)):
        with open(os.path.join(folder, name), "w") as f:
            f.write(f"{rc}\n")
    with open(os.path.join(folder, "e2e.json"), "w") as f:
        json.dump({"guard_start_unix": T0, "device": "cpu"}, f)


def verdicts(**kwargs):
    with tempfile.TemporaryDirectory() as folder:
        write_run(folder, **kwargs)
        with contextlib.redirect_stdout(io.StringIO()):
            rc = E.main([folder])
        with open(os.path.join(folder, "summary.json")) as f:
            summary = json.load(f)
        with open(os.path.join(folder, "summary.md")) as f:
            assert "| latency |" in f.read()
    return rc, {c["name"]: c["pass"] for c in summary["checks"]}


class GuardLogTest(unittest.TestCase):
    def test_missing_fields_are_filled_and_garbage_counted(self):
        log = G.parse_guard_log([
            json.dumps({"type": "decision", "t_unix": 10, "level": 2, "previous_level": 0, "actions": ["checkpoint_now"]}),
            json.dumps({"type": "advice", "id": "a", "action": "checkpoint_now", "sample_unix": 10.0, "sent_unix": 10.05}),
            json.dumps({"type": "ack", "id": "a", "status": "done", "received_unix": 10.25,
                        "details": {"checkpoint_path": "/x"}}),
            "not json", "[1]", "",
            json.dumps({"type": "signal", "pid": 7, "signal": "SIGSTOP"}),
        ])
        self.assertEqual((log.signals[0].pid, log.signals[0].t_unix), (7, 10.25))  # the ack's time
        self.assertEqual(log.bad_lines, 2)
        ack = log.acks[0]
        self.assertEqual((ack.action, ack.level, ack.details["checkpoint_path"]), ("checkpoint_now", 2, "/x"))
        self.assertAlmostEqual(ack.latency_ms, 250.0)
        self.assertTrue(log.decisions[0].escalation)


class GuardE2eCheckTest(unittest.TestCase):
    def test_a_good_run_passes_every_check(self):
        rc, v = verdicts()
        self.assertEqual(rc, 0)
        self.assertEqual(v, dict.fromkeys(("levels", "shrink", "checkpoint", "pause", "stop", "resume", "latency"), True))

    def assert_only_fails(self, name, **kwargs):
        rc, v = verdicts(**kwargs)
        self.assertEqual(rc, 1)
        self.assertEqual([k for k, ok in v.items() if not ok], [name])

    def test_a_slow_ack_fails_latency(self):
        self.assert_only_fails("latency", guard=guard_records(latency_ms=301.0))

    def test_a_wrong_shrink_fails(self):
        recs = guard_records()
        recs[2]["batch_size"] = 13  # 16 x 0.75 is 12
        self.assert_only_fails("shrink", guard=recs)

    def test_levels_out_of_order_fail(self):
        recs = guard_records()
        recs[0]["t_unix"] = T0 + 60  # level 1 entered after level 2
        self.assert_only_fails("levels", guard=recs)

    def test_no_gap_in_the_noncritical_output_fails_pause(self):
        self.assert_only_fails("pause", noncritical=noncritical_lines(gap=None))

    def test_a_different_resume_digest_fails(self):
        digests = copy.deepcopy(DIGESTS)
        digests[-1]["sha256"] = "cc" * 32
        self.assert_only_fails("resume", digests=digests)

    def test_a_job_that_did_not_exit_cleanly_fails_stop(self):
        self.assert_only_fails("stop", train_rc=1)


def sweep_folder(folder, rates, oom_at, seek_rate, changes_after=(), fixed_rc=None):
    def write(name, lines, rc):
        with open(os.path.join(folder, name + ".log"), "w") as f:
            f.writelines("::gpudoc " + json.dumps(r) + "\n" for r in lines)
        with open(os.path.join(folder, name + ".rc"), "w") as f:
            f.write(f"{rc}\n")

    for b, rate in rates.items():
        lines = [{"step": i, "samples_per_s": rate * (0.5 if i < 2 else 1.0), "t": float(i), "batch_size": b}
                 for i in range(1, 9)] + [{"event": "end", "oom": False, "steps": 8}]
        write(f"fixed-{b}", lines, (fixed_rc or {}).get(b, 0))
    write(f"fixed-{oom_at}", [{"event": "oom", "batch_size": oom_at}, {"event": "end", "oom": True, "steps": 0}], 5)
    seek = [{"event": "batch_change", "step": 10, "old": 1, "new": 2, "reason": "search"},
            {"event": "batch_change", "step": 20, "old": 2, "new": 4, "reason": "settle"}]
    for i in range(1, 60):
        seek.append({"step": i * 5, "samples_per_s": seek_rate if i * 5 > 20 else 100.0, "batch_size": 4,
                     "settled": i * 5 >= 20, "t": float(i)})
    seek += [{"event": "batch_change", "step": s, "old": 4, "new": 3, "reason": "advice"} for s in changes_after]
    seek.append({"event": "end", "steps": 295})
    write("seek", sorted(seek, key=lambda r: (r["step"] if "step" in r else 10 ** 9)), 0)
    with open(os.path.join(folder, "elapsed_s"), "w") as f:
        f.write("200\n")


def sweep_verdicts(**kwargs):
    with tempfile.TemporaryDirectory() as folder:
        sweep_folder(folder, **kwargs)
        with contextlib.redirect_stdout(io.StringIO()):
            rc = B.main([folder, "--change-window", "50"])
        with open(os.path.join(folder, "summary.json")) as f:
            return rc, {c["name"]: c["pass"] for c in json.load(f)["checks"]}


class BatchSweepCheckTest(unittest.TestCase):
    good = {"rates": {1: 500.0, 2: 800.0, 4: 1000.0, 8: 1010.0}, "oom_at": 16}

    def test_a_good_sweep_passes(self):
        rc, v = sweep_verdicts(**self.good, seek_rate=990.0)
        self.assertEqual((rc, set(v.values())), (0, {True}))

    def test_a_controller_more_than_5_percent_below_the_best_fails(self):
        rc, v = sweep_verdicts(**self.good, seek_rate=950.0)
        self.assertEqual((rc, [k for k, ok in v.items() if not ok]), (1, ["throughput"]))

    def test_two_changes_within_the_window_fail_stability(self):
        rc, v = sweep_verdicts(**self.good, seek_rate=990.0, changes_after=(100, 130))
        self.assertEqual((rc, [k for k, ok in v.items() if not ok]), (1, ["stability"]))
        rc, v = sweep_verdicts(**self.good, seek_rate=990.0, changes_after=(100,))
        self.assertEqual(rc, 0)

    def test_a_crashed_fixed_run_fails_no_crash(self):
        rc, v = sweep_verdicts(**self.good, seek_rate=990.0, fixed_rc={4: 1})
        self.assertEqual((rc, [k for k, ok in v.items() if not ok]), (1, ["no_crash"]))


if __name__ == "__main__":
    unittest.main()
