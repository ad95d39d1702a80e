#!/usr/bin/env bash
# Record gpudoc's reference traces (tests/data/*.jsonl): each reference workload of workloads/
# under `gpudoc record`, on a machine with one or more NVIDIA GPUs and python3 with torch.
#
#   tools/record_fixtures.sh [options] OUTDIR
#
#   (no option)       the single-GPU set (~4-5 min)
#   --multi-gpu       only the all-reduce set (needs >= 2 GPUs)
#   --all             both
#   --only REGEX      only the traces whose name matches REGEX (grep -E)
#   --gpudoc BIN      the gpudoc binary (default: build/src/cli/gpudoc of this checkout)
#   --python PYTHON   an interpreter with torch (default: python3)
#   --record-args "WORDS"  extra words for `gpudoc record` (word-split), e.g. "--period fast=100"
#   --bare            run the workloads without gpudoc (smoke test; stdout kept as NAME.log)
#   --list            print the trace names and commands, run nothing
#
# For each trace NAME it runs, from the repository root,
#   BIN record -o OUTDIR/NAME.jsonl WORDS -- PYTHON workloads/X.py --duration D ...
# appends everything to OUTDIR/record.log (the run's own output also to OUTDIR/NAME.log), goes on
# past failures, and prints one summary line per run: name, exit code, trace size, time.
# Copy the traces you keep into tests/data/ and say in tests/data/README.md when, where and at
# which commit they were recorded. Exit status: 0 when every run succeeded, 1 otherwise, 2 on bad
# usage or a missing gpudoc.
set -u

# NVLink multicast must stay off on these machines (a program using it can take a shared host's
# GPUs out of service). The workloads force the same values themselves.
export NCCL_NVLS_ENABLE=0
export TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export NVSHMEM_DISABLE_NVLS=1

repo=$(cd "$(dirname "$0")/.." && pwd) || exit 2
GPUDOC=$repo/build/src/cli/gpudoc
PYTHON=python3
RECORD_ARGS=()
OUT_DIR=""

single=0 multi=0 bare=0 list=0 only=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --single-gpu) single=1 ;;
        --multi-gpu) multi=1 ;;
        --all) single=1 multi=1 ;;
        --bare) bare=1 ;;
        --list) list=1 ;;
        --only) shift; only=${1:-} ;;
        --gpudoc) shift; GPUDOC=${1:?--gpudoc needs a binary} ;;
        --python) shift; PYTHON=${1:?--python needs an interpreter} ;;
        --record-args) shift; read -r -a RECORD_ARGS <<<"${1:-}" ;;
        -h|--help) sed -n '2,23p' "$0"; exit 0 ;;
        -*) echo "record_fixtures.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
        *) [[ -z "$OUT_DIR" ]] || { echo "record_fixtures.sh: one OUTDIR only (try --help)" >&2; exit 2; }
           OUT_DIR=$1 ;;
    esac
    shift
done
if [[ -z "$OUT_DIR" && $list -eq 0 ]]; then
    echo "record_fixtures.sh: which OUTDIR? (try --help)" >&2
    exit 2
fi
if [[ $single -eq 0 && $multi -eq 0 ]]; then
    single=1
fi
# Paths as given, relative to where this was started; then the workloads' commands from the root.
if [[ $list -eq 0 ]]; then
    mkdir -p "$OUT_DIR" && OUT_DIR=$(cd "$OUT_DIR" && pwd) || exit 2
fi
[[ "$GPUDOC" == */* && "$GPUDOC" != /* ]] && GPUDOC="$PWD/$GPUDOC"
cd "$repo" || exit 2

if [[ $bare -eq 0 && $list -eq 0 && ! -x "$GPUDOC" ]]; then
    echo "record_fixtures.sh: gpudoc binary '$GPUDOC' not found or not executable (give --gpudoc BIN, or use --bare)" >&2
    exit 2
fi

LOG="$OUT_DIR/record.log"

runs=0
failed=0
failed_names=()

# record NAME DURATION_S SCRIPT [ARGS...]
record() {
    local name=$1 duration=$2 script=$3
    shift 3
    if [[ -n "$only" ]] && ! grep -Eq -- "$only" <<<"$name"; then
        return 0
    fi
    local cmd=("$PYTHON" "workloads/$script" --duration "$duration" "$@")
    if [[ $list -eq 1 ]]; then
        printf '%-28s %s\n' "$name" "${cmd[*]}"
        return 0
    fi
    local trace="$OUT_DIR/$name.jsonl" runlog="$OUT_DIR/$name.log"
    if [[ $bare -eq 0 ]]; then
        cmd=("$GPUDOC" record -o "$trace" ${RECORD_ARGS[@]+"${RECORD_ARGS[@]}"} -- "${cmd[@]}")
    fi
    # A hung run (e.g. a stuck collective) must not stop the whole recording.
    local limit=$(( ${duration%.*} + 180 ))
    {
        echo
        echo "=== $(date -u +%Y-%m-%dT%H:%M:%SZ) $name"
        echo "\$ ${cmd[*]}"
    } >>"$LOG"
    local t0=$SECONDS
    timeout -k 15 "$limit" "${cmd[@]}" </dev/null 2>&1 | tee "$runlog" >>"$LOG"
    local rc=${PIPESTATUS[0]}
    local took=$(( SECONDS - t0 ))
    local size="-"
    if [[ $bare -eq 0 ]]; then
        if [[ -f "$trace" ]]; then
            size="$(stat -c %s "$trace") B"
        else
            size="no trace"
        fi
    fi
    runs=$((runs + 1))
    if [[ $rc -ne 0 || "$size" == "no trace" ]]; then
        failed=$((failed + 1))
        failed_names+=("$name")
    fi
    local line
    line=$(printf '%-28s rc=%-3s %-14s %4ss' "$name" "$rc" "$size" "$took")
    echo "$line"
    echo "--- $line" >>"$LOG"
}

single_gpu_set() {
    # Durations are the pattern's own; each run adds ~3-8 s of start-up (torch import, CUDA
    # context, warm-up) before the workload's start line. About 195 s of patterns in all.
    record idle                   15 idle.py
    record gemm_saturated         20 gemm_saturated.py
    record sawtooth_p2000_d50     16 sawtooth.py --period-ms 2000 --duty 0.5
    record sawtooth_p1000_d50     15 sawtooth.py --period-ms 1000 --duty 0.5   # the square wave
    record sawtooth_p500_d50      12 sawtooth.py --period-ms 500 --duty 0.5
    record sawtooth_p1000_d20     15 sawtooth.py --period-ms 1000 --duty 0.2
    record sawtooth_p100_d50      12 sawtooth.py --period-ms 100 --duty 0.5    # below sensor resolution
    record sawtooth_p50_d50       12 sawtooth.py --period-ms 50 --duty 0.5     # below sensor resolution
    record tiny_kernels           15 tiny_kernels.py
    record memory_bound           15 memory_bound.py --gib 4 --op add
    record memory_growth          20 memory_growth.py --step-mib 512 --interval-s 1.0
    record contention_turns       16 contention.py --mode turns --phase-s 2
    record contention_concurrent  12 contention.py --mode concurrent
    # Held out: never used to tune diagnosis thresholds (the test set of the diagnose issue).
    record heldout_sawtooth_p3000_d30 15 sawtooth.py --period-ms 3000 --duty 0.3
    record heldout_sawtooth_p700_d70  12 sawtooth.py --period-ms 700 --duty 0.7
    record heldout_sawtooth_p150_d40  12 sawtooth.py --period-ms 150 --duty 0.4
    record heldout_memory_growth_2g   15 memory_growth.py --step-mib 2048 --interval-s 1.0
    # Held out, second set (one per pattern, other parameters than the tuned traces).
    record heldout_idle_1g            10 idle.py --mem-mib 1024
    record heldout_gemm_fp16          15 gemm_saturated.py --dtype fp16
    record heldout_sawtooth_p1500_d60 15 sawtooth.py --period-ms 1500 --duty 0.6
    record heldout_sawtooth_p80_d30   12 sawtooth.py --period-ms 80 --duty 0.3     # below sensor resolution
    record heldout_tiny_kernels_4k    12 tiny_kernels.py --numel 4096
    record heldout_memory_bound_copy  12 memory_bound.py --gib 8 --op copy
    record heldout_contention_turns_p3 16 contention.py --mode turns --phase-s 3
}

MULTI_GPU_NAMES="allreduce_straggler_slow1 allreduce_straggler_slow0 allreduce_balanced allreduce_straggler_sleep1"

multi_gpu_set() {
    local gpus
    if [[ -n "$only" ]] && ! tr ' ' '\n' <<<"$MULTI_GPU_NAMES" | grep -Eq -- "$only"; then
        return 0
    fi
    gpus=$("$PYTHON" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
    if [[ $list -eq 0 && "${gpus:-0}" -lt 2 ]]; then
        echo "multi-GPU set skipped: $gpus GPU(s) visible, 2 needed" | tee -a "$LOG"
        failed=$((failed + 1))
        failed_names+=("multi-gpu(skipped)")
        return 0
    fi
    record allreduce_straggler_slow1        20 allreduce_straggler.py --slow-rank 1 --slow-kind compute --slow-ms 150
    record allreduce_straggler_slow0        20 allreduce_straggler.py --slow-rank 0 --slow-kind compute --slow-ms 150
    record allreduce_balanced               20 allreduce_straggler.py --slow-rank -1
    record allreduce_straggler_sleep1       20 allreduce_straggler.py --slow-rank 1 --slow-kind sleep --slow-ms 150
}

if [[ $list -eq 0 ]]; then
    {
        echo "##### record_fixtures.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) bare=$bare single=$single multi=$multi only='$only'"
        echo "gpudoc: $GPUDOC  out: $OUT_DIR  python: $PYTHON"
        git rev-parse HEAD 2>/dev/null | sed 's/^/commit: /'
        nvidia-smi -L 2>&1 || true
        "$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())' 2>&1 || true
        env | grep -E '^(NCCL_NVLS_ENABLE|TORCH_SYMM_MEM_DISABLE_MULTICAST|NVSHMEM_DISABLE_NVLS|CUDA_VISIBLE_DEVICES)=' || true
    } >>"$LOG"
fi

start=$SECONDS
[[ $single -eq 1 ]] && single_gpu_set
[[ $multi -eq 1 ]] && multi_gpu_set

if [[ $list -eq 1 ]]; then
    exit 0
fi
summary="$runs run(s), $failed failed${failed_names[*]+: ${failed_names[*]}}; $(( SECONDS - start )) s; log $LOG"
echo "$summary"
echo "##### $summary" >>"$LOG"
[[ $failed -eq 0 ]]
