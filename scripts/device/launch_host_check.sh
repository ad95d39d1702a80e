#!/usr/bin/env bash
# launch.throughput's spread on this host, with gpudoc's host accounting (dec54c7): three --full
# runs, each summarised by its CV, the steal share and thread CPU time of its slower and faster
# halves, and params.host_spread (steal / slower CPU / unexplained).
#   scripts/device/launch_host_check.sh OUTDIR      (gpudoc in .device/bin)
set -u
out=${1:?usage: launch_host_check.sh OUTDIR}
mkdir -p "$out"
for i in 1 2 3; do
  .device/bin/gpudoc bench --full --only launch.throughput --json > "$out/launch_full_$i.json" 2>/dev/null
done
python3 - "$out" <<'PY' | tee "$out/launch_host_summary.txt"
import json, os, statistics as st, sys
d = sys.argv[1]
for n in sorted(f for f in os.listdir(d) if f.endswith(".json")):
    r = json.load(open(os.path.join(d, n)))["results"][0]["result"]
    p, s = r["params"], r["samples"]
    order = sorted(range(len(s)), key=lambda i: s[i])
    fast, slow = order[: len(s) // 2], order[len(s) - len(s) // 2:]
    mean = lambda key, idx: st.mean(p[key][i] for i in idx) if key in p else float("nan")
    print(f"{n}: median {r['median']:.3f} us, CV {100 * r['cv']:.2f} %, CPU {p.get('host_cpu')}; "
          f"slow half {st.mean(s[i] for i in slow):.3f} us (thread CPU {mean('host_thread_cpu_us', slow):.3f} us, "
          f"steal {100 * mean('host_steal_share', slow):.1f} %), fast half {st.mean(s[i] for i in fast):.3f} us "
          f"(thread CPU {mean('host_thread_cpu_us', fast):.3f} us, steal {100 * mean('host_steal_share', fast):.1f} %)")
    print(f"  host_spread: {p.get('host_spread', '(none)')}")
PY
