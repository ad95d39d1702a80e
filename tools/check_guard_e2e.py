#!/usr/bin/env python3
"""Check a run of tools/guard_e2e.sh: did gpudoc guard and the training job do what they should?

    tools/check_guard_e2e.py OUTDIR [--max-latency-ms 300]

Reads what guard_e2e.sh left in OUTDIR: ``guard.jsonl`` (the guard's --log, parsed by
tools/guard_log.py, the one place that knows its fields), ``train.log``/``train.rc`` (the guarded
workloads/guard_train.py), ``resume.log``/``resume.rc`` (the run resumed from its last
checkpoint), ``noncritical.log`` (workloads/guard_noncritical.py), ``digest.jsonl`` (state
digests) and ``e2e.json`` (the settings and start time). Each check prints PASS or FAIL with its
figure:

1. levels      the guard entered levels 1, 2 and 3 for the first time in that order
2. shrink      level 1's shrink_batch was done: the micro-batch times 0.75, rounded down as
               gpudoc.BatchSizeController does, with enough accumulation steps to keep the effective
               batch, which the job's step lines show unchanged after it
3. checkpoint  a checkpoint_now of level 2 was acknowledged done with a checkpoint path
4. pause       the non-critical process was sent SIGSTOP (its ticks show a gap about as long as the
               pause) and later SIGCONT (its ticks go on); the job paused and resumed its own
               non-critical work (acks of pause_noncritical and resume_noncritical)
5. stop        level 3's stop was acknowledged with a checkpoint; the job's end line says
               stopped=true, and it exited 0
6. resume      the digest right after the resume equals the digest of the last checkpoint written
               (model and optimizer bit for bit), and the resumed run exited 0
7. latency     every ack arrived within --max-latency-ms of the sample that decided its advice
               (max and p50 reported, and each action's own work time)

Writes OUTDIR/summary.md and OUTDIR/summary.json. Exit codes: 0 every check passed; 1 one failed;
2 bad usage or OUTDIR lacks the guard's log or the job's output.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import guard_log as G  # noqa: E402
from gpudoc import BatchSizeController  # noqa: E402

GAP_FACTOR = 0.5     # the tick gap must cover at least this share of the SIGSTOP..SIGCONT span
MIN_GAP_S = 1.0      # and be at least this long (ticks come every ~0.1 s)


class Checks:
    def __init__(self) -> None:
        self.results: List[Dict[str, Any]] = []

    def add(self, name: str, ok: bool, figure: str, **data: Any) -> None:
        self.results.append({"name": name, "pass": bool(ok), "figure": figure, **data})
        print(f"{'PASS' if ok else 'FAIL'}  {name:<10}  {figure}")

    @property
    def all_pass(self) -> bool:
        return all(r["pass"] for r in self.results)


def rel(t: Optional[float], t0: float) -> str:
    return "?" if t is None else f"+{t - t0:.1f} s"



def check_levels(c: Checks, log: G.GuardLog, t0: float) -> None:
    first: Dict[int, float] = {}
    sequence = []
    for d in log.decisions:
        sequence.append(d.level)
        if d.escalation and d.level not in first and d.t_unix is not None:
            first[d.level] = d.t_unix
    times = [first.get(n) for n in (1, 2, 3)]
    ok = all(t is not None for t in times) and times[0] < times[1] < times[2]
    seq = "→".join(str(n) for n in [0] + sequence)
    figure = f"level 1 at {rel(times[0], t0)}, 2 at {rel(times[1], t0)}, 3 at {rel(times[2], t0)} (levels {seq})"
    c.add("levels", ok, figure, first_entry_unix={str(k): v for k, v in first.items()}, sequence=sequence)


def check_shrink(c: Checks, log: G.GuardLog, train: List[Dict[str, Any]]) -> None:
    acks = [a for a in log.acks_for("shrink_batch") if a.status == "done"]
    if not acks:
        c.add("shrink", False, "no shrink_batch acknowledged done", acks=len(log.acks_for("shrink_batch")))
        return
    ack = acks[0]
    d = ack.details
    try:
        old, new, accum = int(d["previous_batch_size"]), int(d["batch_size"]), int(d["accumulation_steps"])
        target, factor = int(d["effective_batch"]), float(d.get("factor", 0.75))
    except (KeyError, TypeError, ValueError):
        c.add("shrink", False, f"the ack lacks batch_size/previous_batch_size/accumulation_steps: {d}")
        return
    expected = BatchSizeController(target, micro_batch=old, max_micro_batch=max(old, target))
    expected.shrink(factor)
    after = [r for r in train if "samples_per_s" in r and r.get("time_unix", 0) > (ack.received_unix or 0)]
    shown = sorted({(r.get("batch_size"), r.get("effective_batch")) for r in after[:5]})
    kept = all(e == target for _, e in shown) and any(b == new for b, _ in shown)
    ok = (new == expected.micro_batch and accum == expected.accumulation_steps and new * accum >= target
          and abs(factor - 0.75) < 1e-9 and kept)
    before = [r["samples_per_s"] for r in train if "samples_per_s" in r
              and r.get("time_unix", 0) <= (ack.received_unix or 0)][-5:]
    figure = (f"micro-batch {old} → {new} (×{factor:g}; controller rounds to {expected.micro_batch}), "
              f"accumulation → {accum}, effective batch {target} kept ({new}×{accum} ≥ {target}; "
              f"step lines after: {shown})")
    if before and after:
        figure += (f"; samples/s {statistics.median(before):.0f} before, "
                   f"{statistics.median([r['samples_per_s'] for r in after[:5]]):.0f} after")
    c.add("shrink", ok, figure, previous_batch_size=old, batch_size=new, accumulation_steps=accum,
          effective_batch=target)


def check_checkpoint(c: Checks, log: G.GuardLog) -> None:
    acks = [a for a in log.acks_for("checkpoint_now") if a.level == 2 and a.status == "done"]
    ok = bool(acks) and bool(acks[0].details.get("checkpoint_path"))
    if ok:
        d = acks[0].details
        figure = f"level 2: step {d.get('step')} → {d.get('checkpoint_path')} in {d.get('ckpt_ms')} ms"
    else:
        figure = f"no level-2 checkpoint_now acknowledged done (checkpoint acks: {[(a.level, a.status) for a in log.acks_for('checkpoint_now')]})"
    c.add("checkpoint", ok, figure)


def tick_gaps(noncritical: List[Dict[str, Any]]) -> List[Dict[str, float]]:
    ticks = [r for r in noncritical if r.get("event") == "tick"]
    return [{"start": a["time_unix"], "end": b["time_unix"], "gap_s": b["time_unix"] - a["time_unix"]}
            for a, b in zip(ticks, ticks[1:])]


def check_pause(c: Checks, log: G.GuardLog, noncritical: List[Dict[str, Any]], t0: float) -> None:
    start = next((r for r in noncritical if r.get("event") == "start"), {})
    pid = start.get("pid")
    stops = [s for s in log.signals if s.signal == "SIGSTOP" and s.pid == pid]
    conts = [s for s in log.signals if s.signal == "SIGCONT" and s.pid == pid]
    gaps = tick_gaps(noncritical)
    widest = max(gaps, key=lambda g: g["gap_s"], default=None)
    job_pause = [a for a in log.acks_for("pause_noncritical") if a.status == "done"]
    job_resume = [a for a in log.acks_for("resume_noncritical") if a.status == "done"]
    problems = []
    if not stops:
        problems.append(f"no SIGSTOP to the non-critical process (pid {pid})")
    if not conts:
        problems.append("no SIGCONT to it")
    span = None
    if stops and conts and widest is not None:
        stop_t = stops[0].t_unix
        cont_t = next((s.t_unix for s in conts if s.t_unix is None or stop_t is None or s.t_unix >= stop_t), None)
        if stop_t is not None and cont_t is not None:
            span = cont_t - stop_t
        needed = max(MIN_GAP_S, GAP_FACTOR * span) if span is not None else MIN_GAP_S
        if widest["gap_s"] < needed:
            problems.append(f"its widest tick gap {widest['gap_s']:.2f} s is under {needed:.2f} s")
        if not any(g["start"] >= widest["end"] for g in gaps):
            problems.append("no ticks after the gap (never resumed)")
    if not job_pause or not job_resume:
        problems.append("the job did not ack both pause_noncritical and resume_noncritical")
    figure = (f"pid {pid}: SIGSTOP at {rel(stops[0].t_unix if stops else None, t0)}, "
              f"SIGCONT at {rel(conts[0].t_unix if conts else None, t0)}"
              + (f" ({span:.1f} s)" if span is not None else "")
              + (f"; widest tick gap {widest['gap_s']:.1f} s from {rel(widest['start'], t0)}" if widest else "")
              + f"; job's own pause/resume acks {len(job_pause)}/{len(job_resume)}")
    if problems:
        figure += "; " + "; ".join(problems)
    c.add("pause", not problems, figure, tick_gap_s=widest["gap_s"] if widest else None, pause_span_s=span)


def check_stop(c: Checks, log: G.GuardLog, train: List[Dict[str, Any]], rc: Optional[int]) -> None:
    acks = [a for a in log.acks_for("stop") if a.status == "done"]
    end = next((r for r in reversed(train) if r.get("event") == "end"), {})
    level3 = [a for a in log.acks_for("checkpoint_now") if a.level == 3]
    ok = (bool(acks) and bool(acks[0].details.get("checkpoint_path")) and end.get("stopped") is True
          and rc == 0)
    figure = (f"stop ack {acks[0].status if acks else 'missing'} at step {acks[0].details.get('step') if acks else '?'} "
              f"with {acks[0].details.get('checkpoint_path') if acks else None}; level-3 checkpoint_now acks "
              f"{[a.status for a in level3]}; end line stopped={end.get('stopped')} "
              f"stopped_by={end.get('stopped_by')}; exit {rc}")
    c.add("stop", ok, figure, exit_code=rc)


def check_resume(c: Checks, digests: List[Dict[str, Any]], resume: List[Dict[str, Any]],
                 rc: Optional[int]) -> None:
    resumed = [i for i, d in enumerate(digests) if d.get("event") == "resume"]
    if not resumed:
        c.add("resume", False, f"no resume digest (resume run exit {rc})")
        return
    i = resumed[-1]
    saved = [d for d in digests[:i] if d.get("event") == "checkpoint"]
    last, now = (saved[-1] if saved else {}), digests[i]
    end = next((r for r in reversed(resume) if r.get("event") == "end"), {})
    ok = bool(saved) and last.get("sha256") == now.get("sha256") and last.get("step") == now.get("step") and rc == 0
    figure = (f"checkpoint step {last.get('step')} sha256 {str(last.get('sha256'))[:16]}…, resumed step "
              f"{now.get('step')} sha256 {str(now.get('sha256'))[:16]}…: "
              f"{'equal' if last.get('sha256') == now.get('sha256') else 'DIFFERENT'}; resumed run trained to step "
              f"{end.get('steps')}, exit {rc}")
    c.add("resume", ok, figure, checkpoint_sha256=last.get("sha256"), resume_sha256=now.get("sha256"))


def check_latency(c: Checks, log: G.GuardLog, limit_ms: float) -> None:
    timed = [a for a in log.acks if a.latency_ms is not None and math.isfinite(a.latency_ms)]
    if not timed:
        c.add("latency", False, "no ack with a latency in the guard's log")
        return
    values = sorted(a.latency_ms for a in timed)
    worst = max(timed, key=lambda a: a.latency_ms)
    per_action = {}
    for a in timed:
        per_action.setdefault(a.action, []).append(a.latency_ms)
    ok = values[-1] <= limit_ms and len(timed) == len(log.acks)
    figure = (f"{len(timed)} acks: max {values[-1]:.0f} ms ({worst.action}, the job's own work "
              f"{worst.details.get('work_ms')} ms), p50 {statistics.median(values):.0f} ms, limit {limit_ms:.0f} ms; "
              + ", ".join(f"{k} max {max(v):.0f}" for k, v in sorted(per_action.items())))
    if len(timed) != len(log.acks):
        figure += f"; {len(log.acks) - len(timed)} ack(s) without a latency"
    c.add("latency", ok, figure, max_ms=values[-1], p50_ms=statistics.median(values), count=len(timed),
          per_action_max_ms={k: max(v) for k, v in per_action.items()})


def write_summary(outdir: str, c: Checks, meta: Dict[str, Any]) -> None:
    with open(os.path.join(outdir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump({"all_pass": c.all_pass, "checks": c.results, "run": meta}, f, indent=2)
        f.write("\n")
    lines = ["# gpudoc guard end-to-end run", "",
             f"Device {meta.get('device')}, trace `{meta.get('ramp')}` at speed {meta.get('speed')}, "
             f"gpudoc `{meta.get('gpudoc')}`, Python `{meta.get('python')}`.", "",
             "| check | result | figure |", "|---|---|---|"]
    for r in c.results:
        lines.append(f"| {r['name']} | {'PASS' if r['pass'] else 'FAIL'} | {r['figure'].replace('|', '/')} |")
    lines += ["", f"**{'All checks passed' if c.all_pass else 'Some checks failed'}.**", ""]
    with open(os.path.join(outdir, "summary.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines))


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("outdir")
    p.add_argument("--max-latency-ms", type=float, default=300.0)
    args = p.parse_args(argv)
    path = lambda name: os.path.join(args.outdir, name)  # noqa: E731
    for needed in ("guard.jsonl", "train.log"):
        if not os.path.isfile(path(needed)):
            print(f"check_guard_e2e: {path(needed)} is missing", file=sys.stderr)
            return 2
    meta = G.read_json(path("e2e.json"))
    log = G.read_guard_log(path("guard.jsonl"))
    train = G.read_gpudoc_lines(path("train.log"))
    optional = lambda name, reader: reader(path(name)) if os.path.isfile(path(name)) else []  # noqa: E731
    noncritical = optional("noncritical.log", G.read_gpudoc_lines)
    resume = optional("resume.log", G.read_gpudoc_lines)
    digests = optional("digest.jsonl", G.read_json_lines)
    start = next((r for r in train if r.get("event") == "start"), {})
    t0 = meta.get("guard_start_unix") or start.get("time_unix") or 0.0
    c = Checks()
    check_levels(c, log, t0)
    check_shrink(c, log, train)
    check_checkpoint(c, log)
    check_pause(c, log, noncritical, t0)
    check_stop(c, log, train, G.read_rc(path("train.rc")))
    check_resume(c, digests, resume, G.read_rc(path("resume.rc")))
    check_latency(c, log, args.max_latency_ms)
    if log.bad_lines:
        print(f"note: {log.bad_lines} line(s) of guard.jsonl were not JSON objects")
    write_summary(args.outdir, c, meta)
    print(f"{'all checks passed' if c.all_pass else 'FAILED'}: {path('summary.md')}")
    return 0 if c.all_pass else 1


if __name__ == "__main__":
    sys.exit(main())
