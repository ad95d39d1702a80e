#!/usr/bin/env python3
"""Whether `gpudoc baseline check` passes an unchanged job and catches a slower one, on a GPU.

    tools/gate_checks.py --gpudoc BIN --store DB --out DIR record [--steps N] [--job-args "--batch-size 4096"]
    tools/gate_checks.py --gpudoc BIN --store DB --out DIR unchanged --count 20 [--deadline SECONDS]
    tools/gate_checks.py --gpudoc BIN --store DB --out DIR slower --count 10 --fraction 0.10 [--steps N]
    tools/gate_checks.py --out DIR summary

The job is workloads/train_steps.py (a fixed number of steps, no ::gpudoc lines: the gate sees
gpudoc's own figures). `record` stores baseline NAME (default `train_steps`) with gpudoc's
default golden runs; `unchanged` checks it COUNT times as recorded; `slower` checks it COUNT
times with every step FRACTION slower (a command the checks then do not learn noise from).
Each check's --json goes to DIR/NAME-KIND-K.json and a row to DIR/checks.tsv; `summary` prints
per kind the exit codes and, per figure, the verdicts and the range of changes and bounds.
A check run continues the numbering of DIR/checks.tsv, so the same command run again (say, on a
machine lent for ten minutes at a time, with --deadline below that) goes on until COUNT checks of
that kind are in the table; --deadline stops before a check that would end past SECONDS.
Exit 0 when every step ran (whatever the verdicts: the summary says them), 1 otherwise.
"""
import argparse
import collections
import json
import os
import shlex
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURES = ("wall_s", "startup_s", "gpu_active_s", "gpu_energy_joules", "gpu_memory_peak_bytes")


def job(args, slower=0.0):
    cmd = [sys.executable, os.path.join(REPO, "workloads", "train_steps.py"), "--steps", str(args.steps)]
    cmd += shlex.split(args.job_args)
    if slower > 0:
        cmd += ["--slower", str(slower)]
    return cmd


def run(argv, log):
    t0 = time.time()
    with open(log, "ab") as err:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=err, check=False)
    return p.returncode, p.stdout.decode("utf-8", "replace"), time.time() - t0


def done_checks(tsv, kind):
    if not os.path.exists(tsv):
        return 0
    with open(tsv, encoding="utf-8") as f:
        next(f, None)
        ks = [int(line.split("\t")[1]) for line in f if line.split("\t")[0] == kind]
    return max(ks, default=0)


def check(args, kind, count, slower):
    tsv = os.path.join(args.out, "checks.tsv")
    new = not os.path.exists(tsv)
    start, began, longest = done_checks(tsv, kind) + 1, time.time(), 0.0
    with open(tsv, "a", encoding="utf-8") as rows:
        if new:
            rows.write("kind\tk\texit\tverdict\twall_s\tfigure\tchange_percent\tbound_percent\tfigure_verdict\n")
        for k in range(start, count + 1):
            if args.deadline and time.time() - began + 1.2 * longest > args.deadline:
                print(f"{kind}: stopped before check {k} to end within {args.deadline:.0f} s; "
                      "run the same command again to go on", file=sys.stderr)
                break
            argv = [args.gpudoc, "baseline", "check", args.name, "--store", args.store, "--json"]
            if slower > 0:
                argv += ["--"] + job(args, slower)
            rc, out, wall = run(argv, os.path.join(args.out, f"{args.name}-{kind}.log"))
            longest = max(longest, wall)
            with open(os.path.join(args.out, f"{args.name}-{kind}-{k}.json"), "w", encoding="utf-8") as f:
                f.write(out)
            try:
                doc = json.loads(out)
            except ValueError:
                print(f"{kind} {k}: exit {rc}, no JSON on stdout (see {args.name}-{kind}.log)", file=sys.stderr)
                rows.write(f"{kind}\t{k}\t{rc}\tno_json\t{wall:.1f}\t\t\t\t\n")
                continue
            figs = {f["name"]: f for f in doc.get("figures", [])}
            for name in FIGURES:
                f = figs.get(name)
                if f is None:
                    continue
                ch = f.get("change_percent")
                rows.write(f"{kind}\t{k}\t{rc}\t{doc.get('verdict')}\t{wall:.1f}\t{name}\t"
                           f"{'' if ch is None else f'{ch:.2f}'}\t{f.get('bound_percent', 0):.2f}\t"
                           f"{f.get('verdict')}\n")
            rows.flush()
            print(f"{kind} {k}/{count}: exit {rc}, {doc.get('verdict')} ({wall:.0f} s)", file=sys.stderr)


def summary(args):
    tsv = os.path.join(args.out, "checks.tsv")
    exits = collections.defaultdict(dict)
    figs = collections.defaultdict(list)
    with open(tsv, encoding="utf-8") as f:
        next(f)
        for line in f:
            kind, k, rc, verdict, _wall, name, ch, bound, fv = line.rstrip("\n").split("\t")
            exits[kind][k] = (rc, verdict)
            if name:
                figs[(kind, name)].append((float(ch) if ch else None, float(bound), fv))
    for kind, runs in exits.items():
        codes = collections.Counter(rc for rc, _ in runs.values())
        print(f"{kind}: {len(runs)} checks, exit codes " + ", ".join(f"{c}: {n}" for c, n in sorted(codes.items())))
        for (k2, name), vals in sorted(figs.items()):
            if k2 != kind:
                continue
            ch = [c for c, _, _ in vals if c is not None]
            bounds = [b for _, b, _ in vals]
            verdicts = collections.Counter(v for _, _, v in vals)
            print(f"  {name:24s} change {min(ch):+.1f} .. {max(ch):+.1f} %   bound {min(bounds):.1f} .. "
                  f"{max(bounds):.1f} %   " + ", ".join(f"{v}: {n}" for v, n in verdicts.most_common()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpudoc", default=os.path.join(REPO, "build-portable", "src", "cli", "gpudoc"))
    ap.add_argument("--store", help="the baseline store (a file)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--name", default="train_steps")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--job-args", default="", help="more arguments for train_steps.py (\"--batch-size 4096\")")
    ap.add_argument("what", choices=("record", "unchanged", "slower", "summary"))
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--fraction", type=float, default=0.10)
    ap.add_argument("--deadline", type=float, default=0.0,
                    help="seconds: start no check that would end later (checks go on in the next run)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.what == "summary":
        summary(args)
        return 0
    if not args.store:
        ap.error("--store is needed to record or check")
    if args.what == "record":
        rc, out, wall = run([args.gpudoc, "baseline", "record", args.name, "--store", args.store, "--json", "--"]
                            + job(args), os.path.join(args.out, f"{args.name}-record.log"))
        with open(os.path.join(args.out, f"{args.name}-record.json"), "w", encoding="utf-8") as f:
            f.write(out)
        print(f"record: exit {rc} ({wall:.0f} s)", file=sys.stderr)
        return 0 if rc == 0 else 1
    check(args, args.what, args.count, args.fraction if args.what == "slower" else 0.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
