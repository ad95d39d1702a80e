#!/usr/bin/env bash
# Issue 4's two open items on one H200, for the next device time:
#  (1) launch.throughput's CV: gpudoc's figure beside the same loop alone
#      (.device/bin/launch_loop, from scripts/device/probes/launch_loop.cu), pinned and not,
#      interleaved, three times; if the lone loop shifts the same way, the spread is the host's;
#  (2) TF32 and FP8 beside PyTorch on gpudoc's timeline, ROUNDS (default 4) interleaved rounds.
#   scripts/device/launch_and_gemm_check.sh OUTDIR      (binaries in .device/bin)
set -u
out=${1:?usage: launch_and_gemm_check.sh OUTDIR}
export LD_LIBRARY_PATH=/usr/local/cuda-13.0/lib64:/usr/local/cuda-13.0/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
G=.device/bin/gpudoc; L=.device/bin/launch_loop
mkdir -p "$out/launch" "$out/rounds"
for i in 1 2 3; do
  $G bench --full --only launch.throughput --json > "$out/launch/gpudoc_full_$i.json" 2>/dev/null
  $L 50 30000 1 > "$out/launch/loop_pinned_$i.json"
  $L 50 30000 0 > "$out/launch/loop_unpinned_$i.json"
done
python3 - "$out/launch" <<'PY' | tee "$out/launch_summary.txt"
import json, os, sys
d = sys.argv[1]
for n in sorted(os.listdir(d)):
    doc = json.load(open(os.path.join(d, n)))
    if "results" in doc:
        r = doc["results"][0]["result"]
        print(f"{n:26s} gpudoc  median {r['median']:.3f} us  CV {100 * r['cv']:.2f} %")
    else:
        cpus = sorted({s["cpu"] for s in doc["per_sample"]})
        print(f"{n:26s} loop    mean {doc['gpu_us_mean']:.3f} us  CV {100 * doc['gpu_cv']:.2f} % (host-timed CV "
              f"{100 * doc['host_cv']:.2f} %), CPUs {cpus}")
PY
K=gemm.tf32,gemm.fp8
for r in $(seq 0 $((${ROUNDS:-4} - 1))); do
  $G bench --json --only $K > "$out/rounds/r${r}_gpudoc.json" 2>/dev/null
  python3 scripts/device/torch_bench.py --only $K --match "$out/rounds/r${r}_gpudoc.json" > "$out/rounds/r${r}_torch.json" 2>/dev/null
done
python3 scripts/device/gemm_rounds_summary.py "$out/rounds" | tee "$out/rounds_summary.md"
