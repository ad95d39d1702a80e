#!/usr/bin/env bash
# Runs the checks of `gpudoc profile` on a machine with a GPU and PyTorch, then prints PASS or
# FAIL per item (tools/profile_check.py). Everything lands in OUTDIR.
#
#   tools/profile_checks.sh OUTDIR [GPUDOC] [LONG_SECONDS]
#
# GPUDOC: the gpudoc binary (libgpudoc_profile.so beside it); default: build/src/cli/gpudoc.
# LONG_SECONDS: the length of the long run with memory sampled (default 600).
# PROFILE_CHECKS: a subset of the groups below, e.g. "graphs overhead".
set -uo pipefail
out=${1:?usage: tools/profile_checks.sh OUTDIR [GPUDOC] [LONG_SECONDS]}
here=$(cd "$(dirname "$0")/.." && pwd)
gpudoc=${2:-$here/build/src/cli/gpudoc}
long_s=${3:-600}
loops="$here/workloads/profile_loops.py"
mkdir -p "$out"

prof() {  # prof NAME STEPS [more gpudoc flags]: the loop under gpudoc profile, JSON + program output
  local name=$1 steps=$2
  shift 2
  "$gpudoc" profile --json "$@" -- python3 "$loops" "$name" --steps "$steps" >"$out/$name.json" 2>"$out/$name.log"
  echo "$name: exit $?" >>"$out/exits.txt"
}
plain() {  # plain NAME STEPS: the loop alone, for its own step time
  python3 "$loops" "$1" --steps "$2" >"$out/$1.plain.txt" 2>>"$out/plain.log"
}

# PROFILE_CHECKS: which groups to run (default all): graphs attribution overhead sample kinds torch conflict
# reliability long
groups=" ${PROFILE_CHECKS:-graphs attribution overhead sample kinds torch conflict reliability long} "
on() { [[ "$groups" == *" $1 "* ]]; }

if on graphs; then
  plain tiny 300
  plain tiny-graph 300
  prof tiny 300 --records "$out/tiny.records.txt" -o "$out/tiny.trace.json" --html "$out/tiny.html"
  plain small 300
  plain small-graph 300
  prof small 300
  prof gemm 20
  prof item 300
  prof dynamic 200
fi
if on attribution; then
  prof starved 40
  prof launch 200
  prof sync 200
fi
# the overhead on three real training steps, host-bound (train) and GPU-bound (train-gpu, train-resnet):
# the same program alone, under gpudoc profile and under torch.profiler (CUDA activities only: the same
# CUPTI records), OVERHEAD_ROUNDS rounds (default 3) of OVERHEAD_STEPS steps (default 150), interleaved
# so that a slow spell of the host falls on every variant alike
if on overhead; then
  n=${OVERHEAD_STEPS:-150}
  for i in $(seq "${OVERHEAD_ROUNDS:-3}"); do
    for step in train train-resnet train-gpu; do
      plain $step "$n" && mv "$out/$step.plain.txt" "$out/$step.plain.$i.txt"
      prof $step "$n" && mv "$out/$step.json" "$out/$step.$i.json" && mv "$out/$step.log" "$out/$step.$i.log"
      python3 "$loops" $step --steps "$n" --torch-profiler "$out/$step.torch.json" --torch-activities cuda \
        >"$out/$step.torch.$i.txt" 2>>"$out/plain.log"
      rm -f "$out/$step.torch.json"
    done
  done
fi
# sampling (--sample 1:9, a tenth of the run traced): the whole run's mean step against the program
# alone, on the host-bound transformer and ResNet-50, about 40 s each, SAMPLE_ROUNDS rounds (default 2)
if on sample; then
  for i in $(seq "${SAMPLE_ROUNDS:-2}"); do
    for spec in train:2500 train-resnet:1250; do
      step=${spec%%:*} n=${spec##*:}
      plain "$step" "$n" && mv "$out/$step.plain.txt" "$out/sample.$step.plain.$i.txt"
      prof "$step" "$n" --sample 1:9 && mv "$out/$step.json" "$out/sample.$step.$i.json" &&
        mv "$out/$step.log" "$out/sample.$step.$i.log"
    done
  done
fi
# what each CUPTI activity kind costs the host-bound step: kernels and API calls alone, then with one
# more kind (GPUDOC_PROFILE_KINDS), KINDS_ROUNDS interleaved rounds (default 4) of 100 steps
if on kinds; then
  for i in $(seq "${KINDS_ROUNDS:-4}"); do
    plain train 100 && mv "$out/train.plain.txt" "$out/kinds.plain.$i.txt"
    for k in base sync graph marker memcpy,memset; do
      list="runtime,driver"
      [[ $k != base ]] && list="$list,$k"
      GPUDOC_PROFILE_KINDS=$list prof train 100 && mv "$out/train.json" "$out/kinds.$k.$i.json" &&
        mv "$out/train.log" "$out/kinds.$k.$i.log"
    done
  done
fi
# kernel count and time against torch.profiler: the same deterministic program, once under each
if on torch; then
  python3 "$loops" mixed --steps 100 --torch-profiler "$out/mixed.torch.json" >"$out/mixed.torch.txt" 2>>"$out/plain.log"
  rm -f "$out/mixed.torch.json"
  prof mixed 100
fi
if on conflict; then
  # CUPTI held by another client before the program's first CUDA call: gpudoc says so, exit 3
  "$gpudoc" profile -- python3 "$loops" held --steps 5 >"$out/held.txt" 2>&1
  echo "held: exit $?" >>"$out/exits.txt"
  # the program starts torch.profiler itself after gpudoc's library holds CUPTI: what each says
  "$gpudoc" profile -- python3 "$loops" mixed --steps 5 --torch-profiler /dev/null >"$out/conflict.txt" 2>&1
  echo "conflict: exit $?" >>"$out/exits.txt"
fi
if on reliability; then
  # killed in the middle: the records written so far stay readable
  "$gpudoc" profile --duration 6 --json -- python3 "$loops" tiny --steps 1000000 >"$out/killed.json" 2>"$out/killed.log"
  echo "killed: exit $?" >>"$out/exits.txt"
  # the program aborts (no exit handler runs): what CUPTI handed over stays whole
  "$gpudoc" profile --json -- python3 "$loops" crash --steps 300 >"$out/crash.json" 2>"$out/crash.log"
  echo "crash: exit $?" >>"$out/exits.txt"
  # the program forks a child that never uses CUDA: one profile, the parent's, whole
  "$gpudoc" profile --json -- python3 "$loops" fork --steps 300 >"$out/fork.json" 2>"$out/fork.log"
  echo "fork: exit $?" >>"$out/exits.txt"
fi
if on long; then
  # the long run, gpudoc's and the program's memory sampled every 5 s
  "$gpudoc" profile --duration "$long_s" --json -- python3 "$loops" tiny --steps 100000000 >"$out/long.json" 2>"$out/long.log" &
  gp=$!
  : >"$out/long_memory.txt"
  while kill -0 $gp 2>/dev/null; do
    child=$(pgrep -P $gp | head -1)
    echo "$(date +%s) gpudoc_rss_kib=$(awk '/VmRSS/{print $2}' /proc/$gp/status 2>/dev/null) program_rss_kib=$(awk '/VmRSS/{print $2}' /proc/${child:-0}/status 2>/dev/null)" >>"$out/long_memory.txt"
    sleep 5
  done
  wait $gp
  echo "long: exit $?" >>"$out/exits.txt"
fi
python3 "$here/tools/profile_check.py" "$out" | tee "$out/verdicts.txt"
