#!/usr/bin/env python3
"""`gpudoc profile` on loops without NVTX that synchronize every iteration (workloads/sync_loops.py):
whether it finds their step, and how its CUDA-Graph prediction compares with the same loop
captured with torch.cuda.graph, measured in the same run.

    tools/sync_loop_checks.py [--gpudoc BIN] [--steps N] OUTDIR

For each loop: `gpudoc profile --json` of the eager loop (OUTDIR/LOOP.json, its output in
LOOP.log), then the loop alone, eager and captured (LOOP.eager.txt, LOOP.graph.txt). Prints one row
per loop — steps found and from what, kernels per step (found / written), the eager step under
the profiler and alone, the predicted graph step, the captured step measured, and the prediction's
error — and writes them to OUTDIR/summary.json. Exit 0 when every loop's step was found with the
written kernel count and every prediction is within +-30 % of the measured captured step.
"""
import argparse
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOOPS = ("gemm4", "gemm-py", "infer-b1", "tiny")


def own_line(path):
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("::gpudoc "):
                    return json.loads(line[len("::gpudoc "):])
    except (OSError, ValueError):
        pass
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpudoc", default=os.path.join(REPO, "build-portable", "src", "cli", "gpudoc"))
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("out")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    script = os.path.join(REPO, "workloads", "sync_loops.py")
    rows, ok = [], True
    for loop in LOOPS:
        base = os.path.join(args.out, loop)
        with open(base + ".json", "wb") as out, open(base + ".log", "wb") as log:
            rc = subprocess.run([args.gpudoc, "profile", "--json", "--", sys.executable, script, loop,
                                 "--steps", str(args.steps)], stdout=out, stderr=log, check=False).returncode
        for mode in ("eager", "graph"):
            with open(f"{base}.{mode}.txt", "wb") as out:
                subprocess.run([sys.executable, script, loop, "--steps", str(args.steps)]
                               + (["--graph"] if mode == "graph" else []),
                               stdout=out, stderr=subprocess.STDOUT, check=False)
        row = {"loop": loop, "profile_exit": rc}
        try:
            with open(base + ".json", encoding="utf-8") as f:
                doc = json.load(f)
        except ValueError:
            doc = None
        eager, graph = own_line(base + ".eager.txt"), own_line(base + ".graph.txt")
        p = doc or {}
        advice = p.get("cuda_graphs", {})
        row.update({
            "step_source": p.get("step_source"),
            "steps": p.get("steps"),
            "kernels_per_step": advice.get("kernels_per_step"),
            "kernels_written": eager and eager.get("kernels_per_step"),
            "verdict": advice.get("verdict"),
            "step_ms_profiled": (advice.get("step_ns") or 0) / 1e6,
            "predicted_graph_ms": (advice.get("predicted_step_ns") or 0) / 1e6,
            "eager_ms": eager and eager.get("step_ms_median"),
            "graph_ms": graph and graph.get("step_ms_median"),
        })
        if row["graph_ms"] and row["predicted_graph_ms"]:
            row["error_percent"] = (row["predicted_graph_ms"] / row["graph_ms"] - 1) * 100
        good = (row["step_source"] == "host-sync" and row["kernels_per_step"] == row["kernels_written"]
                and row.get("error_percent") is not None and abs(row["error_percent"]) <= 30)
        row["pass"] = good
        ok = ok and good
        rows.append(row)
    with open(os.path.join(args.out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1)
    print("| loop | steps (from) | kernels/step found/written | eager profiled / alone ms | predicted graph ms | "
          "captured ms | error | verdict |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        err = r.get("error_percent")
        print(f"| {r['loop']} | {r['steps']} ({r['step_source']}) | {r['kernels_per_step']}/{r['kernels_written']} | "
              f"{r['step_ms_profiled']:.3f} / {r['eager_ms'] or 0:.3f} | {r['predicted_graph_ms']:.3f} | "
              f"{r['graph_ms'] or 0:.3f} | {'—' if err is None else f'{err:+.1f} %'} | {r['verdict']} "
              f"{'PASS' if r['pass'] else 'FAIL'} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
