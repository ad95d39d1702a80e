#!/usr/bin/env python3
"""Reads what tools/profile_checks.sh left in OUTDIR and prints PASS or FAIL (or MISSING) for each
item of the profile checks (docs/results/profile.md), with the figures behind it. Exit 0 when every item passes.

    python3 tools/profile_check.py OUTDIR
"""
import json
import os
import re
import statistics
import sys


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def measured(path):
    """The ::gpudoc line of a workload's own output."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("::gpudoc "):
                    return json.loads(line[len("::gpudoc "):])
    except OSError:
        pass
    return None


def idle_share(p, cause):
    idle = sum(p["idle_ns"].values())
    return p["idle_ns"][cause] / idle if idle else 0.0


class Checks:
    def __init__(self, out):
        self.out = out
        self.failed = 0

    def item(self, name, ok, detail):
        word = "MISSING" if ok is None else ("PASS" if ok else "FAIL")
        if ok is not True:
            self.failed += 1
        print(f"{word:7} {name}: {detail}")

    def profile(self, name):
        return load_json(os.path.join(self.out, name + ".json"))


def check_graph_advice(c):
    for name in ("tiny", "small"):
        prof, graph = c.profile(name), measured(os.path.join(c.out, name + "-graph.plain.txt"))
        eager = measured(os.path.join(c.out, name + ".plain.txt"))
        what = f"{name} kernels: graphs recommended, prediction within 30 %"
        if not prof or not graph:
            c.item(what, None, "no data")
            continue
        g = prof["cuda_graphs"]
        predicted, real = g["predicted_step_ns"] / 1e6, graph["step_ms_mean"]
        err = abs(predicted - real) / real
        c.item(what, g["verdict"] == "recommend" and err <= 0.30,
               f"verdict {g['verdict']}, predicted {predicted:.3f} ms, measured as a graph {real:.3f} ms "
               f"({100 * err:.0f} % off); eager {eager['step_ms_mean'] if eager else '?'} ms alone, "
               f"{g['step_ns'] / 1e6:.3f} ms profiled; busy {prof['busy_ns'] / max(1, prof['steps']) / 1e6:.3f} ms "
               f"per step, {g['kernels_per_step']} kernels")
    for name, want, blocker in (("gemm", "advise_against", None), ("item", "fix_first", "sync"),
                                ("dynamic", "fix_first", "dynamic_shapes")):
        p = c.profile(name)
        if not p:
            c.item(f"{name}: {want}", None, "no data")
            continue
        g = p["cuda_graphs"]
        first = g["fix_first"][0]["what"] if g["fix_first"] else None
        ok = g["verdict"] == want and (blocker is None or first == blocker)
        c.item(f"{name}: {want}" + (f" naming {blocker}" if blocker else ""), ok,
               f"verdict {g['verdict']}, fix first {first}, launch share {g['launch_share']:.2f}")


def check_attribution(c):
    for name, cause, floor in (("starved", "host", 0.8), ("sync", "sync", 0.5), ("launch", "launch", 0.5),
                               ("tiny", "launch", 0.5)):
        p = c.profile(name)
        if not p:
            c.item(f"{name}: idle attributed to {cause}", None, "no data")
            continue
        share = idle_share(p, cause)
        shares = ", ".join(f"{k} {idle_share(p, k):.2f}" for k in p["idle_ns"])
        c.item(f"{name}: >= {floor:.0%} of idle attributed to {cause}", share >= floor, shares)


def runs(c, pattern):
    """The step_ms_median of each round's ::gpudoc line, files named by pattern.format(round)."""
    found = []
    for i in range(1, 10):
        m = measured(os.path.join(c.out, pattern.format(i)))
        if m:
            found.append(m["step_ms_median"])
    return found


def check_overhead(c, step, bound):
    """Best round against best round (a slow spell of the host only ever adds time), gpudoc and
    torch.profiler (CUDA activities only) on the same step."""
    plain, profiled = runs(c, step + ".plain.{}.txt"), runs(c, step + ".{}.log")
    name = f"overhead on a real training step ({step}, {bound}) <= 5 %"
    if not plain or not profiled:
        c.item(name, None, f"plain {plain}, profiled {profiled}")
        return
    a, b = min(plain), min(profiled)
    torch_side = runs(c, step + ".torch.{}.txt")
    also = f"; torch.profiler {min(torch_side):.3f} ms ({100 * (min(torch_side) - a) / a:+.1f} %)" if torch_side else ""
    c.item(name, (b - a) / a <= 0.05,
           f"best median step {a:.3f} ms alone, {b:.3f} ms profiled ({100 * (b - a) / a:+.1f} %){also}; "
           f"rounds {plain} / {profiled} / {torch_side}")


def check_sampled(c, step, what):
    """--sample 1:9 over a whole run: the program's mean step (its wall time over its steps) against the
    same program alone, best round against best round; and what gpudoc itself measured tracing to cost
    (traced steps against the steps between its windows)."""
    plain, sampled = [], []
    selfs, runs_self = [], []
    for i in range(1, 10):
        a = measured(os.path.join(c.out, f"sample.{step}.plain.{i}.txt"))
        b = measured(os.path.join(c.out, f"sample.{step}.{i}.log"))
        if a:
            plain.append(a["step_ms_mean"])
        if b:
            sampled.append(b["step_ms_mean"])
        p = load_json(os.path.join(c.out, f"sample.{step}.{i}.json"))
        if p and p.get("sampling", {}).get("overhead") is not None:
            selfs.append(p["sampling"]["overhead"])
        if p and p.get("sampling", {}).get("run_overhead") is not None:
            runs_self.append(p["sampling"]["run_overhead"])
    name = f"sampled (--sample 1:9) whole run of {what}: <= 5 % added mean step time"
    if not plain or not sampled:
        c.item(name, None, f"plain {plain}, sampled {sampled}")
        return
    a, b = min(plain), min(sampled)
    c.item(name, (b - a) / a <= 0.05,
           f"best mean step {a:.3f} ms alone, {b:.3f} ms sampled ({100 * (b - a) / a:+.1f} %); rounds {plain} / "
           f"{sampled}; gpudoc's own measure of what tracing cost a traced step: "
           f"{', '.join(f'{100 * x:+.1f} %' for x in selfs) or 'none'}; and to the whole run (its mean step "
           f"against its mean untraced step): {', '.join(f'{100 * x:+.1f} %' for x in runs_self) or 'not reported'}")


def check_sampled_records(c):
    """The sampled profiles themselves: every one holds API calls, and none says a traced window that
    ran work came back without kernel records or without API calls (an H200 run once passed the cost
    item with sampled ResNet-50 profiles holding no API call at all)."""
    found, bad = 0, []
    for step in ("train", "train-resnet"):
        for i in range(1, 10):
            p = load_json(os.path.join(c.out, f"sample.{step}.{i}.json"))
            if not p:
                continue
            found += 1
            gaps = [w for w in p.get("warnings", []) if "no kernel records" in w or "no API calls" in w]
            if p.get("api_calls", 0) == 0 or gaps:
                bad.append(f"{step} round {i}: {p.get('api_calls', 0)} API calls; {'; '.join(gaps) or 'no gap named'}")
    name = "sampled profiles hold kernels and API calls in every traced window that ran work"
    if not found:
        c.item(name, None, "no data")
        return
    c.item(name, not bad, "; ".join(bad) or f"{found} profiles whole")


def report_kinds(c):
    """What each CUPTI activity kind costs the host-bound step (the kinds group): figures, not items.
    Each round's profiled median over the same round's plain one, the median of those ratios."""
    plain = runs(c, "kinds.plain.{}.txt")
    if not plain:
        return
    for k in ("base", "sync", "graph", "marker", "memcpy,memset"):
        ratios = [m["step_ms_median"] / plain[i - 1] for i in range(1, len(plain) + 1)
                  if (m := measured(os.path.join(c.out, f"kinds.{k}.{i}.log")))]
        if ratios:
            what = "kernels and API calls" if k == "base" else f"kernels, API calls and {k}"
            print(f"        {what}: {100 * (statistics.median(ratios) - 1):+.1f} % on the host-bound step "
                  f"(median of {len(ratios)} rounds' ratios to the plain run of the same round)")


def check_torch_profiler(c):
    torch_side, p = measured(os.path.join(c.out, "mixed.torch.txt")), c.profile("mixed")
    if not torch_side or not p:
        c.item("kernel count and time within 2 % of torch.profiler", None, "no data")
        return
    n, t = p["kernels"]["count"], p["kernels"]["total_ns"]
    tn, tt = torch_side["torch_profiler_kernels"], torch_side["torch_profiler_kernel_ns"]
    ok = abs(n - tn) <= 0.02 * tn and abs(t - tt) <= 0.02 * tt
    c.item("kernel count and time within 2 % of torch.profiler", ok,
           f"gpudoc {n} kernels {t / 1e6:.3f} ms; torch.profiler {tn} kernels {tt / 1e6:.3f} ms")


def check_reliability(c):
    exits = {}
    try:
        with open(os.path.join(c.out, "exits.txt")) as f:
            for line in f:
                m = re.match(r"(\S+): exit (\d+)", line)
                if m:
                    exits[m.group(1)] = int(m.group(2))
    except OSError:
        pass
    try:
        conflict = open(os.path.join(c.out, "conflict.txt")).read()
    except OSError:
        conflict = ""
    try:
        held = open(os.path.join(c.out, "held.txt")).read()
    except OSError:
        held = ""
    # CUPTI initializes the driver, which loads gpudoc's library first: the program's own subscriber
    # is the one refused (39, MULTIPLE_SUBSCRIBERS) and gpudoc's profile is whole. Where gpudoc's
    # library is the one refused, it says "already holds CUPTI" and gpudoc exits 3.
    refused_program = "cuptiSubscribe returned 39" in held and exits.get("held") == 0 and "kernels" in held
    refused_gpudoc = exits.get("held") == 3 and "already holds CUPTI" in held
    last = [l for l in held.splitlines() if "gpudoc" in l or "cuptiSubscribe" in l]
    # a group that did not run is MISSING, not FAIL
    ran = lambda name, ok: ok if name in exits else None  # noqa: E731
    c.item("another CUPTI subscriber in the program: one of the two refused, cleanly",
           ran("held", refused_program or refused_gpudoc),
           f"exit {exits.get('held')}; " + " | ".join(l[:160] for l in last[:2]))
    # Informational: torch.profiler started inside a program gpudoc already profiles gets no CUPTI
    # (kineto says so itself); gpudoc's own profile stays whole.
    kineto = "CUPTI initialization failed" in conflict
    if "conflict" in exits:
        print(f"INFO    torch.profiler inside a profiled program: gpudoc exit {exits.get('conflict')}, "
              f"kineto reports CUPTI unavailable: {kineto}")
    k = c.profile("killed")
    c.item("program stopped early: the profile stays readable", ran("killed", bool(k and k["kernels"]["count"] > 0)),
           f"exit {exits.get('killed')}, kernels {k['kernels']['count'] if k else None}, complete {k and k['complete']}")
    # An aborting program: gpudoc passes its status on (128 + SIGABRT), the profile is read, marked not
    # complete, and holds every kernel launched, the last a second before the abort (the library
    # flushes CUPTI's buffers every 0.5 s). The loop counts its add_ kernels; torch.zeros may add a fill.
    k, said = c.profile("crash"), measured(os.path.join(c.out, "crash.log"))
    launched = said.get("kernels_launched") if said else None
    got = k["kernels"]["count"] if k else None
    c.item("program crashes (abort): the profile stays readable with what was launched",
           ran("crash", bool(k and launched and exits.get("crash") == 134 and not k["complete"]
                             and launched <= got <= launched + 1)),
           f"exit {exits.get('crash')}, kernels {got} of {launched} launched, complete {k and k['complete']}")
    # A fork whose child uses no CUDA: one process profiled, every kernel of the parent, a clean exit.
    k, said = c.profile("fork"), measured(os.path.join(c.out, "fork.log"))
    launched = said.get("kernels_launched") if said else None
    got = k["kernels"]["count"] if k else None
    c.item("program forks: the parent's profile whole, the child's nothing",
           ran("fork", bool(k and launched and exits.get("fork") == 0 and k["complete"]
                            and launched <= got <= launched + 2 and k.get("processes_profiled") == 1)),
           f"exit {exits.get('fork')}, kernels {got} of {launched} launched, complete {k and k['complete']}, "
           f"processes {k and k.get('processes_profiled')}, child status {said and said.get('child_status')}")
    rss = []
    try:
        for line in open(os.path.join(c.out, "long_memory.txt")):
            m = re.search(r"gpudoc_rss_kib=(\d+) program_rss_kib=(\d+)", line)
            if m:
                rss.append((int(m.group(1)), int(m.group(2))))
    except OSError:
        pass
    long = c.profile("long")
    if len(rss) < 4 or not long:
        c.item("long run with memory bounded", None, f"{len(rss)} samples")
        return
    half = len(rss) // 2
    growth = max(r[1] for r in rss[half:]) - max(r[1] for r in rss[:half])
    c.item("long run with memory bounded", growth < 64 * 1024 and rss[-1][0] < 4 * 1024 * 1024,
           f"{len(rss) * 5} s, program RSS {rss[0][1] // 1024} -> {rss[-1][1] // 1024} MiB (second half grew "
           f"{growth // 1024} MiB), gpudoc RSS {rss[-1][0] // 1024} MiB, {long['kernels']['count']} kernels, "
           f"dropped {long['dropped_records']} (over the records file's bound: "
           f"{long.get('records_over_file_limit', 'not reported')}), the analysis spans {long['span_ns'] / 1e9:.1f} s")


def main():
    c = Checks(sys.argv[1])
    check_graph_advice(c)
    check_attribution(c)
    check_overhead(c, "train", "host-bound")
    check_overhead(c, "train-gpu", "GPU-bound")
    check_overhead(c, "train-resnet", "ResNet-50 at batch 128")
    check_sampled(c, "train", "the host-bound transformer")
    check_sampled(c, "train-resnet", "ResNet-50 at batch 128")
    check_sampled_records(c)
    report_kinds(c)
    check_torch_profiler(c)
    check_reliability(c)
    return 0 if c.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
