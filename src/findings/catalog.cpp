// The catalog. Every next step names a real command or setting; docs/findings.md documents each
// entry and tests/unit/findings checks that the two agree. Ids are stable: never rename one.
#include "findings/finding.hpp"

namespace gpudoc::findings {
namespace {

// The entries are data, laid out by hand one field group per line: clang-format leaves them.
// clang-format off

// The waveform findings of `gpudoc diagnose`.
std::vector<CatalogEntry> diagnose_entries() {
  return {
      {"idle", "diagnose", "Idle: no meaningful work on the GPU",
       "GPU utilization and SM activity stay near zero over the analysed span: the GPU holds a "
       "context (and perhaps memory) but runs almost no kernels. Fine between jobs; a waste when a "
       "job was supposed to be running on it.",
       {"Check that the job really targets this GPU: `nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv` "
        "and the job's CUDA_VISIBLE_DEVICES / torch.device",
        "If the job is running but waiting (on data, on another rank, on a lock), profile its host "
        "side: `nsys profile -t cuda,nvtx,osrt -o idle_report python3 train.py`"}},
      {"healthy", "diagnose", "Healthy: saturated with useful work",
       "The GPU is busy nearly all the time and, where GPM is available, its SMs and tensor cores "
       "are busy too: the work is compute-bound and the GPU is the bottleneck, as it should be.",
       {"Keep a baseline of this run to catch regressions: `gpudoc bench` for the hardware and a "
        "recorded trace (`gpudoc record -o run.jsonl -- CMD`) for the workload",
        "Further speed comes from the kernels themselves (lower precision such as bf16/FP8, larger "
        "tiles, torch.compile): measure them with `ncu --set full -o kernels python3 train.py`"}},
      {"sawtooth", "diagnose", "Sawtooth: the GPU waits for its input",
       "Bursts of work separated by idle troughs: between steps the GPU waits for the host (data "
       "loading, preprocessing, Python, synchronisation, checkpointing). The troughs are GPU time "
       "lost. When the alternation is faster than the 200 ms utilization sensor, the curve shows a "
       "wandering middle level instead of a square wave; GPM SM activity and power still reveal it, "
       "and only a profiler can show each gap.",
       {"Feed the GPU in the background: torch.utils.data.DataLoader(..., num_workers=N, "
        "pin_memory=True, prefetch_factor=2 or more, persistent_workers=True), and copy batches with "
        "tensor.to('cuda', non_blocking=True)",
        "Remove per-step synchronisations (tensor.item(), .cpu(), print of GPU tensors) from the "
        "training loop",
        "See each gap and its cause (data loading, a sync, launches, pageable copies): `gpudoc profile -- "
        "python3 train.py`; `nsys profile -t cuda,nvtx,osrt -o gaps python3 train.py` adds the host's system calls",
        "Overlap the next batch with the current step (a CUDA stream for the host-to-device copy), "
        "or move preprocessing to the GPU (e.g. NVIDIA DALI)"}},
      {"plateau", "diagnose", "Plateau: steady activity far below what the chip can do",
       "The GPU is steadily 'busy' but does little: either launch-bound (tiny kernels issued one "
       "by one from Python: flat low-to-middle utilization, SM activity near zero) or busy-but-idle "
       "(utilization high, but SM, tensor and DRAM activity low: kernels that occupy the GPU's time "
       "without using its SMs, e.g. spinning, waiting or serial kernels).",
       {"Launch-bound: `gpudoc profile -- python3 train.py` says whether a CUDA Graph pays and the step time "
        "to expect; capture the step in a CUDA Graph with torch.compile(model, "
        "mode=\"reduce-overhead\") or torch.cuda.graphs (torch.cuda.CUDAGraph), and batch more work "
        "per kernel; `gpudoc bench --only launch` measures the launch cost on this machine",
        "Busy-but-idle: find the kernels that hold the GPU with `nsys profile -t cuda,nvtx -o "
        "plateau python3 train.py`, then inspect the top one with `ncu --set full -k <kernel> -c 1 "
        "python3 train.py`"}},
      {"memory_bound", "diagnose", "Memory-bound: kernels at the HBM bandwidth roof",
       "The GPU is fully busy, device memory bandwidth is near its peak and the tensor cores are "
       "idle: the kernels move bytes rather than do math (elementwise, copies, reductions). More "
       "FLOP/s cannot help; fewer bytes can.",
       {"Fuse elementwise chains so intermediates stay on chip: torch.compile(model) (Inductor "
        "fuses pointwise ops), or fused optimizers (torch.optim.AdamW(..., fused=True))",
        "Move fewer bytes: bf16/fp16 activations (torch.autocast('cuda', dtype=torch.bfloat16)), "
        "avoid needless .contiguous()/.clone() copies",
        "Compare the achieved bandwidth with this GPU's measured ceiling: `gpudoc bench --only hbm`, "
        "and per kernel with `ncu --section MemoryWorkloadAnalysis python3 train.py`"}},
      {"pulse", "diagnose", "Pulse: GPUs wait in communication for a straggler",
       "Several GPUs: some read busy while spinning inside collective communication (high "
       "utilization, low SM activity, little DRAM traffic) because a peer (the straggler) arrives "
       "late at each collective. The waiting share is lost on every waiting GPU.",
       {"Compare per-rank step times and what the straggler does before each collective; profile "
        "every rank: `nsys profile -t cuda,nvtx,osrt -o rank%q{RANK} python3 train.py`",
        "Log NCCL's view of the communicator (topology, algorithms, transports): NCCL_DEBUG=INFO "
        "(NCCL_DEBUG_SUBSYS=INIT,COLL for more)",
        "Balance the work across ranks (equal shards and sequence lengths, no rank-0-only work "
        "such as logging or checkpointing inside the step); check the straggler GPU's clocks and "
        "throttle reasons: `nvidia-smi -q -d PERFORMANCE -i <gpu>`",
        "Measure the interconnect against its ceiling: nccl-tests `all_reduce_perf -b 8 -e 1G -f 2 -g <ngpus>`"}},
      {"staircase", "diagnose", "Staircase: processes contend for one GPU",
       "Several processes (or MIG instances) share one GPU and take turns or time-slice: each one's "
       "per-process utilization rises when the others' falls. Every process runs slower than it "
       "would alone by roughly the share the others take.",
       {"List who shares the GPU: `nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv` "
        "and `nvidia-smi pmon -s u`",
        "Give each job its own GPU (CUDA_VISIBLE_DEVICES) or a MIG instance (`nvidia-smi mig -lgip` "
        "lists the profiles); changing MIG layout is an administrator's decision",
        "If sharing is intended, let kernels of different processes run concurrently instead of "
        "time-slicing with MPS: `nvidia-cuda-mps-control -d` (see the MPS documentation for limits)"}},
      {"memory_growth", "diagnose", "Memory growth: device memory climbs without release",
       "Device memory in use rises steadily or in steps and is not given back: a leak (tensors kept "
       "alive by a list, a history of losses with their graphs, a cache) or an allocator that keeps "
       "fragmenting. At the rate seen the GPU runs out of memory at the projected time.",
       {"Record the allocations and where they come from: torch.cuda.memory._record_memory_history(), "
        "then torch.cuda.memory._dump_snapshot(\"snap.pickle\") and open it at https://pytorch.org/memory_viz",
        "Print the allocator's view each N steps: torch.cuda.memory_allocated(), "
        "torch.cuda.memory_reserved(), torch.cuda.memory_summary()",
        "Look for tensors kept across steps (loss appended without .item() or .detach()); if "
        "reserved grows while allocated does not, try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"}},
      {"throttled", "diagnose", "Throttled: clocks held below their maximum",
       "The SM clock is held below its maximum by the driver's clock-event reasons: the software "
       "power cap (the board is at its power limit: expected under heavy load, a fault when the "
       "limit was lowered), thermal slowdown, hardware slowdown or the power brake (faults).",
       {"See the active reasons, limits and clocks: `nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE,CLOCK -i <gpu>`",
        "Thermal or hardware slowdown: check the cooling, airflow and inlet temperature of the node"
        "; the GPU's slowdown temperature is in `nvidia-smi -q -d TEMPERATURE`",
        "Power cap with a lowered limit: compare `power.limit` with `power.default_limit` "
        "(`nvidia-smi --query-gpu=power.limit,power.default_limit --format=csv`); changing it is an "
        "administrator's decision"}},
      {"insufficient_data", "diagnose", "Insufficient data: too little telemetry to diagnose",
       "The input holds too few usable samples (empty, too short, gaps, missing columns) for a "
       "diagnosis of this GPU or span. Nothing is concluded about it.",
       {"Record longer, at native rates, with all metric groups: `gpudoc record -o run.jsonl --duration 60 -- CMD`",
        "For nvidia-smi logs, include utilization.gpu, the board's power limit and name, and log at 100-500 ms: "
        "`nvidia-smi --query-gpu=timestamp,index,name,utilization.gpu,utilization.memory,memory.used,memory.total,"
        "power.draw,power.limit,temperature.gpu,clocks.sm,clocks.max.sm,clocks_event_reasons.active --format=csv "
        "-lms 100`"}},
  };
}

// `gpudoc health`: one entry per check; the check's result says pass/warn/fail. The next steps of a
// health entry are the ones its check prints, one per case, in the order the check names them
// (health/checks.cpp, health/xid.cpp: findings::next_step(id, index)).
std::vector<CatalogEntry> health_entries() {
  return {
      {"health_gpu_lost", "health", "GPU lost during the health check",
       "The GPU stopped answering NVML while gpudoc checked it (GPU_IS_LOST / RESET_REQUIRED): it fell off the "
       "bus or needs a reset. Nothing else about it can be checked.",
       {"Drain the node; look for XID 79 in `sudo dmesg`; a GPU that fell off the bus needs a reboot (and the "
        "vendor if it recurs: `sudo nvidia-bug-report.sh`)"}},
      {"health_persistence_mode", "health", "Persistence mode",
       "Without persistence the driver tears the GPU state down whenever no process holds it, so every job start "
       "pays the initialisation again and the first NVML/CUDA call is slow.",
       {"Keep the driver loaded (administrator): `sudo systemctl enable --now nvidia-persistenced`"}},
      {"health_compute_mode", "health", "Compute mode",
       "Exclusive-process lets one process use the GPU at a time; prohibited lets none. Either makes a second job "
       "fail to create a CUDA context.",
       {"Intended on scheduler-managed nodes; otherwise `nvidia-smi -q -d COMPUTE` shows it and an administrator "
        "can reset it with `nvidia-smi -c DEFAULT -i <gpu>`",
        "Ask the administrator why; `nvidia-smi -c DEFAULT -i <gpu>` restores it", "See `nvidia-smi -q -d COMPUTE`"}},
      {"health_mig", "health", "MIG mode",
       "With MIG on, each job sees one GPU instance (a slice of the SMs and memory), not the whole GPU; a pending "
       "MIG change applies only after a GPU reset.",
       {"If whole-GPU jobs run here, ask the administrator to disable MIG (`nvidia-smi -mig 0`); list the layout "
        "with `nvidia-smi mig -lgi`",
        "Apply or undo the pending change (administrator): reset the idle GPU with `nvidia-smi -r -i <gpu>`"}},
      {"health_ecc", "health", "ECC mode and error counts",
       "ECC protects device memory. Uncorrectable errors since the driver loaded mean data was lost and the GPU "
       "needs attention; uncorrectable errors in the board's history are a reason to watch it.",
       {"Drain the GPU; check row remapping (`nvidia-smi -q -d ROW_REMAPPER`) and the kernel log for XID 48/94/95; "
        "reset the GPU (`nvidia-smi -r -i <gpu>`) and report persistent errors to the vendor",
        "Enable ECC (administrator; takes effect after a reboot): `nvidia-smi -e 1 -i <gpu>`",
        "Reboot to apply, or undo the pending change (administrator)",
        "Check that rows were remapped (`nvidia-smi -q -d ROW_REMAPPER`); watch the count with `gpudoc report`"}},
      {"health_row_remapping", "health", "Row remapping",
       "Ampere and newer GPUs repair memory rows with uncorrectable errors by remapping them to spares at the next "
       "GPU reset. A pending remap needs that reset; a failed remap cannot be repaired.",
       {"Drain the GPU and contact the vendor (a remapping failure is an RMA condition)",
        "Drain the GPU and reset it to apply the remap: `nvidia-smi -r -i <gpu>` (or reboot)",
        "Remapped and working; watch the count over time with `gpudoc report` (spare rows are finite)"}},
      {"health_retired_pages", "health", "Retired pages",
       "GPUs before Ampere retire memory pages with repeated or uncorrectable ECC errors; a pending retirement takes "
       "effect at the next driver load.",
       {"Drain the GPU and reload the driver or reboot to retire the pages",
        "Watch the count with `gpudoc report`; report growth to the vendor"}},
      {"health_temperature", "health", "Temperature against the GPU's own thresholds",
       "The hottest reading during the check against the slowdown, shutdown and maximum operating temperatures "
       "the driver reports for this GPU (never fixed degrees). At the slowdown threshold the clocks drop.",
       {"Check the node's cooling (fans, airflow, inlet temperature, blocked slots); see "
        "`nvidia-smi -q -d TEMPERATURE,PERFORMANCE -i <gpu>`"}},
      {"health_power", "health", "Power limit",
       "The power limit the board enforces against its default. A lowered limit makes the clocks drop earlier "
       "under heavy load.",
       {"Compare `nvidia-smi --query-gpu=power.limit,power.default_limit,enforced.power.limit --format=csv`; "
        "restoring it (`nvidia-smi -pl <watts>`) is an administrator's decision"}},
      {"health_clocks", "health", "SM clock under load",
       "During gpudoc's short load the median SM clock should be within 3 % of the maximum. Below it, the clock "
       "event reasons say why: power cap (warn), thermal or hardware slowdown (fail).",
       {"Hardware slowdown / power brake: check the board's power supply and the node's BMC log; thermal: check "
        "cooling. See `nvidia-smi -q -d PERFORMANCE -i <gpu>`",
        "See the limit and reasons: `nvidia-smi -q -d PERFORMANCE,POWER -i <gpu>`; a lowered power limit or locked "
        "clocks (`nvidia-smi -q -d CLOCK`) are an administrator's settings",
        "Run `gpudoc health` where CUDA is available to check clocks under load"}},
      {"health_pcie_link", "health", "PCIe link under load",
       "The PCIe generation and width under load against the most this GPU and system allow. A link trained below "
       "it (downtrained) silently slows every host-to-GPU transfer. At idle the GPU lowers its link speed to save "
       "power, so only a reading under load counts.",
       {"Reseat the GPU or riser and check the slot's BIOS setting (PCIe speed); see `nvidia-smi -q -d PCIE -i <gpu>` "
        "and `sudo lspci -vv -s <bus id>` (LnkSta vs LnkCap); measure with `gpudoc bench --only pcie`",
        "Run `gpudoc health` with its load (where CUDA is available) to see the link under load"}},
      {"health_nvlink", "health", "NVLink links and errors",
       "Each NVLink's state and its data-link error counters (CRC, replay, recovery) since the driver loaded. A "
       "down link cuts GPU-to-GPU bandwidth; growing counters point to a marginal link.",
       {"Check `nvidia-smi nvlink -s -i <gpu>` and, on NVSwitch systems, that nvidia-fabricmanager runs; a down link "
        "halves or worse the GPU-to-GPU bandwidth (`gpudoc bench --only p2p`)",
        "Watch whether the counters grow (`nvidia-smi nvlink -e -i <gpu>`, `gpudoc report`); growing recovery "
        "counts point to a marginal link (reseat, vendor)"}},
      {"health_xid", "health", "XID errors",
       "XIDs are the driver's error reports, seen through NVML events while gpudoc runs and in the kernel log. "
       "NVIDIA's XID catalog sorts them by the action they need: application error (restart the app), reset the "
       "GPU, reboot the node, or informational.",
       {"Drain the node and reboot it (the catalog's RESTART_BM: a GPU that fell off the bus cannot be reached for a "
        "reset); report a recurrence to the vendor with `sudo nvidia-bug-report.sh`",
        "Drain the GPU and reset it (`nvidia-smi -r -i <gpu>` once idle, or reboot); check ECC and row remapping; "
        "report a recurrence with `sudo nvidia-bug-report.sh`",
        "The GPU is fine; the application faulted: rerun it with `CUDA_LAUNCH_BLOCKING=1` or under "
        "`compute-sanitizer` to find the kernel",
        "Look the XID up in NVIDIA's catalog (docs.nvidia.com/deploy/xid-errors) for its action",
        "No action; watch for recurrences with `gpudoc report`"}},
      {"health_versions", "health", "Driver, CUDA and library versions",
       "The driver, the CUDA version it supports, and the CUDA runtime, cuBLAS, cuDNN and NCCL found on the "
       "machine (and torch's CUDA). A runtime with a newer major version than the driver supports cannot run.",
       {"Install a driver that supports that CUDA major version, or use a runtime (pip wheel / container) built for "
        "CUDA {cuda} or older; `nvidia-smi` shows the driver's CUDA version",
        "Prefer a driver at least as new as the toolkit, or make sure the program ships SASS for this GPU "
        "(sm_90 on H200)"}},
      {"health_cpu_governor", "health", "CPU frequency governor",
       "Governors other than performance raise CPU clocks only after load arrives, which slows the host side of "
       "GPU work (data loading, kernel launches). Advice only.",
       {"Advice (administrator): `sudo cpupower frequency-set -g performance`; `cpupower frequency-info` shows the "
        "governors"}},
      {"health_numa", "health", "GPU NUMA locality",
       "Each GPU hangs off one CPU socket (NUMA node). A process running on the other socket's CPUs crosses the "
       "CPU interconnect for every copy and launch. Advice only.",
       {"Advice: run the GPU's process on its node: `numactl --cpunodebind={node} --membind={node} python3 "
        "train.py` (or your launcher's CPU binding); `nvidia-smi topo -m` shows each GPU's CPU affinity"}},
      {"health_sysctl", "health", "Kernel settings worth knowing",
       "vm.swappiness, kernel.sched_migration_cost_ns and net.core.somaxconn, shown with what they affect. gpudoc "
       "never changes them. Advice only.",
       {"Advice only: `sysctl {name}` shows it; change it in /etc/sysctl.d/ if your workload needs it"}},
  };
}

const std::vector<CatalogEntry>& entries() {
  static const std::vector<CatalogEntry> kEntries = [] {
    std::vector<CatalogEntry> all = diagnose_entries();
    for (auto& e : health_entries()) all.push_back(std::move(e));
    return all;
  }();
  return kEntries;
}

// clang-format on

}  // namespace

std::span<const CatalogEntry> catalog() { return entries(); }

}  // namespace gpudoc::findings
