#!/usr/bin/env python3
"""A fleet-week on a real Prometheus: N GPUs over D days of `gpudoc serve`'s fleet counters,
backfilled with promtool from the bundled real H200 traces, then read back by `gpudoc report
--fleet`, whose totals are checked against what was written and whose cost is measured.

    python3 tools/fleet_week.py OUTDIR --gpus N --days D [--gpudoc BIN] [--gpus-per-node 8] [--keep]

How the week is made:
- Each trace of TRACES is exported once by `gpudoc trace counters` with serve's defaults (a
  diagnosis and a scrape every 10 s over a 120 s window): each of its GPUs is a source, the
  counters of one serve watching that job.
- Fleet GPU g runs the job of source g mod len(sources) back to back, each GPU at its own phase:
  the source's counter values are a tile repeated every tile period, the GPU time the source's
  serve observed (so that, as with a live serve, every second of the week is observed once). Its
  lost, useful and unexplained time and its energy keep the job's proportions. Prometheus scrapes
  every GPU every 60 s (SCRAPE_S): the backfill holds a sample of each series each minute.
- Each GPU has its own labels: instance (its node, --gpus-per-node GPUs each), gpu, uuid, name,
  namespace (one per node, four teams in turn), pod; and the prices a serve with prices exposes
  (gpudoc_price_gpu_hour, gpudoc_price_kwh in USD, no PUE).
- Every node's serve restarts once a day at its own hour: every counter of the node starts again
  at 0 at the next scrape (a counter reset), and what was counted since the scrape before is lost,
  as a real restart loses it. One node vanishes in the middle of day 5 (of the last day when D < 5).
- The injected totals (per series: the last value of each serve run, added up) are summed here
  from the values written, per sample name, cause and node.

The samples go into one OpenMetrics file per 54 h block (promtool's --max-block-duration 54h
aligns blocks to multiples of it, and parses a whole file once per block it spans: one block per
file parses each once), backfilled one file after the other by `promtool tsdb create-blocks-from
openmetrics` (each file deleted once its block is written, unless --keep); a Prometheus on
127.0.0.1 (retention 10y, blocks kept at 54 h) serves them. The week ends at the last midnight
UTC; the report runs with --since Dd --until END: the first scrape is 30 s after END - D days and
the last 30 s before END, so the range holds the whole week, every series starts at 0 inside it
(increase() then adds nothing before the first sample) and the last is extrapolated by 30 s at
most (0.005 % of a week). The report is run once to warm up, then three times --by namespace (the
wall time is the median, the peak RSS the largest: the child's, from wait4 in a small launcher; the
1-minute load average before and after them is kept), and once each --by node, pod and job.

Checks (exit 1 when one fails): the GPU time observed, useful and unexplained, the energy, each
cause's GPU time and energy, the money, the GPU time of each namespace and of the vanished node,
all within 2 % of the injected; the counter resets as many as the restarts written; the GPUs and
nodes counted; the vanished node named, and only it. Writes OUTDIR/fleet_week.json and
OUTDIR/fleet_week.md. Exit 2 for bad arguments, 3 when prometheus, promtool or gpudoc is missing
or Prometheus does not come up.
"""
from __future__ import annotations

import argparse
import array
import bisect
import json
import math
import os
import pathlib
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from typing import Dict, List, Tuple

ROOT = pathlib.Path(__file__).resolve().parent.parent
TRACES = [  # bundled real H200 traces with known waste (tests/data/README.md)
    "sawtooth_p1000_d50.jsonl",  # a host-side sleep between bursts: sawtooth
    "allreduce_straggler_slow0.jsonl",  # two GPUs, one waiting on a slow rank: pulse
    "gemm_saturated.jsonl",  # busy
    "tiny_kernels.jsonl",  # launch-bound: unexplained
    "memory_bound.jsonl",
    "idle.jsonl",  # a context and no work: idle
    "sawtooth_p2000_d50.jsonl",
    "allreduce_straggler_sleep1.jsonl",
]
SCRAPE_S = 60  # the backfill's scrape interval
EXPORT_EVERY_S = 10  # serve's --diagnose-every default
EXPORT_WINDOW_S = 120  # serve's --diagnose-window default
BLOCK_S = 54 * 3600  # promtool's block (ExponentialBlockRanges: 2h, 6h, 18h, 54h, ...)
TEAMS = ["research", "training", "inference", "batch"]
CURRENCY = "USD"
PRICES = [("gpudoc_price_gpu_hour", "money per GPU-hour for this GPU, in the currency labelled (docs/cost.md)", 3.72),
          ("gpudoc_price_kwh", "money per kWh at the meter for this GPU, in the currency labelled", 0.12)]
TOLERANCE = 0.02
LABEL = re.compile(r'([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"')
OBSERVED = "gpudoc_gpu_observed_seconds_total"
USEFUL = "gpudoc_gpu_useful_seconds_total"
UNEXPLAINED = "gpudoc_gpu_unexplained_seconds_total"
LOST = "gpudoc_gpu_lost_seconds_total"
ENERGY = "gpudoc_gpu_energy_joules_total"
LOST_ENERGY = "gpudoc_gpu_lost_energy_joules_total"

Key = Tuple[str, str]  # (sample name, cause id or "")


def escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Source:
    """One GPU of one exported trace: its series' cumulative values at the export's scrapes."""

    def __init__(self, trace: str, gpu: str, name: str):
        self.trace, self.gpu, self.name = trace, gpu, name
        self.offsets: List[float] = []  # each export scrape's time after the first
        self.values: Dict[Key, List[float]] = {}  # value at each export scrape
        self.period = 0.0  # the tile: the GPU time observed over the job once


def export(gpudoc: str, trace: str, meta: Dict[str, str], order: List[str]) -> List[Source]:
    """The trace's counters, exported once; the families' HELP/TYPE/UNIT lines kept in `meta`."""
    path = ROOT / "tests" / "data" / trace
    r = subprocess.run([gpudoc, "trace", "counters", str(path), "--every", str(EXPORT_EVERY_S), "--window",
                        str(EXPORT_WINDOW_S), "--start", "0"], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"fleet_week: gpudoc trace counters {path}: exit {r.returncode}: {r.stderr.strip()}")
    points: Dict[Tuple[str, Key], Dict[float, float]] = {}
    names: Dict[str, str] = {}
    times = set()
    family, fresh = "", set()  # the families first seen in this export keep its metadata lines
    for line in r.stdout.splitlines():
        if line == "# EOF" or not line:  # each file written here ends with its own
            continue
        if line.startswith("# "):
            if line.startswith("# HELP "):
                family = line.split(" ")[2]
                if family not in meta:
                    meta[family] = ""
                    order.append(family)
                    fresh.add(family)
            if family in fresh:
                meta[family] += line + "\n"
            continue
        head, value, ts = line.rsplit(" ", 2)
        sample, _, labels = head.partition("{")
        lab = dict(LABEL.findall(labels))
        points.setdefault((lab["gpu"], (sample, lab.get("id", ""))), {})[float(ts)] = float(value)
        names[lab["gpu"]] = lab.get("name", "")
        times.add(float(ts))
    scrapes = sorted(times)
    sources: Dict[str, Source] = {}
    for (gpu, key), by_time in points.items():
        s = sources.setdefault(gpu, Source(trace, gpu, names[gpu]))
        s.offsets = [t - scrapes[0] for t in scrapes]
        s.values[key] = [by_time.get(t, 0.0) for t in scrapes]  # absent before it first shows: 0
    for s in sources.values():
        for v in s.values.values():  # a series shown late reads 0 until then, and never falls
            for k in range(1, len(v)):
                v[k] = max(v[k], v[k - 1])
        s.period = s.values[(OBSERVED, "")][-1]
        if s.period < 1:
            raise SystemExit(f"fleet_week: {trace} GPU {s.gpu}: observed {s.period} s, expected at least 1 s")
    return [sources[g] for g in sorted(sources)]


class Fleet:
    def __init__(self, gpus: int, days: int, per_node: int, end: int):
        self.gpus, self.days, self.per_node = gpus, days, per_node
        self.nodes = math.ceil(gpus / per_node)
        self.end = end
        self.t0 = end - days * 86400 + SCRAPE_S // 2
        self.scrapes = days * 86400 // SCRAPE_S
        self.vanished = self.nodes // 2
        vanish_at = (min(5, days) - 0.5) * 86400
        self.last_scrape = [self.scrapes - 1] * self.nodes
        self.last_scrape[self.vanished] = int(vanish_at // SCRAPE_S)
        # Each node's restarts: the first scrape at or after its hour each day, within its scrapes.
        self.restarts: List[List[int]] = []
        for n in range(self.nodes):
            hour_s = 3 * 3600 + (n * 47 * 60) % (20 * 3600)
            rs = [math.ceil((d * 86400 + hour_s - SCRAPE_S // 2) / SCRAPE_S) for d in range(days)]
            self.restarts.append([j for j in rs if 0 < j <= self.last_scrape[n]])

    def node_of(self, g: int) -> int:
        return g // self.per_node

    def team(self, n: int) -> str:
        return TEAMS[n % len(TEAMS)]

    def gpu_labels(self, g: int, s: Source) -> str:
        return f'gpu="{g % self.per_node}",uuid="GPU-00000000-0000-0000-0000-{g:012d}",name="{escape(s.name)}"'

    def holder_labels(self, g: int, s: Source) -> str:
        return f'namespace="{self.team(self.node_of(g))}",pod="{pathlib.Path(s.trace).stem.split("_")[0]}-{g}"'

    def instance(self, n: int) -> str:
        return f"node-{n:03d}"


class Writer:
    """One OpenMetrics file per block of BLOCK_S; every family's metadata in each."""

    def __init__(self, folder: pathlib.Path, fleet: Fleet):
        ts = [fleet.t0 + SCRAPE_S * j for j in range(fleet.scrapes)]
        self.suffix = [f" {t}\n" for t in ts]
        block_of = [t // BLOCK_S for t in ts]
        blocks = sorted(set(block_of))
        self.paths = [folder / f"block-{b}.om" for b in blocks]
        self.files = [open(p, "w", encoding="utf-8", buffering=1 << 22) for p in self.paths]
        self.cuts = [block_of.index(b) for b in blocks] + [fleet.scrapes]  # where each file's scrapes start
        self.samples = 0
        self.series_count = 0

    def meta(self, text: str) -> None:
        for f in self.files:
            f.write(text)

    def series(self, head: str, values: List[float]) -> None:
        """values[j] is the sample of scrape j."""
        sfx = self.suffix
        for k, f in enumerate(self.files):
            a, b = self.cuts[k], min(self.cuts[k + 1], len(values))
            if a < b:
                f.write("".join([head + format(values[j], ".3f") + sfx[j] for j in range(a, b)]))
        self.samples += len(values)
        self.series_count += 1

    def close(self) -> None:
        for f in self.files:
            f.write("# EOF\n")
            f.close()


def tile_positions(fleet: Fleet, g: int, s: Source) -> Tuple[array.array, array.array]:
    """For each scrape of GPU g: how many whole tiles its job has run, and the export scrape reached in the current."""
    phase = (g * 7919) % int(s.period)
    whole, at = array.array("q"), array.array("i")
    for j in range(fleet.last_scrape[fleet.node_of(g)] + 1):
        n, r = divmod(j * SCRAPE_S + phase, s.period)
        whole.append(int(n))
        at.append(bisect.bisect_right(s.offsets, r) - 1)
    return whole, at


def write_fleet(fleet: Fleet, sources: List[Source], meta: Dict[str, str], order: List[str],
                w: Writer) -> Dict[Tuple[str, str, int], float]:
    """Writes every series; returns the injected totals {(sample, cause, node): seconds or joules}."""
    injected: Dict[Tuple[str, str, int], float] = {}
    positions = [tile_positions(fleet, g, sources[g % len(sources)]) for g in range(fleet.gpus)]
    for family in order:
        w.meta(meta[family])
        for g in range(fleet.gpus):
            s = sources[g % len(sources)]
            n = fleet.node_of(g)
            whole, at = positions[g]
            cuts = [0] + fleet.restarts[n] + [len(whole)]
            for (sample, cause), v in s.values.items():
                if sample != family + "_total":
                    continue
                tot = v[-1]
                head = (sample + "{" + fleet.gpu_labels(g, s) + "," + fleet.holder_labels(g, s) +
                        (f',id="{escape(cause)}"' if cause else "") + f',instance="{fleet.instance(n)}"}} ')
                values: List[float] = []
                for a, b in zip(cuts, cuts[1:]):  # one serve run: from 0 at its first scrape
                    base = whole[a] * tot + v[at[a]]
                    values.extend([whole[j] * tot + v[at[j]] - base for j in range(a, b)])
                    key = (sample, cause, n)
                    injected[key] = injected.get(key, 0.0) + round(values[-1], 3)
                w.series(head, values)
    for name, help_text, price in PRICES:
        w.meta(f"# HELP {name} {help_text}\n# TYPE {name} gauge\n")
        for g in range(fleet.gpus):
            s = sources[g % len(sources)]
            n = fleet.node_of(g)
            head = f'{name}{{{fleet.gpu_labels(g, s)},currency="{CURRENCY}",instance="{fleet.instance(n)}"}} '
            w.series(head, [price] * (fleet.last_scrape[n] + 1))
    return injected


# Runs argv[2:] and writes "wall_s maxrss_kib exit" to argv[1]: the child's peak RSS from wait4. A
# process started straight from this script would report this script's RSS when larger: exec
# keeps the largest RSS of the memory it replaces, and a vfork child replaces this script's. A
# small launcher (its own RSS, the floor of the measure, is in the results) keeps it out.
LAUNCHER = """import os, sys, time
start = time.monotonic()
pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{time.monotonic() - start} {usage.ru_maxrss} {os.waitstatus_to_exitcode(status)}")
"""


def run_measured(args: List[str], stdout, stderr, work: pathlib.Path) -> Tuple[float, float, int]:
    """(wall s, peak RSS MB, exit code) of args."""
    result = work / "measured.txt"
    subprocess.run([sys.executable, "-I", "-S", "-c", LAUNCHER, str(result), *args], stdout=stdout, stderr=stderr,
                   check=True)
    wall, rss_kib, code = result.read_text(encoding="utf-8").split()
    return float(wall), int(rss_kib) * 1024 / 1e6, int(code)


def backfill(promtool: str, w: Writer, work: pathlib.Path, tsdb: pathlib.Path, keep: bool) -> Dict[str, float]:
    """promtool on each file in turn; its wall time and peak RSS (wait4), the files' size."""
    wall, rss, size = 0.0, 0.0, 0
    for path in w.paths:
        size += path.stat().st_size
        with open(work / f"{path.name}.err", "w+", encoding="utf-8") as err:
            w_s, rss_mb, code = run_measured([promtool, "tsdb", "create-blocks-from", "openmetrics",
                                              "--max-block-duration=54h", str(path), str(tsdb)],
                                             subprocess.DEVNULL, err, work)
            wall, rss = wall + w_s, max(rss, rss_mb)
            if code != 0:
                err.seek(0)
                raise SystemExit(f"fleet_week: promtool on {path}: exit {code}: {err.read().strip()[-2000:]}")
        if not keep:
            path.unlink()
    return {"backfill_s": wall, "promtool_peak_rss_mb": rss, "openmetrics_mb": size / 1e6}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def query(port: int, q: str, at: float) -> list:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": q, "time": at})
    with urllib.request.urlopen(url, timeout=120) as r:
        return json.loads(r.read())["data"]["result"]


def start_prometheus(prometheus: str, folder: pathlib.Path, tsdb: pathlib.Path, fleet: Fleet):
    (folder / "prometheus.yml").write_text("global:\n  scrape_interval: 60s\n", encoding="utf-8")
    port = free_port()
    log = open(folder / "prometheus.log", "w", encoding="utf-8")
    p = subprocess.Popen([prometheus, f"--config.file={folder / 'prometheus.yml'}", f"--storage.tsdb.path={tsdb}",
                          "--storage.tsdb.retention.time=10y", "--storage.tsdb.max-block-duration=54h",
                          f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=log, cwd=folder)
    deadline = time.monotonic() + 600  # a hang guard: loading a 512-GPU week takes seconds
    while time.monotonic() < deadline:
        if p.poll() is not None:
            raise SystemExit(f"fleet_week: prometheus ended with {p.returncode}: see {folder / 'prometheus.log'}")
        try:
            if query(port, f"count({OBSERVED})", fleet.end - SCRAPE_S):
                return p, port
        except OSError:
            pass
        time.sleep(0.5)
    p.kill()
    raise SystemExit("fleet_week: prometheus did not answer within 600 s")


def run_report(gpudoc: str, port: int, fleet: Fleet, by: str, out: pathlib.Path) -> Tuple[float, float, dict]:
    """(wall s, peak RSS MB, the JSON) of one `gpudoc report --fleet`."""
    args = [gpudoc, "report", "--fleet", "--prometheus", f"http://127.0.0.1:{port}", "--since", f"{fleet.days}d",
            "--until", str(fleet.end), "--by", by, "--json"]
    with open(out, "w", encoding="utf-8") as o, open(f"{out}.err", "w+", encoding="utf-8") as err:
        wall, rss, code = run_measured(args, o, err, out.parent)
        if code != 0:
            err.seek(0)
            raise SystemExit(f"fleet_week: {' '.join(args)}: exit {code}: {err.read().strip()}")
    return wall, rss, json.loads(out.read_text(encoding="utf-8"))


class Checks:
    """Each check as {what, want, got, error_pct, ok}."""

    def __init__(self) -> None:
        self.rows: List[dict] = []

    def near(self, what: str, want: float, got: float) -> float:
        err = abs(got - want) / want * 100 if want else (0.0 if got == 0 else math.inf)
        self.rows.append({"what": what, "want": want, "got": got, "error_pct": err, "ok": err <= TOLERANCE * 100})
        return err

    def equal(self, what: str, want, got) -> None:
        self.rows.append({"what": what, "want": want, "got": got, "error_pct": None, "ok": want == got})


def check(by_node: dict, by_namespace: dict, injected: dict, fleet: Fleet) -> Tuple[List[dict], float]:
    """The checks; and the worst cause error in per cent."""
    def total(sample: str, cause=None, nodes=None) -> float:
        return sum(v for (s, c, n), v in injected.items()
                   if s == sample and (cause is None or c == cause) and (nodes is None or n in nodes))
    c = Checks()
    t = by_node["totals"]
    for what, sample, field in (("observed GPU time (s)", OBSERVED, "observed_s"),
                                ("useful GPU time (s)", USEFUL, "useful_s"),
                                ("unexplained GPU time (s)", UNEXPLAINED, "unexplained_s"),
                                ("lost GPU time (s)", LOST, "lost_s"), ("energy (J)", ENERGY, "energy_j"),
                                ("lost energy (J)", LOST_ENERGY, "lost_energy_j")):
        c.near(what, total(sample), t[field])
    want_money = total(OBSERVED) / 3600 * PRICES[0][2] + total(ENERGY) / 3.6e6 * PRICES[1][2]
    c.near(f"money ({CURRENCY})", want_money, t["money"].get(CURRENCY, 0.0))
    got = {x["id"]: x for x in by_node["causes"]}
    worst = 0.0
    for cause in sorted({k[1] for k in injected if k[0] == LOST}):
        if total(LOST, cause) > 0:
            worst = max(worst, c.near(f"lost to {cause} (s)", total(LOST, cause), got.get(cause, {}).get("gpu_s", 0.0)))
            c.near(f"energy lost to {cause} (J)", total(LOST_ENERGY, cause), got.get(cause, {}).get("energy_j", 0.0))
    groups = {x["key"]: x for x in by_namespace["groups"]}
    for team in sorted({fleet.team(n) for n in range(fleet.nodes)}):
        nodes = {n for n in range(fleet.nodes) if fleet.team(n) == team}
        c.near(f"namespace {team}: observed (s)", total(OBSERVED, nodes=nodes),
               groups.get(team, {}).get("observed_s", 0))
    vanished = fleet.instance(fleet.vanished)
    node_groups = {x["key"]: x for x in by_node["groups"]}
    c.near(f"vanished {vanished}: observed (s)", total(OBSERVED, nodes={fleet.vanished}),
           node_groups.get(vanished, {}).get("observed_s", 0))
    c.equal("counter resets", sum(len(r) for r in fleet.restarts), by_node["counter_resets"])
    c.equal("vanished nodes", [vanished], by_node["vanished_nodes"])
    c.equal("GPUs", fleet.gpus, by_node["gpus"])
    c.equal("nodes", [fleet.instance(n) for n in range(fleet.nodes)], by_node["nodes"])
    return c.rows, worst


def machine() -> str:
    pretty = platform.system()
    try:
        for line in pathlib.Path("/etc/os-release").read_text(encoding="utf-8").splitlines():
            if line.startswith("PRETTY_NAME="):
                pretty = line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{pretty}, {os.cpu_count()} cores, {mem:.0f} GiB, {platform.machine()}"


def markdown(r: dict) -> str:
    m = r["measured"]
    lines = [f"# A fleet-week: {r['gpus']} GPUs x {r['days']} days", "",
             f"`{r['command']}` on {r['machine']}, {r['date']}, gpudoc `{r['gpudoc_version']}`; "
             f"{r['nodes']} nodes, {r['series']} series, a backfilled sample every {SCRAPE_S} s.", "",
             "| GPUs | series | samples | OpenMetrics MB | backfill s | TSDB MB | report wall s (median of 3) | "
             "report peak RSS MB | checks |",
             "|---|---|---|---|---|---|---|---|---|",
             f"| {r['gpus']} | {r['series']} | {r['samples']} | {m['openmetrics_mb']:.0f} | {m['backfill_s']:.1f} | "
             f"{m['tsdb_mb']:.0f} | {m['report_wall_s']:.2f} | {m['report_peak_rss_mb']:.1f} | "
             f"{'all pass' if r['ok'] else 'FAIL'} |", "",
             "| check | injected | report | error % | ok |", "|---|---|---|---|---|"]
    for c in r["checks"]:
        err = "" if c["error_pct"] is None else f"{c['error_pct']:.4f}"
        want = c["want"] if not isinstance(c["want"], float) else f"{c['want']:.1f}"
        got = c["got"] if not isinstance(c["got"], float) else f"{c['got']:.1f}"
        if isinstance(want, list) and len(want) > 4:
            want, got = f"{len(want)} names", f"{len(got)} names" + ("" if c["ok"] else " (differ)")
        lines.append(f"| {c['what']} | {want} | {got} | {err} | {'yes' if c['ok'] else 'NO'} |")
    lines += ["", "| stage | value |", "|---|---|"]
    for k in ("export_s", "write_s", "openmetrics_mb", "backfill_s", "promtool_peak_rss_mb", "tsdb_mb",
              "prometheus_start_s", "prometheus_peak_rss_mb", "report_wall_s", "report_peak_rss_mb",
              "measure_floor_rss_mb", "load_before", "load_after"):
        lines.append(f"| {k} | {m[k]:.2f} |")
    for b, v in r["report_by"].items():
        lines.append(f"| report --by {b}: wall s, peak RSS MB | {v['wall_s']:.2f}, {v['peak_rss_mb']:.1f} |")
    lines.append("")
    return "\n".join(lines)


def measure(a, prometheus: str, promtool: str, work: pathlib.Path) -> Tuple[dict, bool]:
    measured: Dict[str, float] = {"measure_floor_rss_mb": run_measured(["/bin/true"], None, None, work)[1]}
    t = time.monotonic()
    meta: Dict[str, str] = {}
    order: List[str] = []
    sources = [s for trace in TRACES for s in export(a.gpudoc, trace, meta, order)]
    measured["export_s"] = time.monotonic() - t
    fleet = Fleet(a.gpus, a.days, a.gpus_per_node, int(time.time()) // 86400 * 86400)
    t = time.monotonic()
    w = Writer(work, fleet)
    injected = write_fleet(fleet, sources, meta, order, w)
    w.close()
    measured["write_s"] = time.monotonic() - t
    tsdb = work / "tsdb"
    measured.update(backfill(promtool, w, work, tsdb, a.keep))
    measured["tsdb_mb"] = sum(f.stat().st_size for f in tsdb.rglob("*") if f.is_file()) / 1e6
    t = time.monotonic()
    prom, port = start_prometheus(prometheus, work, tsdb, fleet)
    try:
        measured["prometheus_start_s"] = time.monotonic() - t
        run_report(a.gpudoc, port, fleet, "namespace", work / "warm.json")  # warm-up: caches, pages
        measured["load_before"] = os.getloadavg()[0]  # the machine may be shared: say how loaded it was
        runs = [run_report(a.gpudoc, port, fleet, "namespace", work / f"run{k}.json") for k in range(3)]
        measured["report_wall_s"] = statistics.median(r[0] for r in runs)
        measured["report_peak_rss_mb"] = max(r[1] for r in runs)
        measured["load_after"] = os.getloadavg()[0]
        by, reports = {}, {"namespace": runs[-1][2]}
        for b in ("node", "pod", "job"):
            wall, rss, reports[b] = run_report(a.gpudoc, port, fleet, b, work / f"by-{b}.json")
            by[b] = {"wall_s": wall, "peak_rss_mb": rss}
        hwm = re.search(r"VmHWM:\s+(\d+) kB", pathlib.Path(f"/proc/{prom.pid}/status").read_text(encoding="utf-8"))
        measured["prometheus_peak_rss_mb"] = int(hwm.group(1)) * 1024 / 1e6 if hwm else float("nan")
    finally:
        prom.terminate()
        try:
            prom.wait(timeout=30)
        except subprocess.TimeoutExpired:
            prom.kill()
    rows, worst = check(reports["node"], reports["namespace"], injected, fleet)
    version = subprocess.run([a.gpudoc, "--version"], capture_output=True, text=True).stdout.strip()
    ok = all(c["ok"] for c in rows)
    return {
        "gpus": a.gpus, "days": a.days, "gpus_per_node": a.gpus_per_node, "nodes": fleet.nodes,
        "scrape_interval_s": SCRAPE_S, "export": {"every_s": EXPORT_EVERY_S, "window_s": EXPORT_WINDOW_S},
        "traces": TRACES, "series": w.series_count, "samples": w.samples, "start_unix_s": fleet.t0,
        "end_unix_s": fleet.end, "restarts": sum(len(r) for r in fleet.restarts),
        "vanished_node": fleet.instance(fleet.vanished),
        "command": "python3 tools/fleet_week.py OUTDIR " + " ".join(sys.argv[2:]),
        "machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "gpudoc_version": version, "measured": measured, "report_by": by, "checks": rows,
        "worst_cause_error_pct": worst, "ok": ok,
        "injected": [{"sample": s, "id": c, "node": n, "value": v} for (s, c, n), v in sorted(injected.items())],
        "report_by_node": reports["node"], "report_by_namespace": reports["namespace"],
    }, ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--gpus", type=int, required=True)
    ap.add_argument("--days", type=int, required=True)
    ap.add_argument("--gpus-per-node", type=int, default=8)
    ap.add_argument("--gpudoc", default=shutil.which("gpudoc") or "gpudoc")
    ap.add_argument("--keep", action="store_true", help="keep the OpenMetrics files and the TSDB (printed)")
    a = ap.parse_args()
    if a.gpus < 2 or a.days < 1 or a.days > 60 or a.gpus_per_node < 1 or math.ceil(a.gpus / a.gpus_per_node) < 2:
        print("fleet_week: --gpus >= 2, --days 1..60, and at least two nodes (--gpus-per-node)", file=sys.stderr)
        return 2
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    gpudoc = shutil.which(a.gpudoc)
    if not prometheus or not promtool or not gpudoc:
        print("fleet_week: needs prometheus and promtool (apt-get install prometheus) and --gpudoc BIN",
              file=sys.stderr)
        return 3
    a.gpudoc = gpudoc
    out = pathlib.Path(a.outdir)
    out.mkdir(parents=True, exist_ok=True)
    work = pathlib.Path(tempfile.mkdtemp(prefix="gpudoc-fleet-week-"))
    try:
        result, ok = measure(a, prometheus, promtool, work)
    finally:
        if a.keep:
            print(f"fleet_week: kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    (out / "fleet_week.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    (out / "fleet_week.md").write_text(markdown(result), encoding="utf-8")
    for c in result["checks"]:
        want, got = c["want"], c["got"]
        if isinstance(want, list) and len(want) > 4:
            want, got = f"{len(want)} names", f"{len(got)} names" + ("" if c["ok"] else f": {got}")
        print(("ok    " if c["ok"] else "FAIL  ") + f"{c['what']}: injected {want}, report {got}")
    m = result["measured"]
    print(f"fleet_week: {a.gpus} GPUs x {a.days} days, {result['series']} series, {result['samples']} samples, "
          f"{m['openmetrics_mb']:.0f} MB; write {m['write_s']:.1f} s, backfill {m['backfill_s']:.1f} s; report "
          f"{m['report_wall_s']:.2f} s, {m['report_peak_rss_mb']:.1f} MB; {'all checks pass' if ok else 'CHECKS FAIL'};"
          f" {out}/fleet_week.md")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
