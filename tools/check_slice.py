#!/usr/bin/env python3
"""Reads what tools/slice_checks.sh left in OUTDIR and prints PASS, FAIL or NOT RUN for each item
of docs/results/slice.md it covers, with the figures behind it. Exit 0 when nothing failed, 1 otherwise.

    python3 tools/check_slice.py OUTDIR
"""
import json
import os
import sys

OOM = "torch.OutOfMemoryError"


def lines(path):
    try:
        with open(path, encoding="utf-8") as f:
            return [json.loads(l) for l in f if l.strip().startswith("{")]
    except (OSError, ValueError):
        return []


def text(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


def size_bytes(s):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    return int(float(s[:-1]) * units[s[-1].upper()]) if s and s[-1].upper() in units else int(s)


def launch_medians(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    found = {}

    def walk(x):
        if isinstance(x, dict):
            if str(x.get("key", "")).startswith("launch.") and isinstance(x.get("median"), (int, float)):
                found[x["key"]] = x["median"]
            for v in x.values():
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(doc)
    return found


def check_oom(out, name, cap, results):
    got = lines(os.path.join(out, name + ".jsonl"))
    if not got:
        results.append(("FAIL", f"{name}: no result line; stderr: {text(os.path.join(out, name + '.err'))[-300:]}"))
        return
    r = got[-1]
    free, total = r["mem_get_info"]
    ok_oom = r["oom"] == OOM and r["allocated"] <= cap and r["allocated"] >= cap - (1 << 30)
    results.append(("PASS" if ok_oom else "FAIL",
                    f"{name} ({r['allocator']}): {r['oom']} after {r['allocated'] / 2**30:.2f} GiB of a "
                    f"{cap / 2**30:.2f} GiB slice: {r['message'][:160]}"))
    ok_info = total == cap and free <= cap
    results.append(("PASS" if ok_info else "FAIL",
                    f"{name}: torch.cuda.mem_get_info() = free {free / 2**30:.2f} GiB, total {total / 2**30:.2f} GiB; "
                    f"device total_memory {r['device_total'] / 2**30:.2f} GiB; matmul ran: {r['matmul_ok']}"))


def check_shared(out, cap, results):
    got = {r.get("role"): r for r in lines(os.path.join(out, "shared.jsonl"))}
    parent, child = got.get("parent"), got.get("child")
    if not parent or not child:
        results.append(("FAIL", "shared budget: no result lines; " + text(os.path.join(out, "shared.err"))[-300:]))
        return
    ok = parent["oom"] is None and child["oom"] == OOM and parent["allocated"] + child["allocated"] <= cap
    results.append(("PASS" if ok else "FAIL",
                    f"shared budget: parent holds {parent['allocated'] / 2**30:.2f} GiB, a spawned child got "
                    f"{child['allocated'] / 2**30:.2f} GiB more, then {child['oom']} (cap {cap / 2**30:.2f} GiB)"))


def check_launch(out, results):
    plain, sliced = {}, {}
    for i in (1, 2):
        for key, v in launch_medians(os.path.join(out, f"launch_plain_{i}.json")).items():
            plain[key] = min(plain.get(key, v), v)
        for key, v in launch_medians(os.path.join(out, f"launch_slice_{i}.json")).items():
            sliced[key] = min(sliced.get(key, v), v)
    if not plain or not sliced:
        results.append(("FAIL", "launch cost: no bench results; " + text(os.path.join(out, "launch_slice_1.err"))[-300:]))
        return
    for key in sorted(plain):
        if key not in sliced:
            continue
        delta = sliced[key] - plain[key]
        results.append(("PASS" if delta <= 1.0 else "FAIL",
                        f"{key}: {plain[key]:.3f} us without the slice, {sliced[key]:.3f} us with it "
                        f"(+{delta:.3f} us; bound 1 us; best median of 2 runs each)"))


def pmon_shares(path):
    """pid -> the SM % samples nvidia-smi pmon printed for it."""
    shares = {}
    for line in text(path).splitlines():
        f = line.split()
        if len(f) < 4 or line.startswith("#") or not f[1].isdigit():
            continue
        if f[3].isdigit():
            shares.setdefault(int(f[1]), []).append(int(f[3]))
    return shares


def end_line(path):
    return next((r for r in lines(path) if r.get("event") == "end"), None)


def check_compute(out, results, prefix=""):
    """The caps side by side, judged on the work each job did: its throughput against the same job alone
    (the share of the GPU it got, whatever the mechanism). pmon's per-process SM % (NVML's figure, the
    one the interception library's loop controls; none under MPS) is reported beside it."""
    shares = pmon_shares(os.path.join(out, prefix + "pmon_caps.txt"))
    alone = end_line(os.path.join(out, prefix + "train_alone.jsonl")) or end_line(os.path.join(out, "train_alone.jsonl"))
    path = "under MPS" if prefix else "interception library"
    for label, cap in (("sm30", 30), ("sm60", 60)):
        got = lines(os.path.join(out, prefix + label + ".jsonl"))
        start = next((r for r in got if r.get("event") == "start"), None)
        end = next((r for r in got if r.get("event") == "end"), {})
        if start is None:
            results.append(("FAIL", f"{path} --sm {cap}: the job did not start: "
                            + text(os.path.join(out, prefix + label + ".err"))[-300:]))
            continue
        samples = shares.get(start["pid"], [])[3:]  # the first seconds are start-up
        rate = end.get("steps_per_s", 0)
        tput = 100 * rate / alone["steps_per_s"] if alone and alone.get("steps_per_s") else None
        tput_text = f"{tput:.1f} % of the job's throughput alone" if tput is not None else "no reference run"
        pm = (f"pmon SM mean {sum(samples) / len(samples):.1f} % over {len(samples)} s (min {min(samples)}, "
              f"max {max(samples)})") if samples else "pmon: no SM samples"
        figure = tput
        if figure is None:
            results.append(("FAIL", f"{path} --sm {cap} beside the other: {pm}; {tput_text}"))
            continue
        results.append(("PASS" if abs(figure - cap) <= 5 else "FAIL",
                        f"{path} --sm {cap} beside the other: {pm}; {rate:.1f} steps/s, {tput_text} "
                        f"(judged on throughput; bound ±5 points)"))
    # where each slice's window started in the period (slice list while both ran; interception only)
    try:
        with open(os.path.join(out, prefix + "list_caps.json")) as f:
            listed = json.load(f).get("slices", [])
        windows = [f"{x['name']}: {x['sm_percent']} % from {x['sm_window_start_percent']} %" for x in listed
                   if x.get("sm_window_start_percent") is not None]
        if windows:
            print(f"INFO    {path}: the slices' parts of the period: " + "; ".join(windows))
    except (OSError, ValueError):
        pass


def check_alone(out, results):
    """--sm 30 with the job alone on the GPU: its throughput against the same job uncapped."""
    start = next((r for r in lines(os.path.join(out, "alone30.jsonl")) if r.get("event") == "start"), None)
    end = end_line(os.path.join(out, "alone30.jsonl"))
    alone = end_line(os.path.join(out, "train_alone.jsonl"))
    if not end or not alone or not alone.get("steps_per_s"):
        results.append(("FAIL", "interception library --sm 30 alone on the GPU: missing runs; "
                        + text(os.path.join(out, "alone30.err"))[-300:]))
        return
    samples = pmon_shares(os.path.join(out, "alone_pmon.txt")).get(start["pid"], [])[3:] if start else []
    pm = f"pmon SM mean {sum(samples) / len(samples):.1f} % over {len(samples)} s" if samples else "pmon: no samples"
    tput = 100 * end["steps_per_s"] / alone["steps_per_s"]
    results.append(("PASS" if abs(tput - 30) <= 5 else "FAIL",
                    f"interception library --sm 30 alone on the GPU: {pm}; {end['steps_per_s']:.1f} steps/s, "
                    f"{tput:.1f} % of the job's throughput uncapped (bound ±5 points)"))


def check_infer(out, results, prefix=""):
    p99 = {}
    for name in ("alone", "beside", "sm30"):
        end = end_line(os.path.join(out, f"{prefix}infer_{name}.jsonl"))
        p99[name] = end["p99_ms"] if end else None
    path = "under MPS" if prefix else "interception library"
    if None in p99.values():
        results.append(("FAIL", f"{path}: inference p99: missing runs {p99}"))
        return
    bound = 2 * p99["alone"]
    results.append(("PASS" if p99["sm30"] <= bound else "FAIL",
                    f"{path}: inference p99 {p99['alone']:.2f} ms alone, {p99['beside']:.2f} ms beside an uncapped "
                    f"training job, {p99['sm30']:.2f} ms beside one in a --sm 30 slice (bound: 2 x alone = {bound:.2f} ms)"))


def check_copy(out, results):
    free = {r["kind"]: r for r in lines(os.path.join(out, "copy_free.jsonl"))}
    capped = {r["kind"]: r for r in lines(os.path.join(out, "copy_capped.jsonl"))}
    if not free or not capped:
        results.append(("FAIL", "--pcie 4G: missing runs; " + text(os.path.join(out, "copy_capped.err"))[-300:]))
        return
    for kind in sorted(free):
        got = capped.get(kind)
        if got is None:
            results.append(("FAIL", f"--pcie 4G {kind}: no line under the cap"))
            continue
        # 4G is 4 GiB a second; the gate admits a 50 ms burst more over the run. A kind of copy whose
        # own rate is below the cap is held to nothing: then it must keep that rate.
        cap = 4 * 2**30 / 1e9
        expect = min(cap, free[kind]["gb_per_s"])
        ok = cap * 1.05 >= got["gb_per_s"] >= expect * 0.8
        results.append(("PASS" if ok else "FAIL",
                        f"--pcie 4G {kind}: {got['gb_per_s']:.2f} GB/s under the cap ({cap:.2f} GB/s), "
                        f"{free[kind]['gb_per_s']:.2f} GB/s without it (best effort; bound: 80 % of the lower "
                        f"of the two to 105 % of the cap)"))


def memory_checks(out, cap, results):
    check_oom(out, "native", cap, results)
    check_oom(out, "async", cap, results)
    check_shared(out, cap, results)
    listed = text(os.path.join(out, "list.json"))
    results.append(("PASS" if '"name": "listed"' in listed and '"used_bytes": 1' in listed else "FAIL",
                    "slice list --json shows a running job and its bytes"))
    rc = text(os.path.join(out, "too_big.rc"))
    results.append(("PASS" if rc == "2" else "FAIL", f"--mem 100T: exit {rc}: {text(os.path.join(out, 'too_big.err'))}"))


def main():
    out = sys.argv[1]
    cap = size_bytes(text(os.path.join(out, "mem.txt")) or "20G")
    results = []
    groups = set((text(os.path.join(out, "groups.txt")) or "memory launch compute alone infer copy mps").split())
    if "memory" in groups:
        memory_checks(out, cap, results)
    if "launch" in groups:
        check_launch(out, results)
    if "compute" in groups:
        check_compute(out, results)
    if "alone" in groups:
        check_alone(out, results)
    if "infer" in groups:
        check_infer(out, results)
    if "copy" in groups:
        check_copy(out, results)
    mps = text(os.path.join(out, "mps_start.txt"))
    if "mps" not in groups:
        pass
    elif os.path.exists(os.path.join(out, "mps.jsonl")):
        r = (lines(os.path.join(out, "mps.jsonl")) or [{}])[-1]
        ok = r.get("oom") == OOM and r.get("allocated", 1 << 62) <= 8 << 30
        results.append(("PASS" if ok else "FAIL", f"MPS: daemon started; slice --mem 8G --sm 30 under MPS: {r}"))
        check_compute(out, results, "mps_")
        check_infer(out, results, "mps_")
    else:
        results.append(("NOT RUN", f"MPS: the control daemon could not be started here: {mps[-300:]}"))
    for verdict, what in results:
        print(f"{verdict:7} {what}")
    return 1 if any(v == "FAIL" for v, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())
