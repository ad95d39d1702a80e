#!/usr/bin/env python3
"""Diagnose every recorded real job of a folder (tests/data/jobs/test or tune) in both forms
(the gpudoc trace and the nvidia-smi CSV of the same run) and check the findings against what
the recording's manifest says a correct diagnosis names. A folder of plain programs
(tests/data/programs/*, tools/record_programs.sh) has a third form: the nvidia-smi CSV without
power.limit and name (`csv_nolimit`), and its truth in NAME.truth.json.

    tools/evaluate_jobs.py DIR [DIR...] [--gpudoc BIN] [--markdown FILE] [--json FILE]
    tools/evaluate_jobs.py DIR --live      # judge the JSON of a live run (tools/diagnose_jobs.sh)

A row is right when every expected finding is named (at any severity) and nothing else reaches
warning or above, apart from the ids the manifest allows (`not_wrong`). A finding that says it
cannot tell two causes apart (`details.undecided_between`, naming the command that decides) counts
for either. Expected severity
(`expect_severity=` in the job's key) and the sawtooth period (checked within 10 % against the
job's own step lines where the job's key gives it) are reported and checked too, and so is the
straggler of a pulse (`straggler=N`: GPU N must be named; `straggler=none`: no pulse at all). CSV rows whose
pattern CSV cannot show (expected "-") only check that no wrong finding reaches warning.

Exit status: 0 all rows right, 1 some row wrong, 2 bad usage or a missing file.
"""
import argparse
import json
import os
import re
import subprocess
import sys

SEVERITY_RANK = {"info": 0, "warning": 1, "critical": 2}


def job_log_truth(log_path):
    """What the job itself measured: mean step_ms and the end line's gpu_busy_share."""
    steps, busy, ckpt = [], None, []
    try:
        with open(log_path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.startswith("::gpudoc "):
                    continue
                try:
                    d = json.loads(line[len("::gpudoc "):])
                except ValueError:
                    continue
                if d.get("event") == "end":
                    busy = d.get("gpu_busy_share")
                elif "step_ms" in d:
                    steps.append(d)
                    if d.get("ckpt_ms"):
                        ckpt.append(d["ckpt_ms"])
    except OSError:
        pass
    return {"busy_share": busy, "ckpt_ms": (sum(ckpt) / len(ckpt)) if ckpt else None}


def program_truth(path):
    """A plain program's truth file (workloads/programs/_truth.py): the GPU busy share from its
    CUDA events (an upper bound) and the kernel busy share from CUPTI (what NVML counts)."""
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except (OSError, ValueError):
        return {"busy_share": None, "kernel_busy_share": None, "ckpt_ms": None}
    k = d.get("kernel_busy_share")
    return {"busy_share": d.get("gpu_busy_share"), "kernel_busy_share": k, "ckpt_ms": None}


FORMS = {"trace": ("trace", "expected"), "csv": ("csv", "expected_csv"),
         "csv_nolimit": ("csv_nolimit", "expected_csv_nolimit")}


def expected_for(job, form):
    return job[FORMS[form][1]] if form in FORMS else job["expected"]


def key_values(key):
    out = {}
    for word in key.split():
        if "=" in word:
            k, v = word.split("=", 1)
            out[k] = v
    return out


def diagnose(gpudoc, path):
    proc = subprocess.run([gpudoc, "diagnose", "--json", path], capture_output=True, text=True)
    try:
        return json.loads(proc.stdout), proc.returncode
    except ValueError:
        return None, proc.returncode


def expected_period_s(job, truth):
    kv = key_values(job.get("key", ""))
    p = kv.get("period_s")
    if not p or not p.endswith("+ckpt_ms") or truth["ckpt_ms"] is None:
        return None
    return float(p.split("+")[0]) + truth["ckpt_ms"] / 1000.0


def judge(job, form, result, truth):
    expected = expected_for(job, form)
    not_wrong = set(job.get("not_wrong", []))
    kv = key_values(job.get("key", ""))
    findings = result.get("findings", []) if result else []
    named = {f["id"] for f in findings}
    # A finding that names two causes it cannot tell apart (details.undecided_between, with the
    # command that decides) counts for either, and is wrong for neither.
    for f in findings:
        named |= set(f.get("details", {}).get("undecided_between", []))
    problems = []
    if result is None:
        return ["no JSON from gpudoc"], findings
    for e in expected:
        if e not in named:
            problems.append(f"missing {e}")
    for f in findings:
        if f["id"] in expected or f["id"] in not_wrong:
            continue
        if set(f.get("details", {}).get("undecided_between", [])) & set(expected):
            continue
        if SEVERITY_RANK.get(f["severity"], 0) >= 1:
            problems.append(f"wrong {f['id']} ({f['severity']})")
    want_sev = kv.get("expect_severity")
    if want_sev and expected:
        sev = [f["severity"] for f in findings if f["id"] == expected[0]]
        if sev and sev[0] != want_sev:
            problems.append(f"{expected[0]} {sev[0]}, expected {want_sev}")
    strag = kv.get("straggler")
    pulses = [f for f in findings if f["id"] == "pulse"]
    if strag == "none" and pulses:
        problems.append("a pulse on a balanced run")
    elif strag is not None and strag.isdigit() and "pulse" in expected:
        named_gpus = {s.get("gpu") for f in pulses for s in f.get("details", {}).get("straggler", [])}
        if pulses and int(strag) not in named_gpus:
            problems.append(f"straggler named {sorted(named_gpus)}, true {strag}")
    period = expected_period_s(job, truth)
    if period and "sawtooth" in expected:
        for f in findings:
            if f["id"] != "sawtooth":
                continue
            ev = {e["name"]: e["value"] for e in f.get("evidence", [])}
            got = ev.get("period_s")
            if got is not None and abs(got - period) > 0.1 * period:
                problems.append(f"period {got:.2f} s, true {period:.2f} s")
    return problems, findings


def short(findings):
    out = []
    for f in findings:
        gpus = ",".join(str(g) for g in f.get("gpus", []))
        other = [u for u in f.get("details", {}).get("undecided_between", []) if u != f["id"]]
        ident = f["id"] + "".join("|" + u for u in other)  # "plateau|sawtooth": undecided between them
        out.append(f"{ident}({f['severity'][0]}{'@' + gpus if gpus else ''})")
    return " ".join(out) or "(none)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--gpudoc", default=os.environ.get("GPUDOC", "build/src/cli/gpudoc"))
    ap.add_argument("--markdown")
    ap.add_argument("--json")
    ap.add_argument("--only", help="only jobs whose name matches this regular expression")
    ap.add_argument("--live", action="store_true",
                    help="judge the diagnosis JSON each job of the manifest names (a live run); no CSV")
    a = ap.parse_args()
    if not a.live and not os.access(a.gpudoc, os.X_OK):
        print(f"evaluate_jobs.py: no gpudoc binary at {a.gpudoc} (--gpudoc BIN)", file=sys.stderr)
        return 2
    rows = []
    for d in a.dirs:
        manifests = sorted(p for p in os.listdir(d) if p.startswith("manifest") and p.endswith(".json"))
        if not manifests:
            print(f"evaluate_jobs.py: no manifest*.json in {d}", file=sys.stderr)
            return 2
        for m in manifests:
            manifest = json.load(open(os.path.join(d, m)))
            for job in manifest.get("jobs", manifest.get("programs", [])):
                if a.only and not re.search(a.only, job["name"]):
                    continue
                if "truth" in job:
                    truth = program_truth(os.path.join(d, job["truth"]))
                else:
                    truth = job_log_truth(os.path.join(d, job["log"]))
                if a.live:
                    forms = (("live", job.get("diagnosis")),)
                else:
                    forms = tuple((form, job[field]) for form, (field, _) in FORMS.items() if field in job)
                for form, fname in forms:
                    path = os.path.join(d, fname or "")
                    if not fname or not os.path.exists(path):
                        print(f"evaluate_jobs.py: {path} is missing", file=sys.stderr)
                        return 2
                    if a.live:
                        try:
                            with open(path) as f:
                                result = json.load(f)
                        except ValueError:
                            result = None
                    else:
                        result, _ = diagnose(a.gpudoc, path)
                    problems, findings = judge(job, form, result, truth)
                    expected = expected_for(job, form)
                    rows.append({"job": job["name"], "split": job["split"], "form": form,
                                 "expected": expected or ["(not visible)"],
                                 "named": short(findings), "ok": not problems,
                                 "problems": problems, "busy_share": truth["busy_share"],
                                 "kernel_busy_share": truth.get("kernel_busy_share")})
    for r in rows:
        print(f"{r['job']:22} {r['form']:11} {'ok ' if r['ok'] else 'BAD'} expect "
              f"{','.join(r['expected']):14} got {r['named']}"
              + (f"  <- {'; '.join(r['problems'])}" if r["problems"] else ""))
    good = sum(r["ok"] for r in rows)
    print(f"{good} of {len(rows)} rows right")
    if a.markdown:
        with open(a.markdown, "w") as f:
            kernels = any(r.get("kernel_busy_share") is not None for r in rows)
            f.write("| job | form | expected | gpudoc named | job's busy share |"
                    + (" kernels' busy share |" if kernels else "") + " verdict |\n")
            f.write("|---|---|---|---|---|" + ("---|" if kernels else "") + "---|\n")
            for r in rows:
                busy = "" if r["busy_share"] is None else f"{r['busy_share']:.2f}"
                if kernels:
                    k = r.get("kernel_busy_share")
                    busy += " | " + ("" if k is None else f"{k:.2f}")
                verdict = "ok" if r["ok"] else "**wrong**: " + "; ".join(r["problems"])
                f.write(f"| {r['job']} | {r['form']} | {', '.join(r['expected'])} | "
                        f"{r['named']} | {busy} | {verdict} |\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if good == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
