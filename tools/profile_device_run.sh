#!/usr/bin/env bash
# One call on the GPU machine: the environment, tools/profile_checks.sh, and two small real records
# for tests/data/profile. Laid out as DIR/{bin/gpudoc,bin/libgpudoc_profile.so,tools,workloads}.
#   bash DIR/tools/profile_device_run.sh OUT [LONG_SECONDS]
set -uo pipefail
dir=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?OUT}
long_s=${2:-60}
mkdir -p "$out/checks"
{
  date -u +%FT%TZ
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  ls /usr/local/cuda-13.0/targets/x86_64-linux/lib/libcupti.so* 2>&1
  nproc
} >"$out/checks/env.txt" 2>&1
start=$(date +%s)
timeout -k 10 "${CHECKS_TIMEOUT:-1800}" bash "$dir/tools/profile_checks.sh" "$out/checks" "$dir/bin/gpudoc" "$long_s"
echo "checks took $(( $(date +%s) - start )) s" >>"$out/checks/env.txt"
"$dir/bin/gpudoc" profile --records "$out/checks/data_tiny.records.txt" -- python3 "$dir/workloads/profile_loops.py" tiny --steps 8 >"$out/checks/data_tiny.txt" 2>&1
"$dir/bin/gpudoc" profile --records "$out/checks/data_item.records.txt" -- python3 "$dir/workloads/profile_loops.py" item --steps 10 >"$out/checks/data_item.txt" 2>&1
cp "$out/checks/verdicts.txt" "$out/verdicts.txt" 2>/dev/null
tar czf "$out/checks.tar.gz" -C "$out" checks && rm -rf "$out/checks"
