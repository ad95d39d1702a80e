#!/usr/bin/env bash
# Everything CI cannot check, on a machine with one or more NVIDIA GPUs: the GPU-labelled tests and
# gpudoc's commands end to end on the live GPUs.
#
#   tools/gpu_tests.sh [--build DIR | --bin DIR] OUTDIR
#
#   --build DIR  a configured build folder with CUDA: its `ctest -L gpu` and its gpudoc
#   --bin DIR    a folder of binaries built elsewhere (gpudoc and the test_*_live executables, e.g.
#                from the `portable` preset), for a GPU machine without the build packages
#   neither      builds with `scripts/setup.sh default -DGPUDOC_CUDA=ON` (needs nvcc), then --build build
#
# Run from anywhere; OUTDIR gets one log per step and summary.md, and the summary table is printed
# last. Steps: the GPU tests (p2p.* and nccl.* tests need 2 GPUs and skip themselves with one);
# `doctor`, live (must not fall back to the replay); `health` (within 20 s); `bench --quick`
# (within 60 s on one GPU); a hardware baseline (hbm.copy, --quick) recorded, checked (exit 0),
# checked while a second gpudoc loads the same GPU's memory (exit 1: a regression) and checked
# again after; when python3 has torch, the same for a small workload (workloads/gemm_saturated.py);
# `diagnose --live`. Exit 0 when every step gave what it should, 1 otherwise.
#
# It never changes a GPU setting (clocks, power limit, persistence, MIG, reset): it only reads, and
# loads the GPU with gpudoc's own benchmarks. NVLink multicast stays off for every NCCL user it
# starts (NCCL_NVLS_ENABLE=0 ...): on shared machines a program using it can take the GPUs down.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

build="" bin=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) shift; build=${1:?--build needs a folder} ;;
    --bin) shift; bin=${1:?--bin needs a folder} ;;
    -h|--help) usage ;;
    -*) echo "gpu_tests.sh: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
  shift
done
[[ $# -eq 1 ]] || usage
[[ -z "$build" || -z "$bin" ]] || { echo "gpu_tests.sh: --build or --bin, not both" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1" || exit 2
out=$(cd "$1" && pwd)
summary="$out/summary.md"
printf '| step | wanted | exit | wall s | verdict |\n|---|---|---|---|---|\n' >"$summary"
failed=0

if [[ -z "$build" && -z "$bin" ]]; then
  echo "gpu_tests.sh: building with CUDA (scripts/setup.sh default -DGPUDOC_CUDA=ON), log in $out/build.log"
  "$repo/scripts/setup.sh" default -DGPUDOC_CUDA=ON >"$out/build.log" 2>&1 || {
    tail -20 "$out/build.log" >&2
    echo "gpu_tests.sh: the build failed (log: $out/build.log)" >&2
    exit 1
  }
  build="$repo/build"
fi
if [[ -n "$build" ]]; then
  build=$(cd "$build" && pwd) || exit 2
  gpudoc="$build/src/cli/gpudoc"
else
  bin=$(cd "$bin" && pwd) || exit 2
  gpudoc="$bin/gpudoc"
fi
[[ -x "$gpudoc" ]] || { echo "gpu_tests.sh: no gpudoc binary at $gpudoc" >&2; exit 2; }
export GPUDOC_STORE="$out/gpudoc.db"   # never the user's own store

# step NAME WANTED MAX_S CMD...: runs CMD with its stdout in NAME.out and stderr in NAME.err, and
# adds a row. WANTED is the exit codes that pass ("0", "0|1"); MAX_S a wall-time bound (0: none).
step() {
  local name=$1 wanted=$2 max_s=$3 rc start wall verdict=ok
  shift 3
  echo "== $name: $*" >>"$out/commands.txt"
  echo "gpu_tests.sh: $name ..."
  start=$(date +%s%N)
  "$@" >"$out/$name.out" 2>"$out/$name.err"
  rc=$?
  wall=$(awk -v ns=$(($(date +%s%N) - start)) 'BEGIN { printf "%.1f", ns / 1e9 }')
  [[ "|$wanted|" == *"|$rc|"* ]] || verdict="FAIL"
  if [[ "$max_s" != 0 ]] && awk -v w="$wall" -v m="$max_s" 'BEGIN { exit !(w > m) }'; then
    verdict="FAIL (over $max_s s)"
  fi
  [[ "$verdict" == ok ]] || failed=$((failed + 1))
  printf '| %s | %s | %s | %s | %s |\n' "$name" "$wanted" "$rc" "$wall" "$verdict" >>"$summary"
  return 0
}

# check NAME CONDITION_TEXT CMD...: a row for a fact about an earlier step's output.
check() {
  local name=$1 what=$2
  shift 2
  if "$@" >>"$out/checks.log" 2>&1; then
    printf '| %s | %s | | | ok |\n' "$name" "$what" >>"$summary"
  else
    printf '| %s | %s | | | FAIL |\n' "$name" "$what" >>"$summary"
    failed=$((failed + 1))
  fi
}

json_field_is() {   # json_field_is FILE KEY VALUE: the top-level KEY of the JSON in FILE is VALUE
  python3 -c 'import json, sys; sys.exit(str(json.load(open(sys.argv[1])).get(sys.argv[2])).lower() != sys.argv[3])' "$@"
}

{
  date -u +%Y-%m-%dT%H:%M:%SZ
  git -C "$repo" rev-parse HEAD 2>/dev/null || echo "commit: unknown (not a git checkout)"
  uname -a
  nvidia-smi -L
  nvidia-smi --query-gpu=index,name,driver_version,pstate,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv
  "$gpudoc" --version
  env | grep -E '^(NCCL_NVLS_ENABLE|TORCH_SYMM_MEM_DISABLE_MULTICAST|NVSHMEM_DISABLE_NVLS|CUDA_VISIBLE_DEVICES)=' | sort
} >"$out/env.txt" 2>&1
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
echo "gpu_tests.sh: $gpus GPU(s); gpudoc: $gpudoc; logs: $out"

# 1. The GPU-labelled tests.
if [[ -n "$build" ]]; then
  step gpu_tests 0 0 ctest --test-dir "$build" -L gpu --output-on-failure
else
  # Built elsewhere, they would look for gpudoc and the test data where they were built.
  export GPUDOC_TEST_GPUDOC="$gpudoc" GPUDOC_TEST_SOURCE_DIR="$repo"
  for t in "$bin"/test_*_live; do
    [[ -x "$t" ]] && step "$(basename "$t")" 0 0 "$t"
  done
fi

# 2. The commands, live.
step doctor "0|1" 60 "$gpudoc" doctor --duration 10 --json
check doctor_is_live "doctor looked at the live GPUs, not the replay" json_field_is "$out/doctor.out" live true
step health "0|1" 20 "$gpudoc" health --json
step bench_quick 0 $((gpus > 1 ? 0 : 60)) "$gpudoc" bench --quick --json
step diagnose_live "0|1" 60 "$gpudoc" diagnose --live --duration 15 --json

# 3. The baseline gate: a hardware baseline, then a regression provoked without touching a GPU
#    setting: a second gpudoc copies device memory on the same GPU during the check.
# load_gpu SECONDS: gpudoc's HBM benchmarks back to back on GPU 0 (run it in the background). On
# SIGTERM it stops the benchmark under way too, so that no load outlives it.
load_gpu() {
  local until=$((SECONDS + $1)) child=""
  trap '[[ -n "$child" ]] && kill "$child" 2>/dev/null; wait 2>/dev/null; exit 0' TERM
  while ((SECONDS < until)); do
    "$gpudoc" bench --only hbm --full --device 0 >/dev/null 2>&1 &
    child=$!
    wait "$child"
  done
}
step baseline_record_hw 0 0 "$gpudoc" baseline record gpu-tests-hw --bench hbm.copy --quick
step baseline_check_hw 0 0 "$gpudoc" baseline check gpu-tests-hw
# Two loaders, started apart: one alone leaves the GPU idle between its benchmarks (a new process,
# its CUDA context, the results checked), and a confirming re-run landing there reads no regression.
load_gpu 120 &
loaders=$!
sleep 2
load_gpu 120 &
loaders="$loaders $!"
sleep 5   # both loads' CUDA contexts are up and copying
step baseline_check_hw_loaded 1 0 "$gpudoc" baseline check gpu-tests-hw
kill $loaders 2>/dev/null
wait $loaders 2>/dev/null
sleep 2
step baseline_check_hw_after 0 0 "$gpudoc" baseline check gpu-tests-hw

# 4. A small workload baseline, where python3 has torch (the workloads are PyTorch programs).
if python3 -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1; then
  workload=(python3 "$repo/workloads/gemm_saturated.py" --duration 8)
  step baseline_record_workload 0 0 "$gpudoc" baseline record gpu-tests-workload -- "${workload[@]}"
  step baseline_check_workload 0 0 "$gpudoc" baseline check gpu-tests-workload
else
  printf '| baseline_record_workload | | | | skipped: python3 with torch and CUDA not found |\n' >>"$summary"
fi
step baseline_list 0 0 "$gpudoc" baseline list

echo
echo "$failed failed" >>"$summary"
cat "$summary"
[[ $failed -eq 0 ]]
