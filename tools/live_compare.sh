#!/usr/bin/env bash
# Runs the same live checks with two builds of gpudoc on this machine's GPUs, one after the other,
# and prints their headline figures side by side: to show that a change kept gpudoc's results
# (doctor's findings, health's verdicts, bench --quick's figures, a baseline record/check on a small
# workload). Never changes a GPU setting. The benchmarks bound by the host's CPU and memory (pcie.*,
# launch.*) drift between runs more than within one, so they run again after that, A and B taking
# turns (LIVE_COMPARE_TURNS times each, default 3), and the summary gives each build's range over
# its turns beside whether the two ranges overlap.
#
# Usage: tools/live_compare.sh OUTDIR GPUDOC_A GPUDOC_B [-- WORKLOAD ARGS...]
#   the workload of the baseline check; default: python3 workloads/gemm_saturated.py --duration 8
# Needs python3 (for the summary) and, for the default workload, PyTorch with CUDA.
set -uo pipefail
if [[ $# -lt 3 ]]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
out=$1 a=$2 b=$3
shift 3
workload=(python3 workloads/gemm_saturated.py --duration 8)
if [[ $# -gt 0 ]]; then
  if [[ $1 != -- || $# -lt 2 ]]; then
    echo "live_compare: expected -- WORKLOAD ARGS... after the two binaries, got: $*" >&2
    exit 2
  fi
  shift
  workload=("$@")
fi
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
run() {  # run NAME LABEL CMD...: stdout to NAME.LABEL.json, stderr to .log, rc and seconds to .rc
  local name=$1 label=$2; shift 2
  local t0=$SECONDS
  "$@" > "$out/$name.$label.json" 2> "$out/$name.$label.log"
  echo "$? $((SECONDS - t0))" > "$out/$name.$label.rc"
}
for label in a b; do
  bin=$a; [[ $label == b ]] && bin=$b
  "$bin" --version > "$out/version.$label.txt" 2>&1
  run doctor "$label" "$bin" doctor --duration 10 --json
  run health "$label" "$bin" health --json --no-store
  run bench "$label" "$bin" bench --quick --json
  store="$out/baseline.$label.db"
  rm -f "$store"*
  run record "$label" "$bin" baseline record live --store "$store" --json -- "${workload[@]}"
  run check "$label" "$bin" baseline check live --store "$store" --json
done
turns=${LIVE_COMPARE_TURNS:-3}
for ((i = 1; i <= turns; i++)); do
  run "turn$i" a "$a" bench --quick --only pcie,launch --json
  run "turn$i" b "$b" bench --quick --only pcie,launch --json
done
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
def load(name, label):
    try:
        with open(os.path.join(out, f"{name}.{label}.json")) as f:
            return json.load(f)
    except Exception as e:  # a run that printed no JSON shows as absent
        return None
def rc(name, label):
    with open(os.path.join(out, f"{name}.{label}.rc")) as f:
        return f.read().split()
rows = []
for name in ["doctor", "health", "bench", "record", "check"]:
    ra, rb = rc(name, "a"), rc(name, "b")
    rows.append((f"{name} exit / s", f"{ra[0]} / {ra[1]}", f"{rb[0]} / {rb[1]}"))
da, db = load("doctor", "a"), load("doctor", "b")
ids = lambda d: sorted({f"{x.get('id')}:{x.get('severity')}" for x in (d or {}).get("findings", [])})
rows.append(("doctor findings", " ".join(ids(da)) or "-", " ".join(ids(db)) or "-"))
ha, hb = load("health", "a"), load("health", "b")
hs = lambda h: " ".join(f"{k}={v}" for k, v in sorted(__import__('collections').Counter(r.get("status") for r in (h or {}).get("checks", [])).items()))
rows.append(("health statuses", hs(ha) or "-", hs(hb) or "-"))
ba, bb = load("bench", "a"), load("bench", "b")
def figs(b):
    return {r["key"]: r["result"] for r in (b or {}).get("results", []) if r.get("result")}
fa, fb = figs(ba), figs(bb)
for k in sorted(set(fa) | set(fb)):
    va, vb = fa.get(k, {}).get("median"), fb.get(k, {}).get("median")
    d = f"{(vb / va - 1) * 100:+.2f} %" if va and vb else ""
    rows.append((f"bench {k}", f"{va:.4g}" if va else "-", f"{vb:.4g} {d}" if vb else "-"))
turns = sorted({f.split(".")[0] for f in os.listdir(out) if f.startswith("turn") and f.endswith(".json")})
def turn_medians(label):
    by_key = {}
    for t in turns:
        for k, r in figs(load(t, label)).items():
            by_key.setdefault(k, []).append(r["median"])
    return by_key
ta, tb = turn_medians("a"), turn_medians("b")
for k in sorted(set(ta) | set(tb)):
    va, vb = ta.get(k, []), tb.get(k, [])
    if not va or not vb:
        continue
    overlap = not (max(va) < min(vb) or max(vb) < min(va))
    rows.append((f"turns {k} ({len(va)}+{len(vb)})", f"{min(va):.4g}..{max(va):.4g}",
                 f"{min(vb):.4g}..{max(vb):.4g} {'overlap' if overlap else 'APART'}"))
for name in ["check"]:
    ca, cb = load(name, "a"), load(name, "b")
    v = lambda c: " ".join(f"{f.get('name')}={f.get('verdict')}" for f in (c or {}).get("figures", []))
    rows.append(("baseline check verdicts", v(ca) or "-", v(cb) or "-"))
w = max(len(r[0]) for r in rows)
lines = [f"{'item':<{w}}  A  |  B"] + [f"{r[0]:<{w}}  {r[1]}  |  {r[2]}" for r in rows]
text = "\n".join(lines)
open(os.path.join(out, "summary.txt"), "w").write(text + "\n")
print(text)
PY
