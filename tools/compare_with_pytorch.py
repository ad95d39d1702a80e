#!/usr/bin/env python3
"""gpudoc bench beside PyTorch on the same GPUs, in one run.

On a machine with one or more NVIDIA GPUs and python3 with torch, from anywhere:

    tools/compare_with_pytorch.py OUTDIR [--gpudoc BIN] [--device 0] [--gemm-rounds 3] [--skip-full]

runs, in this order,
  1. gpudoc bench --quick --json   (its wall clock: the one-GPU suite must take <= 60 s)
  2. gpudoc bench --full --json    (the figures compared; --skip-full compares the --quick ones)
  3. tools/pytorch/single_gpu.py   (PyTorch's figures, same method: CUDA events, warm-up, median)
  4. --gemm-rounds N interleaved rounds of the GEMMs alone: gpudoc, then PyTorch given gpudoc's
     timeline (single_gpu.py --match: as long at work before the samples, samples as many and as
     long), then PyTorch as in step 3. Under the H200's power cap a GEMM figure moves with the
     chip's recent history (the die warms, the clock falls: TF32 353 TFLOP/s after 1 s of matmuls,
     345 after 4.5 s), so the GEMM ">= PyTorch" check compares gpudoc with the matched PyTorch
     runs, median over the rounds; every round and the unmatched figure are shown.
  5. with two or more GPUs (--skip-multi-gpu leaves it out): gpudoc bench --only p2p,nccl --json
     beside tools/pytorch/collectives.py (PyTorch's NCCL all-reduce, all-gather and
     reduce-scatter, one process per GPU, timed the same way), NVLink multicast off.
and writes to OUTDIR:
  compare.md          the table: gpudoc vs PyTorch per figure, % of the datasheet, must-reach checks,
                      and with several GPUs the p2p matrices and the NCCL curves beside PyTorch's
  gpudoc_quick.json   gpudoc_full.json   torch.json   gemm_roundN_*.json   multi_gpu.json
  torch_collectives.json   env.txt (machine, driver, libraries, commit)   run.log (every command)
cuBLASLt is loaded at run time: LD_LIBRARY_PATH gets /usr/local/cuda-13.0/lib64 (and the targets/
folder) in front where they exist. gpudoc never changes a GPU setting, and neither does this tool.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PYTORCH = os.path.join(HERE, "pytorch")

# NVIDIA H200 SXM datasheet, dense (the tensor-core figures the datasheet prints are with 2:4
# sparsity: these are half of them). PCIe Gen5 x16: 64 GB/s each way.
DATASHEET = {
    "hbm": (4800.0, "GB/s", "HBM3e 4.8 TB/s"),
    "gemm.fp32": (67.0, "TFLOP/s", "FP32 67 TFLOPS"),
    "gemm.tf32": (494.7, "TFLOP/s", "TF32 989 sparse / 2"),
    "gemm.fp16": (989.4, "TFLOP/s", "FP16 1979 sparse / 2"),
    "gemm.bf16": (989.4, "TFLOP/s", "BF16 1979 sparse / 2"),
    "gemm.sweep.bf16": (989.4, "TFLOP/s", "BF16 1979 sparse / 2"),
    "gemm.fp8": (1978.9, "TFLOP/s", "FP8 3958 sparse / 2"),
    "pcie.bidir": (128.0, "GB/s", "PCIe Gen5 x16, both ways"),
    "pcie": (64.0, "GB/s", "PCIe Gen5 x16, one way"),
}
HEADLINE = {"hbm.copy", "hbm.read", "hbm.write", "gemm.fp32", "gemm.tf32", "gemm.fp16", "gemm.bf16", "gemm.fp8",
            "pcie.h2d.pinned", "pcie.d2h.pinned", "pcie.bidir.pinned", "launch.throughput"}


def datasheet(key):
    best = None
    for prefix, v in DATASHEET.items():
        if key == prefix or key.startswith(prefix + "."):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, v)
    return best[1] if best else None


def run(cmd, log, env, stdout_path=None, timeout=900):
    log.write(f"\n$ {' '.join(cmd)}\n")
    log.flush()
    t0 = time.monotonic()
    out = open(stdout_path, "w") if stdout_path else log
    try:
        p = subprocess.run(cmd, stdout=out, stderr=log, env=env, timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    except OSError as e:
        log.write(f"cannot run: {e}\n")
        rc = "not run"
    finally:
        if stdout_path:
            out.close()
    wall = time.monotonic() - t0
    log.write(f"exit {rc}, {wall:.1f} s\n")
    log.flush()
    return rc, wall


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def fmt(v, digits=None):
    if v is None:
        return "—"
    if digits is None:
        digits = 0 if abs(v) >= 100 else (1 if abs(v) >= 10 else 2)
    return f"{v:.{digits}f}"


def cv(r):
    return f"{r['cv'] * 100:.2f} %" if r and "cv" in r else "—"


GEMM_KEYS = ["gemm.fp32", "gemm.tf32", "gemm.fp16", "gemm.bf16", "gemm.fp8"]


def median(values):
    v = sorted(values)
    n = len(v)
    return None if n == 0 else (v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2)


def interleaved_figures(rounds):
    """{key: (gpudoc medians, matched PyTorch medians, unmatched PyTorch medians)} per round, from
    [(gpudoc json, matched torch json, unmatched torch json)]; a round without both of the first two
    for a key is left out of it, a missing unmatched figure is None."""
    out = {}
    for g, t, u in rounds:
        gres = {o["key"]: o.get("result") for o in (g or {}).get("results", []) if o.get("status") == "ok"}
        tres = (t or {}).get("results", {})
        ures = (u or {}).get("results", {})
        for key in GEMM_KEYS:
            gm = (gres.get(key) or {}).get("median")
            tm = (tres.get(key) or {}).get("median")
            if gm is not None and tm is not None:
                out.setdefault(key, ([], [], []))
                out[key][0].append(gm)
                out[key][1].append(tm)
                out[key][2].append((ures.get(key) or {}).get("median"))
    return out


def must_reach(key, g, t, interleaved=None):
    """The issue's must-reach checks that apply to this figure: list of (text, passed)."""
    checks = []
    if interleaved and key in interleaved:
        gs, ts, _ = interleaved[key]
        gm, tm = median(gs), median(ts)
        checks.append((f">= PyTorch on gpudoc's timeline over {len(gs)} interleaved rounds ({fmt(gm)} vs {fmt(tm)})", gm >= tm))
        t = None  # the single-run comparison is shown, not checked
    med = g["median"] if g else None
    tm = t.get("median") if t else None
    if key in HEADLINE and g:
        checks.append((f"CV {g['cv'] * 100:.2f} % <= 2 %", g["cv"] <= 0.02))
    if key == "hbm.copy" and med is not None:
        checks.append((f">= 88 % of 4800 GB/s", med >= 0.88 * 4800))
    if (key == "hbm.copy" or (key.startswith("gemm.") and not key.startswith("gemm.sweep."))) and med is not None and tm:
        checks.append((">= PyTorch", med >= tm))
    if key in ("pcie.h2d.pinned", "pcie.d2h.pinned") and med is not None:
        checks.append((">= 54 GB/s", med >= 54.0))
    return checks


def table(full, quick, torch, quick_wall, quick_rc, env_line, interleaved=None):
    lines = [f"# gpudoc bench beside PyTorch — {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC", "",
             env_line, ""]
    if full:
        m = full.get("machine", {})
        gpu = m.get("gpu") or {}
        nvml = m.get("nvml") or {}
        lines.append(f"GPU: {gpu.get('name', '?')} ({gpu.get('uuid', '?')}), driver {nvml.get('driver_version', '?')} "
                     f"(CUDA {nvml.get('cuda_driver_version', '?')}), runtime {gpu.get('runtime_version', '?')}, "
                     f"SM clock max {nvml.get('sm_clock_max_mhz', '?')} MHz, power limit {nvml.get('power_limit_watts', '?')} W")
        c = full.get("conditions") or {}
        if c:
            sm = c.get("sm_clock_mhz") or {}
            lines.append(f"During the full run: SM clock {fmt(sm.get('min'))}–{fmt(sm.get('max'))} MHz, "
                         f"clock-event reasons seen: {c.get('clock_event_reasons')}; full run {fmt(full.get('wall_seconds'), 1)} s")
    if torch:
        lines.append(f"PyTorch {torch.get('torch')} (CUDA {torch.get('cuda')}) on {torch.get('device')}")
    ok_quick = quick_rc == 0 and quick_wall <= 60
    lines += ["", f"**`gpudoc bench --quick`: {quick_wall:.1f} s wall clock, exit {quick_rc} "
                  f"(must reach: <= 60 s) — {'PASS' if ok_quick else 'FAIL'}**", ""]
    lines.append("| figure | unit | gpudoc (full) | CV | gpudoc (quick) | PyTorch | CV | gpudoc / PyTorch | datasheet | % of datasheet | SM MHz, slowdown (full) | must reach |")
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    qres = {r["key"]: r for r in (quick or {}).get("results", [])}
    tres = (torch or {}).get("results", {})
    waived = []
    failures = 0
    for o in (full or {}).get("results", []):
        key = o["key"]
        if o["status"] == "waived":
            waived.append(f"- `{key}`: {o.get('reason', '')}")
            continue
        g = o.get("result")
        q = (qres.get(key) or {}).get("result")
        t = tres.get(key) if isinstance(tres.get(key), dict) and "median" in tres.get(key, {}) else None
        unit = g["unit"] if g else ""
        ds = datasheet(key)
        ratio = f"{g['median'] / t['median'] * 100:.1f} %" if g and t and t["median"] else "—"
        pct = f"{g['median'] / ds[0] * 100:.1f} %" if g and ds else "—"
        cond = o.get("conditions") or {}
        sm = (cond.get("sm_clock_mhz") or {}).get("median")
        reasons = cond.get("clock_event_reasons")
        cond_text = f"{fmt(sm)}, {reasons}" if sm is not None else "—"
        checks = must_reach(key, g, t, interleaved)
        failures += sum(1 for _, passed in checks if not passed)
        check_text = "; ".join(f"{'✅' if passed else '❌'} {text}" for text, passed in checks)
        if o["status"] != "ok":
            check_text = f"❌ {o['status']}: {o.get('reason', '')} " + check_text
            failures += 1
        t_text = fmt(t["median"]) if t else "—"
        lines.append(f"| `{key}` | {unit} | {fmt(g['median']) if g else '—'} | {cv(g)} | {fmt(q['median']) if q else '—'} | "
                     f"{t_text} | {cv(t)} | {ratio} | {fmt(ds[0]) if ds else '—'} | {pct} | {cond_text} | {check_text} |")
    # PyTorch figures gpudoc has no row for, and PyTorch errors.
    have = {o["key"] for o in (full or {}).get("results", [])}
    for key, t in tres.items():
        if "error" in t:
            lines.append(f"| `{key}` (PyTorch) | | | | | error: {t['error']} | | | | | | |")
        elif key not in have:
            lines.append(f"| `{key}` (PyTorch only) | {t['unit']} | | | | {fmt(t['median'])} | {cv(t)} | | | | | |")
    if interleaved:
        lines += ["", "GEMM in interleaved rounds (gpudoc default mode; PyTorch on gpudoc's timeline; PyTorch as in its "
                  "own run, 1 s warm-up and 50 ms samples; per round, TFLOP/s medians):", "",
                  "| figure | gpudoc per round | PyTorch matched per round | PyTorch unmatched per round | gpudoc median | "
                  "PyTorch matched median | gpudoc / matched | PyTorch unmatched median | gpudoc / unmatched |",
                  "|---|---|---|---|---:|---:|---:|---:|---:|"]
        for key in GEMM_KEYS:
            if key in interleaved:
                gs, ts, us = interleaved[key]
                gm, tm = median(gs), median(ts)
                un = [x for x in us if x is not None]
                um = median(un) if un else None
                lines.append(f"| `{key}` | {', '.join(fmt(x) for x in gs)} | {', '.join(fmt(x) for x in ts)} | "
                             f"{', '.join(fmt(x) for x in us)} | {fmt(gm)} | {fmt(tm)} | {gm / tm * 100:.1f} % | "
                             f"{fmt(um)} | {(f'{gm / um * 100:.1f} %') if um else '—'} |")
    if waived:
        lines += ["", "Waived:"] + waived
    lines += ["", f"Must-reach checks failed: {failures + (0 if ok_quick else 1)}",
              "", "Datasheet: NVIDIA H200 SXM, dense tensor-core figures (the datasheet's are with 2:4 sparsity, "
              "halved here); HBM3e 4.8 TB/s; PCIe Gen5 x16 64 GB/s each way. GB/s = 1e9 bytes/s. "
              "Method and formulas: docs/methodology.md."]
    return "\n".join(lines) + "\n"


def fmt_bytes(b):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if b < 1024 or b % 1024:
            return f"{b} {unit}"
        b //= 1024
    return f"{b} TiB"


def multi_gpu_figures(bench):
    """The p2p and nccl rows of a `gpudoc bench --only p2p,nccl --json` run, and its GPU-pair matrices."""
    lines = ["| key | median | unit | min–max | CV % | verified | note |", "|---|---|---|---|---|---|---|"]
    for r in bench.get("results", []):
        res = r.get("result")
        if res:
            lines.append(f"| `{r['key']}` | {res['median']:.2f} | {res['unit']} | {res['min']:.2f}–{res['max']:.2f} | "
                         f"{100 * res['cv']:.2f} | {res['verified']['ok']} | {res['params'].get('note', '')} |")
        else:
            lines.append(f"| `{r['key']}` | — | | | | | {r.get('reason', r.get('status'))} |")
    for r in bench.get("results", []):
        res = r.get("result")
        if not res or "matrix" not in res["params"]:
            continue
        mat = res["params"]["matrix"]
        vals = mat["values"]
        lines += ["", f"`{r['key']}` ({mat['unit']}; rows {mat['rows']}, columns {mat['columns']}):", "",
                  "| " + mat["rows"] + "\\" + mat["columns"] + " | " + " | ".join(str(j) for j in range(len(vals))) + " |",
                  "|---" * (len(vals) + 1) + "|"]
        lines += [f"| {i} | " + " | ".join("—" if v is None else f"{v:.2f}" for v in row) + " |" for i, row in enumerate(vals)]
        ds = res["params"].get("datasheet")
        if ds:
            lines += ["", f"datasheet: {ds['link']}, {ds['per_direction_gb_per_s']:.0f} GB/s per direction, "
                          f"{ds['bidirectional_gb_per_s']:.0f} GB/s both ({ds['source']})"]
    return lines


def collective_curves(bench, torch):
    """gpudoc's NCCL bus-bandwidth curve per collective beside PyTorch's at the same sizes."""
    tor = {(t["collective"], t["bytes"]): t for t in (torch or {}).get("results", [])}
    lines = []
    for r in bench.get("results", []):
        res = r.get("result")
        if not res or "curve" not in res["params"]:
            continue
        p = res["params"]
        lines += ["", f"`{r['key']}`: {p['ranks']} ranks, NCCL {p['nccl_version']} ({p['nccl_library']}), "
                      f"NCCL_NVLS_ENABLE={p['nvls']['NCCL_NVLS_ENABLE']}. {p['formula']}", ""]
        head = "| size | time us | algbw GB/s | busbw GB/s | verified |"
        if torch:
            head += f" torch {torch['torch_version']} (NCCL {torch['nccl_version']}) busbw | gpudoc / torch |"
        lines += [head, "|---" * (head.count("|") - 1) + "|"]
        for c in p["curve"]:
            line = (f"| {fmt_bytes(c['bytes'])} | {c['time_us']:.1f} | {c['algbw_gb_per_s']:.2f} | "
                    f"{c['busbw_gb_per_s']:.2f} | {c['verified']} |")
            if torch:
                t = tor.get((r["key"].split(".", 1)[1], c["bytes"]))
                line += f" {t['busbw_gb_per_s']:.2f} | {c['busbw_gb_per_s'] / t['busbw_gb_per_s']:.3f} |" if t else " | |"
            lines.append(line)
    return lines


def multi_gpu_section(bench, torch):
    if not bench:
        return ["", "## Several GPUs", "", "gpudoc bench --only p2p,nccl gave no JSON (run.log says why)."]
    m = bench.get("machine", {})
    lines = ["", f"## Several GPUs: {m.get('device_count', '?')} x {(m.get('gpu') or {}).get('name', '?')}", "",
             f"`gpudoc bench --only p2p,nccl`, mode `{bench.get('mode')}`, exit code {bench.get('exit_code')}"
             + ("" if torch else "; no PyTorch figures (torch_collectives.json missing: run.log says why)"), ""]
    return lines + multi_gpu_figures(bench) + collective_curves(bench, torch)


def gpu_count():
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


def write_env(path, gpudoc, commit, env):
    with open(path, "w") as f:
        f.write(f"date {datetime.datetime.now(datetime.timezone.utc).isoformat()}\ncommit {commit or 'unknown'}\n")
        f.write(f"LD_LIBRARY_PATH={env['LD_LIBRARY_PATH']}\n")
        for cmd in (["uname", "-a"], ["nvidia-smi", "-L"],
                    ["nvidia-smi", "--query-gpu=driver_version,pstate,clocks.sm,clocks.max.sm,power.limit,temperature.gpu,"
                     "pcie.link.gen.current,pcie.link.width.current", "--format=csv"],
                    ["nvidia-smi", "topo", "-m"], [gpudoc, "--version"], ["ldd", gpudoc],
                    ["sh", "-c", "ls -la /usr/local/cuda*/lib64/libcublasLt.so* 2>&1"],
                    [sys.executable, "-c", "import torch; print('torch', torch.__version__, torch.version.cuda, "
                     "torch.cuda.device_count())"]):
            f.write(f"\n$ {' '.join(cmd)}\n")
            f.flush()
            try:
                subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, timeout=60)
            except (OSError, subprocess.TimeoutExpired) as e:
                f.write(f"cannot run: {e}\n")


def measure(args, gpudoc, env, out, gpus):
    """Runs every command in order; returns (quick exit code, quick wall seconds)."""
    single_gpu = [sys.executable, os.path.join(PYTORCH, "single_gpu.py"), "--device", str(args.device)]
    with open(out("run.log"), "w") as log:
        dev = ["--device", str(args.device)]
        quick_rc, quick_wall = run([gpudoc, "bench", "--quick", "--json"] + dev, log, env, out("gpudoc_quick.json"))
        if not args.skip_full:
            run([gpudoc, "bench", "--full", "--json"] + dev, log, env, out("gpudoc_full.json"))
        run(single_gpu, log, env, out("torch.json"))
        torch_gemm = single_gpu + ["--only", ",".join(GEMM_KEYS)]
        for r in range(args.gemm_rounds):
            run([gpudoc, "bench", "--json", "--only", ",".join(GEMM_KEYS)] + dev, log, env, out(f"gemm_round{r}_gpudoc.json"))
            run(torch_gemm + ["--match", out(f"gemm_round{r}_gpudoc.json")], log, env, out(f"gemm_round{r}_torch.json"))
            run(torch_gemm, log, env, out(f"gemm_round{r}_torch_unmatched.json"))
        if gpus >= 2 and not args.skip_multi_gpu:
            run([gpudoc, "bench", "--only", "p2p,nccl", "--json"], log, env, out("multi_gpu.json"))
            run([sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={gpus}",
                 os.path.join(PYTORCH, "collectives.py"), "--out", out("torch_collectives.json")], log, env)
    return quick_rc, quick_wall


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--gpudoc", default=os.path.join(REPO, "build", "src", "cli", "gpudoc"),
                    help="the gpudoc binary (default: build/src/cli/gpudoc of this checkout)")
    ap.add_argument("--device", type=int, default=0, help="CUDA device of the one-GPU comparison")
    ap.add_argument("--skip-full", action="store_true", help="compare the --quick figures (faster)")
    ap.add_argument("--gemm-rounds", type=int, default=3, help="interleaved gpudoc/PyTorch GEMM rounds (0: none)")
    ap.add_argument("--skip-multi-gpu", action="store_true", help="leave out p2p and nccl with two or more GPUs")
    ap.add_argument("--commit", default="", help="the commit to record (default: git rev-parse HEAD of this checkout)")
    args = ap.parse_args()
    if not os.access(args.gpudoc, os.X_OK):
        sys.exit(f"compare_with_pytorch.py: no gpudoc binary at {args.gpudoc} (build it, or give --gpudoc BIN)")
    os.makedirs(args.outdir, exist_ok=True)
    gpudoc = os.path.abspath(args.gpudoc)
    out = lambda name: os.path.join(args.outdir, name)  # noqa: E731

    env = dict(os.environ, NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1")
    libs = [d for d in ("/usr/local/cuda-13.0/lib64", "/usr/local/cuda-13.0/targets/x86_64-linux/lib") if os.path.isdir(d)]
    env["LD_LIBRARY_PATH"] = ":".join(libs + ([env["LD_LIBRARY_PATH"]] if env.get("LD_LIBRARY_PATH") else []))
    env.setdefault("PYTHONUNBUFFERED", "1")
    commit = args.commit
    if not commit:
        try:
            commit = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True, text=True,
                                    timeout=10).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            commit = ""
    write_env(out("env.txt"), gpudoc, commit, env)
    gpus = gpu_count()
    quick_rc, quick_wall = measure(args, gpudoc, env, out, gpus)

    full = load(out("gpudoc_quick.json" if args.skip_full else "gpudoc_full.json"))
    env_line = f"commit {commit or 'unknown'}; gpudoc {gpudoc}; compared: {'--quick' if args.skip_full else '--full'}"
    rounds = [(load(out(f"gemm_round{r}_gpudoc.json")), load(out(f"gemm_round{r}_torch.json")),
               load(out(f"gemm_round{r}_torch_unmatched.json"))) for r in range(args.gemm_rounds)]
    md = table(full, load(out("gpudoc_quick.json")), load(out("torch.json")), quick_wall, quick_rc, env_line,
               interleaved_figures(rounds))
    if gpus >= 2 and not args.skip_multi_gpu:
        md += "\n".join(multi_gpu_section(load(out("multi_gpu.json")), load(out("torch_collectives.json")))) + "\n"
    with open(out("compare.md"), "w") as f:
        f.write(md)
    sys.stdout.write(md)


if __name__ == "__main__":
    main()
