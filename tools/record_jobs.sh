#!/usr/bin/env bash
# Record gpudoc's suite of real jobs (workloads/jobs/) on a GPU machine, each as a gpudoc trace
# and as an nvidia-smi CSV log of the same run, with what a correct diagnosis of it should say.
#
#   tools/record_jobs.sh OUTDIR [--set test|tune|all] [--multi-gpu] [--list] [--gpudoc BIN]
#
#   --set S        which split: test (never looked at while tuning the diagnosis; record and
#                  commit it first), tune, all (default: test first, then tune), or test2 (a
#                  second held-out set with jobs and parameters the other two do not use, for a
#                  diagnosis changed after the first test run), or test3 (a third, recorded
#                  after the first test set's last miss, with the rules unchanged since test2)
#   --multi-gpu    the two-GPU jobs (DDP with torchrun, needs >= 2 GPUs) instead of the
#                  single-GPU ones
#   --list         print the jobs, their commands and the planned wall time; run nothing
#   --gpudoc BIN   the gpudoc binary (default $GPUDOC, else build-portable/src/cli/gpudoc, else
#                  gpudoc on the PATH)
#   --only REGEX   only the jobs whose name matches REGEX (grep -E)
#   --force        overwrite traces already in OUTDIR (default: refuse)
#   --quick        every job for 6 s only: a rehearsal on the GPU machine (not for the traces to
#                  keep: too short for the patterns to show)
#   --cpu-smoke    run every job for ~2 s on the CPU with tiny sizes, without gpudoc and
#                  nvidia-smi (checks the jobs and this script on a machine without a GPU)
#   --python PY    interpreter with torch (default $PYTHON, else python3)
#
# For each job NAME it writes, in OUTDIR:
#   NAME.jsonl    gpudoc record -o NAME.jsonl $GPUDOC_RECORD_ARGS -- <command>
#   NAME.csv      nvidia-smi --query-gpu=<SMI_FIELDS below> --format=csv -lms 100, from 1 s before
#                 the command to 2 s after it (so the memory released at exit is in it)
#   (the single-GPU jobs run on GPU 0; on a machine with more GPUs both files hold GPU 0 alone:
#   gpudoc record --gpus 0, nvidia-smi -i 0)
#   NAME.log      the command's output (its ::gpudoc lines: start, steps, end with gpu_busy_share)
#   NAME.cmd.txt  the exact command, the split, what the job is, and the expected diagnosis
# and manifest.json (every job: name, split, command, files, exit code, expected findings).
# It goes on past a failed job and exits 1 if any failed, 2 on bad usage, 3 if the machine
# lacks what the set needs; Ctrl-C (or SIGTERM) stops the running job, writes the manifest of
# what ran and exits 130. It never changes GPU settings. Run it from anywhere.
set -u

# NVLink multicast must stay off on these machines; the workloads force the same values.
export NCCL_NVLS_ENABLE=0
export TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export NVSHMEM_DISABLE_NVLS=1
# CUDA numbers GPUs fastest-first, NVML and nvidia-smi by PCI bus: the same order for both here.
export CUDA_DEVICE_ORDER=PCI_BUS_ID

# The columns gpudoc's nvidia-smi importer reads (src/telemetry/import_nvidia_smi.cpp), all
# documented by `nvidia-smi --help-query-gpu` (driver 580), plus power.limit: the board's limit,
# which the importer notes as "not imported" today but a diagnosis of power can use.
SMI_FIELDS="timestamp,index,uuid,name,pci.bus_id,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,power.limit,temperature.gpu,clocks.sm,clocks.max.sm,clocks_event_reasons.active"
SMI_PERIOD_MS=100
SMI_LEAD_S=1
SMI_TAIL_S=2

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PROG=record_jobs.sh

usage() { sed -n '2,32p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
die() { echo "$PROG: $1" >&2; exit "${2:-2}"; }

outdir="" split=all multi=0 list=0 only="" force=0 smoke=0 quick=0
QUICK_DURATION_S=6
gpudoc=${GPUDOC:-}
python=${PYTHON:-python3}
while [[ $# -gt 0 ]]; do
    case "$1" in
        --set) [[ $# -ge 2 ]] || die "--set needs test, tune or all"; split=$2; shift ;;
        --set=*) split=${1#--set=} ;;
        --multi-gpu) multi=1 ;;
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
case "$split" in test|tune|all|test2|test3) ;; *) die "--set must be test, tune, all, test2 or test3, not '$split'" ;; esac
if [[ $list -eq 0 && -z "$outdir" ]]; then
    die "usage: $PROG OUTDIR [--set test|tune|all] [--multi-gpu] [--list] [--gpudoc BIN] (try --help)"
fi

# ---------------------------------------------------------------------------------------------
# The jobs. job SPLIT NAME DURATION_S EXPECT CSV_EXPECT NOT_WRONG KEY DESCRIPTION -- SCRIPT ARGS
#   EXPECT      finding ids (docs/findings.md) a correct diagnosis of the gpudoc trace names
#   CSV_EXPECT  the same for the nvidia-smi CSV form ("-": nothing at warning or above, the
#               pattern cannot show without GPM/per-process data)
#   NOT_WRONG   ids that may appear besides (e.g. the power cap's info-level `throttled`)
#   KEY         the parameters the diagnosis is checked against (k=v, space separated)
# Durations keep each split on one H200 within ~4 min with set-up, the two-GPU set within ~5.
# ---------------------------------------------------------------------------------------------
single_gpu_jobs() {
    job test image_cpu_r50_w2 16 "sawtooth" "sawtooth" "throttled" \
        "starved=yes workers=2 expect_severity=critical" \
        "ResNet-50, batch 256, JPEG decode + RandomResizedCrop/flip/ColorJitter on the CPU in 2 DataLoader workers: the GPU waits for every batch (input starvation). Period = step_ms of the step lines; duty = gpu_busy_share." \
        -- image_classify.py --arch resnet50 --workers 2 --augment standard
    job test image_gpu_decode_r50 16 "healthy" "healthy" "throttled" \
        "starved=no" \
        "ResNet-50, batch 256, JPEG bytes decoded on the GPU (nvJPEG) and augmented on the GPU: the GPU is kept fed (compute-bound)." \
        -- image_classify.py --arch resnet50 --preprocess gpu --decode gpu --workers 2 --pin-memory
    job test lm_w4 15 "healthy" "healthy" "throttled" \
        "starved=no workers=4" \
        "GPT-style LM (12 x 1024, context 1024, batch 16), AdamW, bf16; BPE tokenization on the fly in 4 workers with a word cache: fed." \
        -- transformer_lm.py --workers 4 --pin-memory
    job test infer_low_r40 15 "sawtooth" "sawtooth" "plateau" \
        "rate=40 max_batch=64 max_wait_ms=5" \
        "Transformer classifier (12 x 1024, 256 tokens) served with dynamic batching at 40 requests/s (Poisson): a forward of 1-2 requests (~4 ms, launch-bound) every ~25 ms, the GPU waiting for requests in between (gpu_busy_share ~0.15). Not idle (it works), not healthy; below the 200 ms sensor resolution." \
        -- inference_server.py --rate 40 --max-wait-ms 5 --max-batch 64
    job test infer_high_load70 15 "healthy" "healthy" "throttled" \
        "load=0.7 max_batch=64 max_wait_ms=5" \
        "The same server at 70 % of its full-batch capacity (~4,000 requests/s): batches nearly full, the GPU busy nearly all the time (gpu_busy_share ~0.97)." \
        -- inference_server.py --load 0.7 --max-wait-ms 5 --max-batch 64
    job test leak_logits 16 "memory_growth" "memory_growth" "healthy throttled" \
        "leak=logits growth_gib_per_s=~0.5" \
        "LM training that keeps every 20th step's logits (256 MiB) on the GPU in a list: device memory climbs steadily (~0.5 GiB/s, leak_mib_per_s in the end line) for the whole run; the process then ends normally and the memory is freed at exit." \
        -- leaky_train.py --leak logits --leak-every 20
    job test ckpt_every4 19 "sawtooth" "sawtooth" "healthy throttled" \
        "period_s=4+ckpt_ms lost_share=ckpt_ms/period expect_severity=info" \
        "Compute-bound LM training (4 x 1024) that saves model + AdamW state (torch.save, fsync) every 4 s of training: the GPU idles for each save (~1 s, ckpt_ms in the step lines), so the true period is 4 s + ckpt_ms. A small share of GPU time lost: severity info." \
        -- checkpoint_train.py --ckpt-every-s 4 --layers 4
    job test shared_whole 15 "staircase" "-" "healthy throttled" \
        "processes=2 mode=concurrent" \
        "LM training sharing the GPU with a second process running bf16 8192^3 GEMMs the whole time: both time-slice, the job's step time about doubles. Per-process data shows it; an nvidia-smi CSV cannot (no per-process columns)." \
        -- shared_gpu.py --intruder-start-s 0

    job tune image_cpu_r18_w4_pin 16 "sawtooth" "sawtooth" "throttled" \
        "starved=yes workers=4 pin_memory=yes" \
        "ResNet-18, batch 256, heavy CPU augmentation (ColorJitter with hue, grayscale) in 4 pinned-memory workers: starved." \
        -- image_classify.py --arch resnet18 --workers 4 --pin-memory --augment heavy
    job tune image_gpu_aug_r50_w8 16 "healthy" "healthy" "throttled" \
        "starved=no workers=8" \
        "ResNet-50, batch 192: 8 workers only decode the JPEGs (PIL) into uint8 tensors, moved pinned to the GPU and augmented there: fed." \
        -- image_classify.py --arch resnet50 --batch-size 192 --preprocess gpu --decode cpu --workers 8 --pin-memory
    job tune lm_nocache_w2 15 "sawtooth" "sawtooth" "throttled" \
        "starved=yes workers=2 tokenizer_cache=off below_sensor_resolution=yes" \
        "GPT-style LM (8 x 768, context 512, batch 24) with a BPE tokenizer without a word cache in 2 workers: tokenization cannot keep up, the GPU works ~22 ms of every ~72 ms step (gpu_busy_share ~0.3): bursts shorter than the sensor's sample, utilization never saturates." \
        -- transformer_lm.py --workers 2 --no-cache --width 768 --layers 8 --heads 12 --context 512 --batch-size 24
    job tune infer_low_r150 15 "sawtooth" "sawtooth" "plateau" \
        "rate=150 max_batch=32 max_wait_ms=10" \
        "Inference server (8 layers) at 150 requests/s, waiting up to 10 ms for a batch of 32: batches of 1-3 requests every ~12 ms, the GPU waiting for requests in between." \
        -- inference_server.py --rate 150 --max-wait-ms 10 --max-batch 32 --layers 8
    job tune infer_high_load65 15 "healthy" "healthy" "throttled" \
        "load=0.65 max_batch=128 max_wait_ms=2" \
        "Inference server (8 layers) at 65 % of its capacity with batches of up to 128: the GPU busy nearly all the time." \
        -- inference_server.py --load 0.65 --max-wait-ms 2 --max-batch 128 --layers 8
    job tune leak_graph 16 "memory_growth" "memory_growth" "healthy throttled" \
        "leak=graph growth_gib_per_s=~0.7" \
        "LM training whose validation (one sequence) every 24 steps runs without torch.no_grad() and sums the loss into a running total: every validation graph, activations included (~0.24 GiB), stays alive; memory climbs, then the process ends normally." \
        -- leaky_train.py --leak graph --leak-every 24 --val-batch 1
    job tune ckpt_every3_big 19 "sawtooth" "sawtooth" "healthy throttled" \
        "period_s=3+ckpt_ms lost_share=ckpt_ms/period expect_severity=warning" \
        "A larger LM (12 x 1024, ~2 GB of state) saving model + AdamW state every 3 s of training: pauses of ~2.3 s, a larger share of GPU time lost (~40 %) than the test set's run." \
        -- checkpoint_train.py --ckpt-every-s 3 --layers 12 --context 512 --batch-size 24
    job tune shared_midway 16 "staircase" "-" "healthy throttled" \
        "processes=2 mode=concurrent intruder_start_s=7" \
        "LM training alone for 7 s, then a second process starts GEMMs on the same GPU until the end: the job's step time about doubles from then on." \
        -- shared_gpu.py --intruder-start-s 7 --layers 8

    job test2 image_gpu_decode_r34 15 "healthy" "healthy" "throttled" \
        "starved=no" \
        "ResNet-34, batch 256, JPEGs decoded (nvJPEG) and augmented on the GPU: fed." \
        -- image_classify.py --arch resnet34 --preprocess gpu --decode gpu --workers 3 --pin-memory
    job test2 image_cpu_r34_w3 15 "sawtooth" "sawtooth" "throttled" \
        "starved=yes workers=3 expect_severity=critical" \
        "ResNet-34, batch 256, heavy CPU augmentation in 3 workers: starved." \
        -- image_classify.py --arch resnet34 --workers 3 --augment heavy
    job test2 lm_wide_w6 15 "healthy" "healthy" "throttled" \
        "starved=no workers=6" \
        "GPT-style LM (10 x 1280), tokenization in 6 pinned workers with the word cache: fed." \
        -- transformer_lm.py --workers 6 --pin-memory --width 1280 --layers 10 --heads 10
    job test2 infer_low_r80 15 "sawtooth" "sawtooth" "plateau" \
        "rate=80 max_batch=64 max_wait_ms=5" \
        "Inference server (8 layers) at 80 requests/s: small batches, the GPU waiting for requests in between." \
        -- inference_server.py --rate 80 --max-wait-ms 5 --max-batch 64 --layers 8
    job test2 leak_logits_every12 15 "memory_growth" "memory_growth" "healthy throttled" \
        "leak=logits" \
        "LM training keeping every 12th step's logits on the GPU: memory climbs, then the process ends normally." \
        -- leaky_train.py --leak logits --leak-every 12
    job test3 image_cpu_r18_w1 15 "sawtooth" "sawtooth" "throttled" \
        "starved=yes workers=1 expect_severity=critical" \
        "ResNet-18, batch 256, standard CPU augmentation in a single DataLoader worker: starved." \
        -- image_classify.py --arch resnet18 --workers 1 --augment standard
    job test3 lm_deep_w3 15 "healthy" "healthy" "throttled" \
        "starved=no workers=3" \
        "GPT-style LM (16 x 1024, context 768, batch 12), tokenization with the word cache in 3 pinned workers: fed." \
        -- transformer_lm.py --workers 3 --pin-memory --layers 16 --context 768 --batch-size 12
    job test3 infer_low_r20 15 "sawtooth" "sawtooth" "plateau" \
        "rate=20 max_batch=64 max_wait_ms=5" \
        "Inference server (12 layers) at 20 requests/s: a forward of one request every ~50 ms, the GPU waiting in between." \
        -- inference_server.py --rate 20 --max-wait-ms 5 --max-batch 64
}

multi_gpu_jobs() {
    job test ddp_host_slow1 15 "pulse" "pulse" "throttled" \
        "straggler=1 straggler_kind=host slow_ms=150" \
        "DDP on 2 GPUs (torchrun, NCCL); rank 1 runs 150 ms of CPU-bound Python after each step: GPU 0 spins in the all-reduce waiting, GPU 1 idles during the host work. Straggler: rank 1 (its GPU by the rank_start line's pci/gpu_uuid)." \
        -- ddp_train.py --slow-rank 1 --slow-kind host --slow-ms 150
    job test ddp_input_slow0 15 "pulse" "pulse" "throttled sawtooth" \
        "straggler=0 straggler_kind=host cause=input" \
        "DDP on 2 GPUs; rank 0's DataLoader is starved (1 worker, tokenizer without a word cache): rank 1 waits in the all-reduce for rank 0's batches. Straggler: rank 0." \
        -- ddp_train.py --slow-rank 0 --slow-kind input --slow-workers 1
    job test ddp_ckpt_slow1 15 "pulse" "pulse" "throttled sawtooth" \
        "straggler=1 straggler_kind=host cause=checkpoint ckpt_every_s=3" \
        "DDP on 2 GPUs; rank 1 saves model + AdamW state to disk every 3 s while rank 0 waits in the next all-reduce. Straggler: rank 1, intermittent." \
        -- ddp_train.py --slow-rank 1 --slow-kind checkpoint --ckpt-every-s 3
    job test ddp_balanced 15 "healthy" "healthy" "throttled" \
        "straggler=none" \
        "DDP on 2 GPUs, both ranks fed and equal: no straggler, no pulse." \
        -- ddp_train.py --slow-rank -1

    job tune ddp_host_slow0 15 "pulse" "pulse" "throttled" \
        "straggler=0 straggler_kind=host slow_ms=80" \
        "DDP on 2 GPUs; rank 0 runs 80 ms of CPU-bound Python per step. Straggler: rank 0." \
        -- ddp_train.py --slow-rank 0 --slow-kind host --slow-ms 80 --layers 6
    job tune ddp_input_slow1 15 "pulse" "pulse" "throttled sawtooth" \
        "straggler=1 straggler_kind=host cause=input" \
        "DDP on 2 GPUs; rank 1's DataLoader is starved (no worker process: tokenization in the training loop). Straggler: rank 1." \
        -- ddp_train.py --slow-rank 1 --slow-kind input --slow-workers 0 --batch-size 12
    job tune ddp_ckpt_slow0 15 "pulse" "pulse" "throttled sawtooth" \
        "straggler=0 straggler_kind=host cause=checkpoint ckpt_every_s=4" \
        "DDP on 2 GPUs; rank 0 (as usual in training scripts) saves model + AdamW state every 4 s; rank 1 waits. Straggler: rank 0, intermittent." \
        -- ddp_train.py --slow-rank 0 --slow-kind checkpoint --ckpt-every-s 4 --layers 12
    job tune ddp_balanced_wide 15 "healthy" "healthy" "throttled" \
        "straggler=none" \
        "DDP on 2 GPUs with a wider model (1536, 6 layers), balanced: no straggler." \
        -- ddp_train.py --slow-rank -1 --width 1536 --layers 6 --heads 16

    job test2 ddp_input_slow0_w0 15 "pulse" "pulse" "throttled sawtooth" \
        "straggler=0 straggler_kind=host cause=input" \
        "DDP on 2 GPUs; rank 0 tokenizes in the training loop (no worker process). Straggler: rank 0." \
        -- ddp_train.py --slow-rank 0 --slow-kind input --slow-workers 0 --batch-size 12
    job test2 ddp_gpu_slow0 15 "pulse" "pulse" "throttled" \
        "straggler=0 straggler_kind=compute slow_ms=80" \
        "DDP on 2 GPUs; rank 0 queues 80 ms of extra bf16 matmuls per step: rank 1 waits in the all-reduce. Straggler: rank 0, its GPU the busy one." \
        -- ddp_train.py --slow-rank 0 --slow-kind gpu --slow-ms 80
    job test2 ddp_balanced_deep 15 "healthy" "healthy" "throttled" \
        "straggler=none" \
        "DDP on 2 GPUs, 10 layers, balanced: no straggler." \
        -- ddp_train.py --slow-rank -1 --layers 10
    job test3 ddp_balanced_b24 15 "healthy" "healthy" "throttled" \
        "straggler=none" \
        "DDP on 2 GPUs, batch 24 per rank, 6 layers, balanced: no straggler." \
        -- ddp_train.py --slow-rank -1 --batch-size 24 --layers 6
    job test3 ddp_host_slow0_ms60 15 "pulse" "pulse" "throttled" \
        "straggler=0 straggler_kind=host slow_ms=60" \
        "DDP on 2 GPUs; rank 0 runs 60 ms of CPU-bound Python per step. Straggler: rank 0." \
        -- ddp_train.py --slow-rank 0 --slow-kind host --slow-ms 60
    job test3 ddp_gpu_slow1 15 "pulse" "pulse" "throttled" \
        "straggler=1 straggler_kind=compute slow_ms=120" \
        "DDP on 2 GPUs; rank 1 queues 120 ms of extra bf16 matmuls per step: rank 0 waits in the all-reduce. Straggler: rank 1, its GPU the busy one." \
        -- ddp_train.py --slow-rank 1 --slow-kind gpu --slow-ms 120
}

# Seconds of set-up before a job's start line plus gpudoc's and nvidia-smi's start and stop, for
# the planned time (measured on an H200 machine; the first job also pays for cold caches).
setup_estimate_s() {
    case "$1" in
        ddp_train.py) echo 19 ;;
        image_classify.py) echo 11 ;;
        *) echo 10 ;;
    esac
}

# ---------------------------------------------------------------------------------------------

planned_s=0 runs=0 failed=0 jobs_selected=0 interrupted=0 job_pid=""
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

command_for() {  # sets cmd=(...) for SCRIPT DURATION ARGS...
    local script=$1 duration=$2
    shift 2
    if [[ "$script" == ddp_train.py && $smoke -eq 0 ]]; then
        cmd=("$python" -m torch.distributed.run --standalone --nproc_per_node=2
             "workloads/jobs/$script" --duration "$duration" "$@")
    else
        cmd=("$python" "workloads/jobs/$script" --duration "$duration" "$@")
    fi
    if [[ $smoke -eq 1 ]]; then
        cmd+=(--cpu-smoke)
    fi
}

write_cmd_txt() {  # NAME SPLIT EXPECT CSV_EXPECT NOT_WRONG KEY DESCRIPTION
    {
        echo "name: $1"
        echo "split: $2 ($([[ $2 == test ]] && echo 'held out: never looked at while tuning the diagnosis' || echo 'for tuning'))"
        echo "command (from the repository root): $full_text"
        echo "workload command: $cmd_text"
        echo "nvidia-smi: nvidia-smi ${smi_gpus[*]+${smi_gpus[*]} }--query-gpu=$SMI_FIELDS --format=csv -lms $SMI_PERIOD_MS > $1.csv"
        echo "what it is: $7"
        echo "expected findings (gpudoc trace): $3"
        echo "expected findings (nvidia-smi CSV): $([[ $4 == - ]] && echo 'none at warning or above (not visible without per-process/GPM data)' || echo "$4")"
        echo "also acceptable: ${5:-none}"
        echo "key parameters: $6"
        echo "ground truth: the ::gpudoc lines in $1.log: the start line (parameters, GPU identity, PIDs), step lines (step_ms, gpu_ms: the GPU time of the step, data_ms, slow_ms/ckpt_ms, memory), the end line's gpu_busy_share (the share of wall time the GPU worked; 1 - it = the share lost)"
        echo "recorded: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname) commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    } >"$outdir/$1.cmd.txt"
}

# job SPLIT NAME DURATION EXPECT CSV_EXPECT NOT_WRONG KEY DESCRIPTION -- SCRIPT ARGS...
job() {
    local split_of=$1 name=$2 duration=$3 expect=$4 csv_expect=$5 not_wrong=$6 key=$7 desc=$8
    shift 8
    [[ "$1" == "--" ]] || die "internal: job $name: missing -- before the script" 4
    shift
    local script=$1
    shift
    [[ $quick -eq 1 ]] && duration=$QUICK_DURATION_S
    if [[ "$split" != "$split_of" && ( "$split" != all || "$split_of" == test2 || "$split_of" == test3 ) ]]; then return 0; fi
    if [[ -n "$only" ]] && ! grep -Eq -- "$only" <<<"$name"; then return 0; fi
    local cmd full full_text cmd_text
    command_for "$script" "$duration" "$@"
    if [[ $smoke -eq 1 ]]; then
        full=("${cmd[@]}")
    else
        full=("$gpudoc" record -o "$outdir/$name.jsonl" ${record_args[@]+"${record_args[@]}"} -- "${cmd[@]}")
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
    jobs_selected=$(( jobs_selected + 1 ))
    if [[ $mode == list ]]; then
        printf '%-4s %-22s ~%3ss  expect %-14s csv %-14s  %s\n' "$split_of" "$name" "$estimate" \
            "$expect" "$csv_expect" "$cmd_text"
        return 0
    fi
    [[ $interrupted -eq 0 ]] || return 0
    write_cmd_txt "$name" "$split_of" "$expect" "$csv_expect" "$not_wrong" "$key" "$desc"
    local rc
    run_one "$name" "$duration" "$split_of"
    rc=$?
    runs=$((runs + 1))
    local ok=true
    if [[ $rc -ne 0 ]] || [[ $smoke -eq 0 && ! -s "$outdir/$name.jsonl" ]]; then
        ok=false
        failed=$((failed + 1))
        failed_names+=("$name")
    fi
    manifest_rows+=("$(printf '{"name":"%s","split":"%s","script":"%s","duration_s":%s,"command":"%s","trace":"%s","csv":"%s","log":"%s","exit_code":%s,"ok":%s,"expected":%s,"expected_csv":%s,"not_wrong":%s,"key":"%s","description":"%s"}' \
        "$name" "$split_of" "$script" "$duration" "$(json_escape "$full_text")" \
        "$([[ $smoke -eq 0 ]] && echo "$name.jsonl")" "$([[ $smoke -eq 0 ]] && echo "$name.csv")" \
        "$name.log" "$rc" "$ok" "$(json_words "$expect")" "$(json_words "$csv_expect")" \
        "$(json_words "$not_wrong")" "$(json_escape "$key")" "$(json_escape "$desc")")")
}

run_one() {  # NAME DURATION SPLIT; uses full; returns the command's exit code
    local name=$1 duration=$2 split_of=$3 smi_pid="" rc t0=$SECONDS
    local limit=$(( ${duration%.*} + 240 ))   # a hung job (a stuck collective) must not stop the set
    if [[ $smoke -eq 0 ]]; then
        nvidia-smi ${smi_gpus[@]+"${smi_gpus[@]}"} --query-gpu="$SMI_FIELDS" --format=csv -lms "$SMI_PERIOD_MS" \
            >"$outdir/$name.csv" 2>"$outdir/$name.smi.err" &
        smi_pid=$!
        sleep "$SMI_LEAD_S"
    fi
    # In the background so that a stop signal reaches it through on_stop_signal.
    (cd "$ROOT" && exec timeout -k 20 "$limit" "${full[@]}") </dev/null >"$outdir/$name.log" 2>&1 &
    job_pid=$!
    until wait "$job_pid"; rc=$?; ! kill -0 "$job_pid" 2>/dev/null; do :; done
    job_pid=""
    if [[ -n "$smi_pid" ]]; then
        sleep "$SMI_TAIL_S"
        kill "$smi_pid" 2>/dev/null
        wait "$smi_pid" 2>/dev/null
        [[ -s "$outdir/$name.smi.err" ]] || rm -f "$outdir/$name.smi.err"
    fi
    local size="-"
    [[ -f "$outdir/$name.jsonl" ]] && size="$(stat -c %s "$outdir/$name.jsonl") B"
    printf '%-4s %-22s rc=%-3s trace %-12s %4ss\n' "$split_of" "$name" "$rc" "$size" "$(( SECONDS - t0 ))"
    return "$rc"
}

# SIGINT/SIGTERM: stop the running job (gpudoc stops its process group and closes its trace), run
# no further job, and still write the manifest.
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
    cat >"$outdir/manifest.json" <<EOF
{
  "tool": "tools/record_jobs.sh",
  "set": "$split",
  "multi_gpu": $([[ $multi -eq 1 ]] && echo true || echo false),
  "cpu_smoke": $([[ $smoke -eq 1 ]] && echo true || echo false),
  "quick": $([[ $quick -eq 1 ]] && echo true || echo false),
  "interrupted": $([[ $interrupted -eq 1 ]] && echo true || echo false),
  "commit": "$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)",
  "host": "$(json_escape "$(hostname)")",
  "gpus": "$(json_escape "$( (nvidia-smi -L 2>/dev/null || echo none) | tr '\n' ';')")",
  "nvidia_smi_fields": "$SMI_FIELDS",
  "nvidia_smi_period_ms": $SMI_PERIOD_MS,
  "finished_utc": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "jobs": [
    $rows
  ]
}
EOF
}

# ---------------------------------------------------------------------------------------------

if [[ $list -eq 0 ]]; then
    read -r -a record_args <<<"${GPUDOC_RECORD_ARGS:-}"
    smi_gpus=()
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
        need=$([[ $multi -eq 1 ]] && echo 2 || echo 1)
        [[ "${gpus:-0}" -ge "$need" ]] || die "this set needs $need GPU(s); nvidia-smi lists ${gpus:-0}" 3
        # A single-GPU job runs on GPU 0 (CUDA_DEVICE_ORDER=PCI_BUS_ID: the same GPU as NVML's 0);
        # on a machine with more GPUs, record that one alone, so the trace shows the job only.
        if [[ $multi -eq 0 && "$gpus" -gt 1 ]]; then
            record_args+=(--gpus 0)
            smi_gpus=(-i 0)
        fi
    fi
    mkdir -p "$outdir" || die "cannot create '$outdir'"
    outdir=$(cd "$outdir" && pwd)
fi

all_jobs() {
    if [[ $multi -eq 1 ]]; then multi_gpu_jobs; else single_gpu_jobs; fi
}

if [[ $list -eq 1 ]]; then
    mode=list
    all_jobs
    printf 'planned: %d job(s), about %d s (%d min %02d s) of wall time\n' \
        "$jobs_selected" "$planned_s" $(( planned_s / 60 )) $(( planned_s % 60 ))
    exit 0
fi
if [[ $force -eq 0 && $smoke -eq 0 ]]; then
    mode=check
    all_jobs
    if [[ ${#existing[@]} -gt 0 ]]; then
        die "$outdir already holds ${existing[*]} (use another OUTDIR, or --force to overwrite)"
    fi
fi
mode=run
trap on_stop_signal INT TERM
start=$SECONDS
# Read torch and torchvision from the disk once, so that the first job's set-up is not slower
# than the others' (a cold start adds ~10 s on a fresh machine).
(cd "$ROOT" && "$python" -c 'import torch, torchvision, PIL') >/dev/null 2>&1 </dev/null
all_jobs
[[ $jobs_selected -gt 0 ]] || die "no job matches (--set $split${only:+ --only $only})"
write_manifest
if [[ $interrupted -eq 1 ]]; then
    echo "$PROG: stopped by a signal after $runs job(s); $outdir/manifest.json lists them" >&2
    exit 130
fi
summary="$runs job(s), $failed failed${failed_names[*]+: ${failed_names[*]}}; $(( SECONDS - start )) s (planned $planned_s s); $outdir/manifest.json"
echo "$summary"
[[ $failed -eq 0 ]]
