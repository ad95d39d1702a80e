#!/usr/bin/env python3
"""Check a run of tools/batch_sweep.sh: the batch-size controller against the manual sweep.

    tools/check_batch_sweep.py OUTDIR [--change-window N] [--tolerance 0.05] [--warmup-s 3]
                               [--max-elapsed-s 240]

Reads OUTDIR/fixed-B.log/.rc (guard_train.py --controller fixed at micro-batch B), seek.log/.rc
(--controller seek) and elapsed_s. Throughput is samples per second from the ``::gpudoc`` step
lines (each the mean over its interval): for a fixed run the median of the lines after the first
``--warmup-s`` seconds; for the controller the median of its lines after it settled (the first
line with ``"settled": true``), less the first two (the new size warming up). Checks, each printed
PASS or FAIL with its figure:

1. no_crash     every run ended with an end line and exit 0, or, for a fixed run, exit 5 with
                ``"oom": true`` (out of memory is a result); the controller's run exit 0
2. oom_reached  the sweep ran out of memory at some micro-batch (the model is sized for it)
3. throughput   the controller's settled throughput is within --tolerance (5 %) of the sweep's best
4. stability    after settling, no two micro-batch changes within --change-window (50) steps of each
                other or of the settling step
5. elapsed      the whole script took at most --max-elapsed-s (240) seconds

Writes OUTDIR/summary.md and OUTDIR/summary.json. Exit codes: 0 every check passed; 1 one failed;
2 bad usage or no fixed run and no controller run in OUTDIR.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import statistics
import sys
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import guard_log as G  # noqa: E402



def end_line(lines: List[Dict[str, Any]]) -> Dict[str, Any]:
    return next((r for r in reversed(lines) if r.get("event") == "end"), {})


def steady(lines: List[Dict[str, Any]], warmup_s: float) -> Optional[float]:
    rates = [r["samples_per_s"] for r in lines if "samples_per_s" in r and r.get("t", 0) > warmup_s]
    return statistics.median(rates) if rates else None


def fixed_runs(outdir: str, warmup_s: float) -> List[Dict[str, Any]]:
    runs = []
    for path in glob.glob(os.path.join(outdir, "fixed-*.log")):
        size = int(re.search(r"fixed-(\d+)\.log$", path).group(1))
        lines = G.read_gpudoc_lines(path)
        end = end_line(lines)
        runs.append({"batch": size, "rc": G.read_rc(path[:-4] + ".rc"), "oom": bool(end.get("oom")),
                     "ended": bool(end), "samples_per_s": steady(lines, warmup_s),
                     "steps": end.get("steps")})
    return sorted(runs, key=lambda r: r["batch"])


def settled_part(lines: List[Dict[str, Any]]) -> Dict[str, Any]:
    step_lines = [r for r in lines if "samples_per_s" in r]
    first = next((i for i, r in enumerate(step_lines) if r.get("settled")), None)
    if first is None:
        return {"settled": False}
    settle_step = step_lines[first]["step"]
    changes = [r for r in lines if r.get("event") == "batch_change"]
    before = [c for c in changes if c["step"] <= settle_step]
    after = [c for c in changes if c["step"] > settle_step]
    settle_change = before[-1]["step"] if before else 0
    kept = [r for r in step_lines[first:] if r["step"] > settle_change][2:]
    rates = [r["samples_per_s"] for r in kept]
    return {"settled": True, "settle_step": settle_step, "changes_after": after,
            "batch": step_lines[first].get("batch_size"), "lines": len(rates),
            "samples_per_s": statistics.median(rates) if rates else None,
            "searched": [(c["old"], c["new"], c["reason"]) for c in before]}


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("outdir")
    p.add_argument("--change-window", type=int, default=50)
    p.add_argument("--tolerance", type=float, default=0.05)
    p.add_argument("--warmup-s", type=float, default=3.0)
    p.add_argument("--max-elapsed-s", type=float, default=240.0)
    args = p.parse_args(argv)
    fixed = fixed_runs(args.outdir, args.warmup_s)
    seek_path = os.path.join(args.outdir, "seek.log")
    if not fixed and not os.path.isfile(seek_path):
        print(f"check_batch_sweep: no fixed-*.log and no seek.log in {args.outdir}", file=sys.stderr)
        return 2
    seek_lines = G.read_gpudoc_lines(seek_path) if os.path.isfile(seek_path) else []
    seek_rc = G.read_rc(os.path.join(args.outdir, "seek.rc"))
    results: List[Dict[str, Any]] = []

    def check(name: str, ok: bool, figure: str, **data: Any) -> None:
        results.append({"name": name, "pass": bool(ok), "figure": figure, **data})
        print(f"{'PASS' if ok else 'FAIL'}  {name:<11}  {figure}")

    for r in fixed:
        rate = f"{r['samples_per_s']:.1f} samples/s" if r["samples_per_s"] else "no steady lines"
        print(f"      sweep       micro-batch {r['batch']:>4}: {'out of memory' if r['oom'] else rate} (exit {r['rc']})")
    bad = [r for r in fixed if not r["ended"] or not (r["rc"] == 0 or (r["rc"] == 5 and r["oom"]))]
    seek_end = end_line(seek_lines)
    seek_ok = seek_rc == 0 and bool(seek_end)
    check("no_crash", not bad and seek_ok,
          f"fixed runs {[(r['batch'], r['rc']) for r in fixed]}; controller exit {seek_rc}"
          + (f"; crashed: {[r['batch'] for r in bad]}" if bad else ""))
    oom = [r["batch"] for r in fixed if r["oom"]]
    check("oom_reached", bool(oom), f"out of memory at micro-batch {oom[0]}" if oom else
          f"no out of memory up to micro-batch {fixed[-1]['batch'] if fixed else '?'}", oom_batch=oom[0] if oom else None)
    measured = [r for r in fixed if r["samples_per_s"] and not r["oom"]]
    best = max(measured, key=lambda r: r["samples_per_s"], default=None)
    part = settled_part(seek_lines)
    oom_changes = [c for c in seek_lines if c.get("event") == "batch_change" and c.get("reason") == "oom"]
    if best and part.get("samples_per_s"):
        ratio = part["samples_per_s"] / best["samples_per_s"]
        check("throughput", ratio >= 1 - args.tolerance,
              f"controller settled at micro-batch {part['batch']}: {part['samples_per_s']:.1f} samples/s = "
              f"{ratio:.1%} of the sweep's best ({best['samples_per_s']:.1f} at micro-batch {best['batch']}); "
              f"search {part['searched']}" + (f"; {len(oom_changes)} out-of-memory step(s) retried" if oom_changes else ""),
              ratio=ratio, settled_batch=part["batch"], best_batch=best["batch"])
    else:
        check("throughput", False, f"no settled throughput ({part}) or no sweep result")
    if part.get("settled"):
        steps = [part["settle_step"]] + [c["step"] for c in part["changes_after"]]
        close = [(a, b) for a, b in zip(steps, steps[1:]) if b - a < args.change_window]
        check("stability", not close,
              f"settled at step {part['settle_step']}; {len(part['changes_after'])} change(s) after "
              f"({[(c['step'], c['old'], c['new'], c['reason']) for c in part['changes_after']]}); "
              f"window {args.change_window} steps; run ended at step {seek_end.get('steps')}",
              changes_after=len(part["changes_after"]))
    else:
        check("stability", False, "the controller never settled")
    elapsed = G.read_rc(os.path.join(args.outdir, "elapsed_s"))
    check("elapsed", elapsed is not None and elapsed <= args.max_elapsed_s,
          f"{elapsed} s (limit {args.max_elapsed_s:.0f} s)", elapsed_s=elapsed)
    all_pass = all(r["pass"] for r in results)
    with open(os.path.join(args.outdir, "summary.json"), "w", encoding="utf-8") as f:
        json.dump({"all_pass": all_pass, "checks": results, "sweep": fixed,
                   "controller": {k: v for k, v in part.items() if k != "changes_after"}}, f, indent=2)
        f.write("\n")
    md = ["# Batch-size controller against a manual sweep", "", "| micro-batch | samples/s (steady) | exit |",
          "|---|---|---|"]
    for r in fixed:
        rate = "out of memory" if r["oom"] else ("%.1f" % r["samples_per_s"] if r["samples_per_s"] else "-")
        md.append(f"| {r['batch']} | {rate} | {r['rc']} |")
    md += ["", "| check | result | figure |", "|---|---|---|"]
    md += [f"| {r['name']} | {'PASS' if r['pass'] else 'FAIL'} | {r['figure'].replace('|', '/')} |" for r in results]
    md += ["", f"**{'All checks passed' if all_pass else 'Some checks failed'}.**", ""]
    with open(os.path.join(args.outdir, "summary.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md))
    return 0 if all_pass else 1


if __name__ == "__main__":
    sys.exit(main())
