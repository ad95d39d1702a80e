#!/usr/bin/env bash
# Record gpudoc's suite of plain user programs (workloads/programs/) on a GPU machine: each as a
# gpudoc trace and as two nvidia-smi CSV logs of the same run, with its ground truth and what a
# correct diagnosis of it should say.
#
#   tools/record_programs.sh OUTDIR [--set test|tune|all] [--list] [--quick] [--cpu-smoke]
#                            [--gpudoc BIN] [--only REGEX] [--force] [--python PY]
#
#   --set S        which split: test (held out: never looked at while changing the diagnosis;
#                  recorded first), tune (the structures the diagnosis may be changed on), all
#                  (default: test first, then tune)
#   --list         print the programs, their commands and the planned wall time; run nothing
#   --gpudoc BIN   the gpudoc binary (default $GPUDOC, else build-portable/src/cli/gpudoc, else
#                  gpudoc on the PATH)
#   --only REGEX   only the programs whose name matches REGEX (grep -E)
#   --force        overwrite traces already in OUTDIR (default: refuse)
#   --quick        every program for 6 s only: a rehearsal on the GPU machine (too short for
#                  the traces to keep)
#   --cpu-smoke    run every program for ~2 s on the CPU with tiny sizes, without gpudoc and
#                  nvidia-smi (checks the programs and this script on a machine without a GPU)
#   --python PY    interpreter with torch (default $PYTHON, else python3)
#
# The programs are written as users write them: no ::gpudoc lines, no NVTX, ordinary progress
# lines on stdout. Their ground truth comes from GPUDOC_TRUTH_FILE (workloads/programs/_truth.py).
# Every program runs on GPU 0. For each program NAME it writes, in OUTDIR:
#   NAME.jsonl          gpudoc record -o NAME.jsonl --gpus 0 $GPUDOC_RECORD_ARGS -- <command>
#   NAME.csv            nvidia-smi -i 0 --query-gpu=<SMI_FIELDS> --format=csv -lms 100 (the
#                       columns tools/record_jobs.sh logs, with power.limit and name)
#   NAME.nolimit.csv    nvidia-smi -i 0 --query-gpu=<SMI_FIELDS_NOLIMIT> --format=csv -lms 100
#                       (the query docs/trace-format.md recommends: no power.limit, no name)
#                       both from 1 s before the command to 2 s after it, at the same time
#   NAME.log            the program's stdout and stderr
#   NAME.truth.json     the program's ground truth (GPU busy share from CUDA events, steps,
#                       bytes copied, CPU optimizer time, ...)
#   NAME.cmd.txt        the exact command, the split, what the program is, the expected findings
# and manifest.json (every program: name, split, command, files, exit code, expected findings for
# the trace, the CSV and the CSV without power.limit/name, the ids not wrong beside them).
# It goes on past a failed program and exits 1 if any failed, 2 on bad usage, 3 if the machine
# lacks gpudoc, nvidia-smi or a GPU; Ctrl-C (or SIGTERM) stops the running program, writes the
# manifest of what ran and exits 130. It never changes GPU settings. Run it from anywhere.
set -u

# NVLink multicast must stay off on these machines.
export NCCL_NVLS_ENABLE=0
export TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export NVSHMEM_DISABLE_NVLS=1
# CUDA numbers GPUs fastest-first, NVML and nvidia-smi by PCI bus: the same order for both here.
export CUDA_DEVICE_ORDER=PCI_BUS_ID

# The columns tools/record_jobs.sh logs (gpudoc's importer's, plus power.limit and name) ...
SMI_FIELDS="timestamp,index,uuid,name,pci.bus_id,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,power.limit,temperature.gpu,clocks.sm,clocks.max.sm,clocks_event_reasons.active"
# ... and the query docs/trace-format.md ("Importing nvidia-smi CSV") recommends, as users log.
SMI_FIELDS_NOLIMIT="timestamp,index,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,temperature.gpu,clocks.sm,clocks.max.sm,clocks_event_reasons.active"
SMI_PERIOD_MS=100
SMI_LEAD_S=1
SMI_TAIL_S=2

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=record_programs.sh

usage() { sed -n '2,41p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
die() { echo "$PROG: $1" >&2; exit "${2:-2}"; }

outdir="" split=all list=0 only="" force=0 smoke=0 quick=0
QUICK_DURATION_S=6
gpudoc=${GPUDOC:-}
python=${PYTHON:-python3}
while [[ $# -gt 0 ]]; do
    case "$1" in
        --set) [[ $# -ge 2 ]] || die "--set needs test, tune or all"; split=$2; shift ;;
        --set=*) split=${1#--set=} ;;
        --list) list=1 ;;
        --gpudoc) [[ $# -ge 2 ]] || die "--gpudoc needs a path"; gpudoc=$2; shift ;;
        --only) [[ $# -ge 2 ]] || die "--only needs a regular expression"; only=$2; shift ;;
        --python) [[ $# -ge 2 ]] || die "--python needs an interpreter"; python=$2; shift ;;
        --force) force=1 ;;
        --cpu-smoke) smoke=1 ;;
        --quick) quick=1 ;;
        -h|--help) usage; exit 0 ;;
        -*) die "unknown option '$1' (try --help)" ;;
        *) [[ -z "$outdir" ]] || die "one OUTDIR only (got '$outdir' and '$1')"; outdir=$1 ;;
    esac
    shift
done
case "$split" in test|tune|all) ;; *) die "--set must be test, tune or all, not '$split'" ;; esac
if [[ $list -eq 0 && -z "$outdir" ]]; then
    die "usage: $PROG OUTDIR [--set test|tune|all] [--list] [--quick] [--cpu-smoke] [--gpudoc BIN] [--only REGEX] (try --help)"
fi

# ---------------------------------------------------------------------------------------------
# The programs.
# program SPLIT NAME DURATION_S EXPECT CSV_EXPECT NOLIMIT_EXPECT NOT_WRONG KEY DESCRIPTION -- SCRIPT ARGS
#   EXPECT          finding ids (docs/findings.md) a correct diagnosis of the gpudoc trace names
#   CSV_EXPECT      the same for NAME.csv (nvidia-smi with power.limit and name; "-": nothing at
#                   warning or above, the pattern cannot show without GPM/per-process data)
#   NOLIMIT_EXPECT  the same for NAME.nolimit.csv (no power.limit, no name)
#   NOT_WRONG       ids that may appear besides (e.g. the power cap's info-level `throttled`)
#   KEY             what the diagnosis is checked against (k=v, space separated); the measured
#                   values are in NAME.truth.json
# The test split is held out: never looked at, nor its traces, while changing the diagnosis.
# Both splits together take about 8 minutes on one H200, set-up included.
# ---------------------------------------------------------------------------------------------
all_programs() {
    program test compile_warmup_train 30 "healthy" "healthy" "healthy" "idle throttled" \
        "warmup=compile warmup_s=~10 steady=gpu_bound kernel_busy=~0.98 truth=steady_busy_share,warmup_s" \
        "A residual MLP (4 blocks of 2048, batch 16384) wrapped in torch.compile, fused AdamW, bf16: the first step compiles (the GPU waits, CPU busy, warmup_s in the truth), then steady compute-bound training. Steady phase: healthy; the warm-up is a one-off, not a periodic pattern." \
        -- compile_train.py --width 2048 --blocks 4 --batch-size 16384
    program test grad_accum_lm 14 "healthy" "healthy" "healthy" "throttled" \
        "accum=4 micro_batch=32 seq=512 syncs_per_step=1 kernel_busy=~0.92" \
        "A 6 x 1024 transformer LM trained with gradient accumulation (4 micro-batches of 32 x 512 tokens), clipping, AdamW, bf16; the mean loss read once per optimizer step. The GPU stays fed." \
        -- grad_accum_train.py --accum 4 --micro-batch 32 --seq 512
    program test train_eval_every 18 "sawtooth" "sawtooth" "sawtooth" "throttled" \
        "period_s=~2.5 (600 steps ~1.5 s + eval ~1 s) lost_share=host.eval.share=~0.4 expect_severity=warning" \
        "A classifier trained on GPU-made batches, evaluated every 600 steps on a host-held numpy validation set whose metrics (per-class precision/recall, ranking AUC) are computed in numpy: the GPU idles during each evaluation, a resolved sawtooth whose period is one training phase plus one evaluation." \
        -- train_eval_every.py --eval-every 600 --val-batches 32
    program test infer_dynamic_b1 14 "plateau" "plateau" "plateau" "" \
        "kind=launch_bound batch=1 lengths=8..384 step_ms=~4 kernel_busy=~0.07" \
        "A 6 x 512 transformer encoder serving requests of random length (8-384 tokens) one at a time (batch 1, dynamic shapes), .cpu() per answer, requests always queued: small kernels launched one by one, the GPU never saturated and the chip nearly empty. Launch-bound, not waiting for input." \
        -- infer_dynamic_b1.py --max-len 384
    program test npload_loader 14 "sawtooth" "sawtooth" "sawtooth" "" \
        "starved=yes loader=np.load+numpy_preprocessing expect_severity=critical" \
        "A CNN trained on uint8 image batches read back with np.load from files it wrote to a private folder, converted, normalised, cropped and flipped in numpy in the main process, then copied (pageable): the GPU waits for every batch (input starvation)." \
        -- npload_loader.py --files 16 --batch-size 128
    program test offload_adam_lm 14 "sawtooth" "sawtooth" "sawtooth" "" \
        "optimizer=cpu_adamw params=390M pinned=yes step_ms=~900 kernel_busy=~0.05 expect_severity=critical" \
        "A 12 x 1536 transformer LM whose AdamW runs on the CPU (fp32 master weights), gradients and weights through pinned buffers with non_blocking copies: the GPU works a few per cent of each step and waits for the CPU optimizer the rest. Starved by the host, not idle, not launch-bound." \
        -- offload_adam_lm.py --width 1536 --layers 12 --batch-size 8
    program test offload_adam_small 14 "sawtooth" "sawtooth" "sawtooth" "" \
        "optimizer=cpu_adam params=17M batch=8192 step_ms=~45 kernel_busy=~0.03 expect_severity=critical" \
        "A small MLP (4 x 2048) on large batches with Adam on the CPU: a chip-filling forward/backward of a few ms, then grads .cpu(), CPU Adam and weights .to(cuda): the GPU waits for the host most of each step." \
        -- offload_adam_small.py --width 2048 --layers 4 --batch-size 8192
    program test video_pageable_640mb 14 "sawtooth" "sawtooth" "sawtooth" "" \
        "bytes_h2d_per_step=~640MB pinned=no step_ms=~115 kernel_busy=~0.25 expect_severity=critical" \
        "A 3-D CNN on uint8 video clips copied from pageable host memory, 640 MB per step (torch.from_numpy(...).cuda()): the copy, staged through the driver's buffer, takes far longer than the compute; the GPU's kernels run a small share of the time." \
        -- video_batch_copy.py --batch-mb 640
    program test saturated_train 14 "healthy" "healthy" "healthy" "throttled" \
        "gpu_bound=yes step_ms=~40 kernel_busy=~0.99 syncs_per_step=1" \
        "A 4 x 8192 MLP on batches of 16384 under bf16 autocast, fused AdamW, loss.item() every step: tens of ms of tensor-core work per step, the sync costs nothing. Healthy (the power cap's info-level throttled may come with it)." \
        -- saturated_train.py --width 8192 --batch-size 16384
    program test leak_outputs_list 14 "memory_growth" "memory_growth" "memory_growth" "healthy throttled" \
        "kept=logits+labels_per_step growth=~1.7GiB/s kernel_busy=~0.99 truth=kept_gib_per_s" \
        "A classifier whose loop appends every step's (detached, still on the GPU) logits and labels to Python lists for an epoch-end metric; the epoch is longer than the run: device memory grows steadily by one batch of logits (~33 MB) per step, then the process exits and frees it." \
        -- leak_outputs_list.py --classes 1000 --batch-size 8192
    program test sync_heavy_train 14 "sawtooth" "sawtooth" "sawtooth" "" \
        "syncs_per_step=6 step_ms=~7 kernel_busy=~0.5 below_sensor_resolution=yes expect_severity=warning" \
        "A CNN loop with torch.cuda.synchronize() around the forward and the optimizer (timing), loss.item(), accuracy .item() and an isfinite(grad norm) check each step: the GPU idles after each of the 6 syncs while Python launches the next kernels; steps far shorter than the 200 ms sensor sample." \
        -- sync_heavy_train.py --batch-size 64 --image-size 96

    program tune zero_offload_adam 14 "sawtooth" "sawtooth" "sawtooth" "" \
        "optimizer=cpu_adamw params=138M step_ms=~600 kernel_busy=~0.01 expect_severity=critical" \
        "ZeRO-offload-style loop: an 8 x 4096 MLP in bf16 on the GPU, fp32 master weights and AdamW on the CPU; each step grads to the host (pageable), CPU AdamW, weights back. The GPU's kernels run ~1-3 % of the time, waiting for the host: a starved sawtooth (critical), not idle and not launch-bound." \
        -- zero_offload_adam.py --width 4096 --layers 8 --batch-size 2048
    program tune pageable_batch_200mb 14 "sawtooth" "sawtooth" "sawtooth" "" \
        "bytes_h2d_per_step=~200MB pinned=no step_ms=~40 kernel_busy=~0.05 expect_severity=critical" \
        "A small CNN trained on 200 MB float32 image batches copied each step from pageable host memory (.to(cuda), no pinning, no DataLoader): the GPU's kernels run a few per cent of the time, waiting for the copy. Starved by the copy, not launch-bound." \
        -- pageable_batch.py --batch-mb 200
    program tune infer_mlp24_b1 14 "plateau" "plateau" "plateau" "" \
        "kind=launch_bound batch=1 layers=24 step_ms=~1.1 gpu_exec_ms=~0.22 kernel_busy=~0.15" \
        "Batch-1 inference of a 24-layer 1024-wide MLP, requests always queued, argmax().item() per request: tiny kernels (a few us each) launched back to back from Python. Truly launch-bound (plateau), not a below-resolution sawtooth: there is no idle wait for input." \
        -- infer_mlp_b1.py --layers 24 --width 1024
    program tune train_mlp6x4096_adamw 14 "sawtooth" "sawtooth" "sawtooth" "throttled" \
        "syncs_per_step=1 step_ms=~5-6 kernel_busy=~0.5-0.6 below_sensor_resolution=yes expect_severity=warning" \
        "The plain loop: a 6 x 4096 MLP, AdamW, bf16 autocast, loss.item() every step, batch 512: the GPU idles after every step's sync while Python launches the next one (~40-50 % lost, steps far shorter than the sensor sample). A below-resolution sawtooth, warning; not healthy." \
        -- train_mlp_adamw.py --width 4096 --layers 6 --batch-size 512
    program tune bursty_service 16 "sawtooth" "sawtooth" "sawtooth" "throttled" \
        "period_s=2 burst_s=~0.5 duty=~0.25-0.3 below_sensor_resolution=no expect_severity=critical" \
        "An inference service (12 x 1024 transformer encoder, batches of 64) whose clients send a burst of requests every 2 s, ~0.5 s of full batches each; the GPU waits on an empty queue in between. A resolved sawtooth with a 2 s period and ~25 % duty, not below sensor resolution." \
        -- bursty_service.py --period-s 2 --burst-s 0.5
    program tune spin_wait 14 "plateau" "plateau" "plateau" "" \
        "kind=busy_but_idle wait_ms=45 work_ms=5 kernel_busy=~0.99 spin_share=~0.9" \
        "A GPU spinning in a wait: per step a one-thread spin kernel (torch.cuda._sleep) for 45 ms, then 5 ms of bf16 matmuls. Utilization reads ~100 % while one SM works for 90 % of the time: busy but idle (SM activity low, power low), not healthy." \
        -- spin_wait.py --wait-ms 45 --work-ms 5
}

# Seconds of set-up before a program's loop plus gpudoc's and nvidia-smi's start and stop, for
# the planned time.
setup_estimate_s() {
    case "$1" in
        offload_adam_lm.py|zero_offload_adam.py|npload_loader.py) echo 10 ;;
        *) echo 7 ;;
    esac
}

# ---------------------------------------------------------------------------------------------

planned_s=0 runs=0 failed=0 selected=0 interrupted=0 job_pid=""
failed_names=() existing=()
mode=run
manifest_rows=()

json_escape() {
    local s=$1
    s=${s//\\/\\\\}
    s=${s//\"/\\\"}
    s=${s//$'\n'/\\n}
    s=${s//$'\t'/\\t}
    printf '%s' "$s"
}

json_words() {  # "a b" -> ["a","b"]; "-" or "" -> []
    local out="" w
    [[ "$1" == "-" ]] && { printf '[]'; return; }
    for w in $1; do
        out+="${out:+,}\"$(json_escape "$w")\""
    done
    printf '[%s]' "$out"
}

describe_expect() {  # IDS -> words for NAME.cmd.txt
    if [[ "$1" == - ]]; then
        echo 'none at warning or above (not visible without per-process/GPM data)'
    else
        echo "$1"
    fi
}

write_cmd_txt() {  # NAME SPLIT EXPECT CSV_EXPECT NOLIMIT_EXPECT NOT_WRONG KEY DESCRIPTION
    {
        echo "name: $1"
        echo "split: $2 ($([[ $2 == test ]] && echo 'held out: never looked at while changing the diagnosis' || echo 'for tuning'))"
        echo "command (from the repository root): $full_text"
        echo "program command: $cmd_text"
        echo "environment: GPUDOC_TRUTH_FILE=$1.truth.json CUDA_DEVICE_ORDER=PCI_BUS_ID NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 (TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR: a fresh folder, so torch.compile compiles cold)"
        echo "nvidia-smi: nvidia-smi -i 0 --query-gpu=$SMI_FIELDS --format=csv -lms $SMI_PERIOD_MS > $1.csv"
        echo "nvidia-smi (no power.limit, no name): nvidia-smi -i 0 --query-gpu=$SMI_FIELDS_NOLIMIT --format=csv -lms $SMI_PERIOD_MS > $1.nolimit.csv"
        echo "what it is: $8"
        echo "expected findings (gpudoc trace): $3"
        echo "expected findings (nvidia-smi CSV): $(describe_expect "$4")"
        echo "expected findings (nvidia-smi CSV without power.limit and name): $(describe_expect "$5")"
        echo "also acceptable: ${6:-none}"
        echo "key: $7"
        echo "ground truth: $1.truth.json (gpu_busy_share: CUDA-event spans around the GPU part of each step / loop wall time, host gaps inside a span counted as busy; steps, step_ms, spans such as copy, host timers such as cpu_adam, values such as bytes per step); the program's own progress lines in $1.log"
        echo "recorded: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname) commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    } >"$outdir/$1.cmd.txt"
}

# program SPLIT NAME DURATION EXPECT CSV_EXPECT NOLIMIT_EXPECT NOT_WRONG KEY DESCRIPTION -- SCRIPT ARGS...
program() {
    local split_of=$1 name=$2 duration=$3 expect=$4 csv_expect=$5 nolimit_expect=$6 not_wrong=$7
    local key=$8 desc=$9
    shift 9
    [[ "$1" == "--" ]] || die "internal: program $name: missing -- before the script" 4
    shift
    local script=$1
    shift
    [[ $quick -eq 1 ]] && duration=$QUICK_DURATION_S
    if [[ "$split" != all && "$split" != "$split_of" ]]; then return 0; fi
    if [[ -n "$only" ]] && ! grep -Eq -- "$only" <<<"$name"; then return 0; fi
    local cmd full full_text cmd_text
    cmd=("$python" "workloads/programs/$script" --duration "$duration" "$@")
    [[ $smoke -eq 1 ]] && cmd+=(--cpu-smoke)
    if [[ $smoke -eq 1 ]]; then
        full=("${cmd[@]}")
    else
        full=("$gpudoc" record -o "$outdir/$name.jsonl" --gpus 0 ${record_args[@]+"${record_args[@]}"} -- "${cmd[@]}")
    fi
    printf -v full_text '%q ' "${full[@]}"
    printf -v cmd_text '%q ' "${cmd[@]}"
    full_text=${full_text% } cmd_text=${cmd_text% }
    if [[ $mode == check ]]; then
        [[ -e "$outdir/$name.jsonl" ]] && existing+=("$name.jsonl")
        return 0
    fi
    local estimate=$(( ${duration%.*} + $(setup_estimate_s "$script") + SMI_LEAD_S + SMI_TAIL_S ))
    planned_s=$(( planned_s + estimate ))
    selected=$(( selected + 1 ))
    if [[ $mode == list ]]; then
        printf '%-4s %-22s ~%3ss  expect %-13s csv %-13s nolimit %-13s %s\n' "$split_of" "$name" \
            "$estimate" "$expect" "$csv_expect" "$nolimit_expect" "$cmd_text"
        return 0
    fi
    [[ $interrupted -eq 0 ]] || return 0
    write_cmd_txt "$name" "$split_of" "$expect" "$csv_expect" "$nolimit_expect" "$not_wrong" "$key" "$desc"
    local rc
    run_one "$name" "$duration" "$split_of"
    rc=$?
    runs=$((runs + 1))
    local ok=true
    if [[ $rc -ne 0 ]] || [[ ! -s "$outdir/$name.truth.json" ]] ||
       [[ $smoke -eq 0 && ! -s "$outdir/$name.jsonl" ]]; then
        ok=false
        failed=$((failed + 1))
        failed_names+=("$name")
    fi
    local trace="" csv="" nolimit=""
    if [[ $smoke -eq 0 ]]; then
        trace=$name.jsonl csv=$name.csv nolimit=$name.nolimit.csv
    fi
    manifest_rows+=("$(printf '{"name":"%s","split":"%s","script":"%s","duration_s":%s,"command":"%s","trace":"%s","csv":"%s","csv_nolimit":"%s","log":"%s","truth":"%s","exit_code":%s,"ok":%s,"expected":%s,"expected_csv":%s,"expected_csv_nolimit":%s,"not_wrong":%s,"key":"%s","description":"%s"}' \
        "$name" "$split_of" "$script" "$duration" "$(json_escape "$full_text")" \
        "$trace" "$csv" "$nolimit" "$name.log" "$name.truth.json" "$rc" "$ok" \
        "$(json_words "$expect")" "$(json_words "$csv_expect")" "$(json_words "$nolimit_expect")" \
        "$(json_words "$not_wrong")" "$(json_escape "$key")" "$(json_escape "$desc")")")
}

start_smi() {  # FIELDS FILE -> sets smi_started_pid
    nvidia-smi -i 0 --query-gpu="$1" --format=csv -lms "$SMI_PERIOD_MS" >"$2" 2>"$2.err" &
    smi_started_pid=$!
}

stop_smi() {  # PID FILE
    kill "$1" 2>/dev/null
    wait "$1" 2>/dev/null
    [[ -s "$2.err" ]] || rm -f "$2.err"
}

run_one() {  # NAME DURATION SPLIT; uses full; returns the command's exit code
    local name=$1 duration=$2 split_of=$3 smi_pid="" smi2_pid="" rc t0=$SECONDS cache
    local limit=$(( ${duration%.*} + 240 ))   # a hung program must not stop the set
    local truth="$outdir/$name.truth.json"
    rm -f "$truth"
    # torch.compile's caches in a fresh folder: every run compiles cold, as a first run does.
    cache=$(mktemp -d "${TMPDIR:-/tmp}/record-programs-cache.XXXXXX") || die "mktemp failed" 1
    if [[ $smoke -eq 0 ]]; then
        local smi_started_pid
        start_smi "$SMI_FIELDS" "$outdir/$name.csv"
        smi_pid=$smi_started_pid
        start_smi "$SMI_FIELDS_NOLIMIT" "$outdir/$name.nolimit.csv"
        smi2_pid=$smi_started_pid
        sleep "$SMI_LEAD_S"
    fi
    # In the background so that a stop signal reaches it through on_stop_signal.
    (cd "$ROOT" && GPUDOC_TRUTH_FILE="$truth" TORCHINDUCTOR_CACHE_DIR="$cache/inductor" \
        TRITON_CACHE_DIR="$cache/triton" exec timeout -k 20 "$limit" "${full[@]}") \
        </dev/null >"$outdir/$name.log" 2>&1 &
    job_pid=$!
    until wait "$job_pid"; rc=$?; ! kill -0 "$job_pid" 2>/dev/null; do :; done
    job_pid=""
    if [[ -n "$smi_pid" ]]; then
        sleep "$SMI_TAIL_S"
        stop_smi "$smi_pid" "$outdir/$name.csv"
        stop_smi "$smi2_pid" "$outdir/$name.nolimit.csv"
    fi
    rm -rf "$cache"
    local size="-" busy="-"
    [[ -f "$outdir/$name.jsonl" ]] && size="$(stat -c %s "$outdir/$name.jsonl") B"
    [[ -f "$truth" ]] && busy=$(sed -n 's/^ *"gpu_busy_share": *\([0-9.a-z]*\).*/\1/p' "$truth" | head -n 1)
    printf '%-4s %-22s rc=%-3s trace %-12s busy %-6s %4ss\n' "$split_of" "$name" "$rc" "$size" \
        "${busy:--}" "$(( SECONDS - t0 ))"
    return "$rc"
}

# SIGINT/SIGTERM: stop the running program (gpudoc stops its process group, closes its trace),
# run no further program, and still write the manifest.
on_stop_signal() {
    interrupted=1
    if [[ -n "$job_pid" ]]; then
        kill -s TERM "$job_pid" 2>/dev/null
    fi
}

write_manifest() {
    local rows="" row
    for row in ${manifest_rows[@]+"${manifest_rows[@]}"}; do
        rows+="${rows:+,
    }$row"
    done
    cat >"$outdir/manifest.json" <<MANIFEST
{
  "tool": "tools/record_programs.sh",
  "set": "$split",
  "cpu_smoke": $([[ $smoke -eq 1 ]] && echo true || echo false),
  "quick": $([[ $quick -eq 1 ]] && echo true || echo false),
  "interrupted": $([[ $interrupted -eq 1 ]] && echo true || echo false),
  "commit": "$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)",
  "host": "$(json_escape "$(hostname)")",
  "gpus": "$(json_escape "$( (nvidia-smi -L 2>/dev/null || echo none) | tr '\n' ';')")",
  "nvidia_smi_fields": "$SMI_FIELDS",
  "nvidia_smi_fields_nolimit": "$SMI_FIELDS_NOLIMIT",
  "nvidia_smi_period_ms": $SMI_PERIOD_MS,
  "truth": "NAME.truth.json from GPUDOC_TRUTH_FILE (workloads/programs/_truth.py)",
  "finished_utc": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "programs": [
    $rows
  ]
}
MANIFEST
}

# ---------------------------------------------------------------------------------------------

if [[ $list -eq 0 ]]; then
    read -r -a record_args <<<"${GPUDOC_RECORD_ARGS:-}"
    if [[ $smoke -eq 0 ]]; then
        if [[ -z "$gpudoc" ]]; then
            if [[ -x "$ROOT/build-portable/src/cli/gpudoc" ]]; then
                gpudoc="$ROOT/build-portable/src/cli/gpudoc"
            else
                gpudoc=$(command -v gpudoc || true)
            fi
        fi
        [[ -n "$gpudoc" && -x "$gpudoc" ]] || die "gpudoc binary '${gpudoc:-gpudoc}' not found or not executable (--gpudoc BIN)" 3
        gpudoc=$(cd "$(dirname "$gpudoc")" && pwd)/$(basename "$gpudoc")
        command -v nvidia-smi >/dev/null || die "nvidia-smi is not on the PATH" 3
        gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
        [[ "${gpus:-0}" -ge 1 ]] || die "these programs need a GPU; nvidia-smi lists none" 3
    fi
    mkdir -p "$outdir" || die "cannot create '$outdir'"
    outdir=$(cd "$outdir" && pwd)
fi

if [[ $list -eq 1 ]]; then
    mode=list
    all_programs
    printf 'planned: %d program(s), about %d s (%d min %02d s) of wall time\n' \
        "$selected" "$planned_s" $(( planned_s / 60 )) $(( planned_s % 60 ))
    exit 0
fi
if [[ $force -eq 0 && $smoke -eq 0 ]]; then
    mode=check
    all_programs
    if [[ ${#existing[@]} -gt 0 ]]; then
        die "$outdir already holds ${existing[*]} (use another OUTDIR, or --force to overwrite)"
    fi
fi
mode=run
trap on_stop_signal INT TERM
start=$SECONDS
# Read torch and numpy from the disk once, so that the first program's set-up is not slower
# than the others'.
(cd "$ROOT" && "$python" -c 'import torch, numpy') >/dev/null 2>&1 </dev/null
all_programs
[[ $selected -gt 0 ]] || die "no program matches (--set $split${only:+ --only $only})"
write_manifest
if [[ $interrupted -eq 1 ]]; then
    echo "$PROG: stopped by a signal after $runs program(s); $outdir/manifest.json lists them" >&2
    exit 130
fi
echo "$runs program(s), $failed failed${failed_names[*]+: ${failed_names[*]}}; $(( SECONDS - start )) s (planned $planned_s s); $outdir/manifest.json"
[[ $failed -eq 0 ]]
