#!/usr/bin/env python3
"""Checks one `gpudoc tune --json` report against an independent run of the job (tools/tune_checks.sh).

    tools/tune_check.py REPORT.json --expect kept [--min-speedup 100] [--runs 2] [--tolerance 5] [--out CHECK.json]
    tools/tune_check.py REPORT.json --expect nothing [--out CHECK.json]

--expect kept: gpudoc kept at least one change; the job is then run here, without gpudoc, unchanged
(with NCCL_NVLS_ENABLE=0, as gpudoc's reference) and with the report's own lines to apply (exported
variables, taskset, the shim), RUNS times each in turns, each run stopped after the report's warm-up
and step counts of its figure; the speed-up (median of the unchanged runs' samples over the tuned
runs', minus 1) must be within TOLERANCE points of the report's, and at least MIN_SPEEDUP % when given;
each run pair's own speed-up is printed too (how far independent runs differ among themselves).
--expect nothing: no change kept ("nothing worth changing"), and every change measured either below
3 % or with an interval that holds 0.
Also: the pass stayed within its budget (+10 %), and the report says how the budget split.

Prints one PASS/FAIL line per check; exit 0 when all pass, 1 otherwise, 2 on bad usage.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time


def run_once(shell_lines, figure, higher_is_better, need, timeout_s, log):
    """Runs the lines in bash (the last one exec'd) in a process group of its own; returns the
    samples of `figure` after the warm-up, as time per unit of work."""
    script = "\n".join(shell_lines[:-1] + ["exec " + shell_lines[-1]])
    t0 = time.monotonic()
    p = subprocess.Popen(["bash", "-c", script], stdout=subprocess.PIPE, stderr=log, text=True,
                         start_new_session=True)
    values = []
    try:
        for line in p.stdout:
            if time.monotonic() - t0 > timeout_s:
                break
            if not line.startswith("::gpudoc "):
                continue
            try:
                obj = json.loads(line[len("::gpudoc "):])
            except ValueError:
                continue
            v = obj.get(figure) if isinstance(obj, dict) else None
            if isinstance(v, (int, float)) and "event" not in obj:
                values.append(float(v))
                if len(values) >= need:
                    break
    finally:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return values, time.monotonic() - t0


def reproduce(report, runs, log_path):
    work = report["work"]
    figure, warmup, steps = work["figure"], work["warmup"], work["steps"]
    if figure is None:
        return None, "the report timed whole runs; this check needs a figure"
    hib = work["higher_is_better"]
    unchanged = ["export NCCL_NVLS_ENABLE=0", " ".join(_quote(w) for w in report["command"])]
    tuned = list(report["apply"])
    samples = {"unchanged": [], "tuned": []}
    walls = {"unchanged": [], "tuned": []}
    medians = {"unchanged": [], "tuned": []}  # each run's own, for the runs' spread among themselves
    with open(log_path, "a") as log:
        for r in range(runs):
            order = [("unchanged", unchanged), ("tuned", tuned)] if r % 2 == 0 else [("tuned", tuned),
                                                                                     ("unchanged", unchanged)]
            for name, lines in order:
                log.write(f"--- run {r + 1} {name}: {lines}\n")
                log.flush()
                values, wall = run_once(lines, figure, hib, warmup + steps, 900, log)
                got = values[warmup:warmup + steps]
                if hib:
                    got = [1.0 / v for v in got if v > 0]
                samples[name].extend(got)
                walls[name].append(round(wall, 2))
                medians[name].append(statistics.median(got) if got else None)
    if not samples["unchanged"] or not samples["tuned"]:
        return None, f"a side produced no samples: {walls}"
    mu, mt = statistics.median(samples["unchanged"]), statistics.median(samples["tuned"])
    per_run = [round((u / t - 1) * 100, 2) for u, t in zip(medians["unchanged"], medians["tuned"]) if u and t]
    return {"speedup_percent": (mu / mt - 1) * 100, "unchanged_median": mu, "tuned_median": mt,
            "samples": {k: len(v) for k, v in samples.items()}, "walls_s": walls,
            "per_run_speedup_percent": per_run}, ""


def _quote(word):
    safe = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")
    if word and all(c in safe for c in word):
        return word
    return "'" + word.replace("'", "'\\''") + "'"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report")
    ap.add_argument("--expect", choices=("kept", "nothing"), required=True)
    ap.add_argument("--min-speedup", type=float, default=None)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--tolerance", type=float, default=5.0)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    try:
        with open(a.report) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        print(f"tune_check.py: {a.report}: {e}", file=sys.stderr)
        return 2
    checks = []

    def check(name, ok, detail):
        checks.append({"check": name, "pass": bool(ok), "detail": detail})
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}")

    b = report["budget"]
    check("budget", b["spent_s"] <= 1.1 * b["budget_s"],
          f"spent {b['spent_s']:.0f} s of {b['budget_s']:.0f} s; plain {b['plain_s']:.0f} s, "
          + ", ".join(f"{l['layer']} {l['spent_s']:.0f}/{l['planned_s']:.0f} s" for l in report["layers"])
          + f", final {b['final_spent_s']:.0f}/{b['final_planned_s']:.0f} s")
    arms = [a2 for l in report["layers"] for a2 in l["arms"]]
    kept = [k["id"] for k in report["kept"]]
    summary = {arm["change"]["id"]: {"outcome": arm["outcome"], "reason": arm["reason"],
                                     "speedup_percent": (arm["overall"] or arm["first"] or {}).get("speedup_percent"),
                                     "interval": (arm["overall"] or arm["first"] or {}).get("interval")}
               for arm in arms}
    result = {"report": a.report, "kept": kept, "arms": summary,
              "diagnosis": [f["id"] for f in report["diagnosis"]["findings"]]}
    if a.expect == "nothing":
        check("nothing kept", not kept, f"kept: {kept or 'none'}")
        for arm in arms:
            j = arm["overall"] or arm["first"]
            if j is None:
                continue
            small = j["speedup_percent"] is not None and j["speedup_percent"] < 3
            holds0 = j["interval"] is not None and j["interval"]["low_percent"] <= 0 <= j["interval"]["high_percent"]
            check(f"{arm['change']['id']} below 3 % or its interval holds 0", small or holds0,
                  f"{j['speedup_percent']:+.1f} % {j['interval']}")
    else:
        check("a change kept", bool(kept), f"kept: {kept or 'none'}")
        overall = report["overall"]
        if kept and overall:
            got, why = reproduce(report, a.runs, os.path.splitext(a.out or a.report)[0] + ".reproduce.log")
            result["reproduced"] = got
            if got is None:
                check("reproduced", False, why)
            else:
                diff = got["speedup_percent"] - overall["speedup_percent"]
                check(f"reproduced within {a.tolerance:g} points", abs(diff) <= a.tolerance,
                      f"gpudoc {overall['speedup_percent']:+.1f} %, independent runs {got['speedup_percent']:+.1f} % "
                      f"({diff:+.1f} points; {got['samples']} samples)")
                if len(got["per_run_speedup_percent"]) > 1:
                    runs = got["per_run_speedup_percent"]
                    print(f"INFO each run pair on its own: {', '.join(f'{x:+.1f} %' for x in runs)} "
                          f"(spread {max(runs) - min(runs):.1f} points)")
                if a.min_speedup is not None:
                    check(f"at least {a.min_speedup:g} % faster", got["speedup_percent"] >= a.min_speedup and
                          overall["speedup_percent"] >= a.min_speedup,
                          f"gpudoc {overall['speedup_percent']:+.1f} %, independent {got['speedup_percent']:+.1f} %")
    result["checks"] = checks
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)
    return 0 if all(c["pass"] for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
