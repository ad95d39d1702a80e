"""What a process costs, read from /proc: CPU seconds (whole and by thread name) and resident memory.
Imported by tools/sampler_cost.py, serve_cost.py and serve_live.py (they run from tools/, so `import proc_cpu`)."""
import os
import re

TICK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def cpu_seconds(pid):
    """utime + stime of `pid` and its waited-for children (/proc/PID/stat fields 14-17), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / TICK


def thread_cpu_seconds(pid):
    """CPU seconds per thread name (gpudoc names its threads: gpudoc-gpuN, serve-http, ...); names
    ending in digits add up as one (gpudoc-gpu0..7 -> gpudoc-gpuN). A thread that ended is missing."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                head, tail = f.read().rsplit(")", 1)
        except OSError:
            continue  # the thread ended
        name = re.sub(r"\d+$", "N", head.split("(", 1)[1])
        out[name] = out.get(name, 0) + sum(int(x) for x in tail.split()[11:13]) / TICK
    return out


def rss_bytes(pid):
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * PAGE
