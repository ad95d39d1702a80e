#!/usr/bin/env python3
"""Make a replay trace whose GPU and HBM temperatures follow a scripted thermal ramp.

    tools/thermal_ramp.py IN.jsonl OUT.jsonl [--profile default|KEYFRAMES] [--gpu N]
                          [--segment A:B] [--hbm-offset C] [--no-clock-reasons] [--list]

IN is a real gpudoc trace (e.g. tests/data/gemm_saturated.jsonl, 25 s of an H200 at full load).
Its steady part (where the board power stays within 10 % of its top; ``--segment A:B`` seconds to
choose another) is looped until the profile's end, every copy shifted in time, so OUT keeps the
real power, clocks, utilization, GPM and memory readings of a busy GPU. Only these change:

* ``gpu_temperature_celsius`` (every sample that has it) follows the profile, a piecewise-linear
  curve through keyframes whose temperatures are the GPU's own limits from IN's header plus or
  minus degrees (``max_operating`` = ``temperature_gpu_max_celsius``, ``slowdown``, ``shutdown``),
  rounded to whole degrees as NVML reports them;
* ``memory_temperature_celsius`` (HBM) follows the same curve ``--hbm-offset`` (10) degrees lower,
  never above ``memory_max - 8``, so the die's temperature is what a guard reacts to;
* ``clock_event_reasons_mask`` gains NVML's software thermal slowdown bit (0x20) at or above the
  maximum operating temperature and the hardware thermal slowdown bit (0x40) at or above the
  slowdown temperature (``--no-clock-reasons``: untouched). Clocks are not lowered.

Dropped: IN's process lines (their pids belong to the recording machine; a guard must never signal
a pid of this machine that happens to match), its events (process start and exit of the recorded
command) and its end line. Added: an ``annotation`` event at the start of every phase, and an end
line. The header is IN's with ``"synthetic"``: what is synthetic, the source, the segment, the
limits and the profile as resolved (keys this format does not define are kept by readers,
docs/trace-format.md), and ``"command": []``.

The default profile (relative to the limits of each GPU; an H200 reports max operating 87,
slowdown 89, shutdown 95 °C) against the default guard policy (docs/guard-policy.md: level 1 at a
forecast of max_operating - 2, level 2 at slowdown - 1 (cleared below slowdown - 6), level 3 at
shutdown - 3):

    t (s)   temperature          phase
    0-20    max_operating - 12   steady: the job starts and trains
    20-40   -> max_operating - 1 rise (0.67 then 0.375 °C/s): level 1 (shrink the batch)
    40-48   max_operating - 1    hold at level 1
    48-54   -> slowdown          rise (0.5 °C/s): level 2 (checkpoint, pause non-critical work)
    54-62   slowdown             hold at level 2
    62-70   -> slowdown - 8      cool (1 °C/s): level 2 clears, non-critical work resumes
    70-78   slowdown - 8         hold cooled
    78-92   -> shutdown - 2      rise (1 then 0.5 °C/s): level 3 (checkpoint and stop)
    92-150  shutdown - 2         hold

With a persistence forecast (the guard's own when its model does not check out) the levels come at
about 36 s (1), 51 s (2), 69 s (2 cleared) and 90 s (3): 15-21 s apart. A forecast that
extrapolates the slope 5 s ahead meets them sooner, still in that order.

``--profile KEYFRAMES``: ``T:BASE[+|-N][:LABEL],...`` with BASE one of max_operating, slowdown,
shutdown, or a number of degrees (e.g. ``0:70,30:slowdown-1:hot,60:slowdown-1``). ``--list`` prints
the resolved profile of IN's first GPU and writes nothing. ``--gpu N``: only that GPU of IN follows
the profile (default: every GPU, each against its own limits).

Exit codes: 0 written; 1 a limit the profile needs is missing from IN's header, or IN has no
steady part; 2 bad usage or IN is not a readable gpudoc trace.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from typing import Any, Dict, List, Optional, Tuple

LIMIT_KEYS = {"max_operating": "temperature_gpu_max_celsius", "slowdown": "temperature_slowdown_celsius",
              "shutdown": "temperature_shutdown_celsius", "memory_max": "temperature_memory_max_celsius"}
DEFAULT_PROFILE = [
    (0, "max_operating", -12, "steady"),
    (20, "max_operating", -12, "rise to level 1"),
    (32, "max_operating", -4, "approach level 1"),
    (40, "max_operating", -1, "hold at level 1"),
    (48, "max_operating", -1, "rise to level 2"),
    (54, "slowdown", 0, "hold at level 2"),
    (62, "slowdown", 0, "cool below level 2"),
    (70, "slowdown", -8, "hold cooled"),
    (78, "slowdown", -8, "rise to level 3"),
    (88, "shutdown", -4, "approach level 3"),
    (92, "shutdown", -2, "hold at level 3"),
    (150, "shutdown", -2, "end"),
]
SW_THERMAL = 0x20  # nvmlClocksEventReasonSwThermalSlowdown
HW_THERMAL = 0x40  # nvmlClocksEventReasonHwThermalSlowdown
HBM_CEILING_BELOW_MAX = 8
KEYFRAME = re.compile(r"^\s*(?P<t>\d+(?:\.\d+)?)\s*:\s*(?P<base>[a-z_]+|-?\d+(?:\.\d+)?)"
                      r"\s*(?:(?P<sign>[+-])\s*(?P<off>\d+(?:\.\d+)?))?\s*(?::(?P<label>[^,]*))?\s*$")


class Usage(Exception):
    """Bad usage or bad input: exit 2."""


class Missing(Exception):
    """Something the profile needs is not in the trace: exit 1."""


def parse_profile(text: str) -> List[Tuple[float, str, float, str]]:
    if text == "default":
        return [(float(t), b, float(o), label) for t, b, o, label in DEFAULT_PROFILE]
    frames = []
    for part in text.split(","):
        m = KEYFRAME.match(part)
        if not m:
            raise Usage(f"--profile: {part!r} is not T:BASE[+|-N][:LABEL]")
        base = m.group("base")
        if not re.match(r"^-?\d", base) and base not in LIMIT_KEYS:
            raise Usage(f"--profile: {base!r} is not one of {', '.join(LIMIT_KEYS)} or a number")
        offset = float(m.group("off") or 0) * (-1 if m.group("sign") == "-" else 1)
        frames.append((float(m.group("t")), base, offset, (m.group("label") or "").strip()))
    times = [f[0] for f in frames]
    if len(frames) < 2 or times != sorted(times) or len(set(times)) != len(times):
        raise Usage("--profile needs two or more keyframes in increasing time order")
    return frames


def resolve(frames: List[Tuple[float, str, float, str]], gpu: Dict[str, Any]) -> List[Tuple[float, float, str]]:
    """Keyframes as (t, °C, label) for one GPU of the header."""
    out = []
    for t, base, offset, label in frames:
        if base in LIMIT_KEYS:
            value = gpu.get(LIMIT_KEYS[base])
            if not isinstance(value, (int, float)):
                raise Missing(f"GPU {gpu.get('index')}: the header has no {LIMIT_KEYS[base]} ({base}), "
                              "which the profile is relative to")
            out.append((t, float(value) + offset, label))
        else:
            out.append((t, float(base) + offset, label))
    return out


def at(profile: List[Tuple[float, float, str]], t: float) -> float:
    """The profile's temperature at time t (held flat outside it)."""
    if t <= profile[0][0]:
        return profile[0][1]
    for (t0, v0, _), (t1, v1, _) in zip(profile, profile[1:]):
        if t <= t1:
            return v0 + (v1 - v0) * (t - t0) / (t1 - t0)
    return profile[-1][1]


def read_trace(path: str) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    try:
        with open(path, encoding="utf-8") as f:
            lines = [line for line in f if line.strip()]
    except OSError as error:
        raise Usage(f"{path}: {error.strerror or error}") from None
    try:
        records = [json.loads(line) for line in lines]
    except ValueError as error:
        raise Usage(f"{path}: not JSON Lines: {error}") from None
    if not records or records[0].get("type") != "header" or records[0].get("format") != "gpudoc-trace":
        raise Usage(f"{path}: not a gpudoc trace (no header line)")
    return records[0], records[1:]


def steady_segment(records: List[Dict[str, Any]], gpu: int) -> Tuple[float, float]:
    """From the first to the last power sample of ``gpu`` within 10 % of its top power (the 95th
    percentile), after a 1 s settling margin."""
    power = [(r["t"], r["power_watts"]) for r in records
             if r.get("type") == "sample" and r.get("gpu") == gpu and "power_watts" in r]
    if not power:
        raise Missing(f"GPU {gpu} has no power samples to find a steady part by")
    top = sorted(p for _, p in power)[int(0.95 * (len(power) - 1))]
    busy = [t for t, p in power if p >= 0.9 * top]
    begin, end = busy[0] + 1.0, busy[-1]
    if end - begin < 5.0:
        raise Missing(f"GPU {gpu}: the steady part ({begin:.1f}-{end:.1f} s) is shorter than 5 s; "
                      "give --segment A:B")
    return begin, end


def energy_per_copy(loop: List[Dict[str, Any]], length: float) -> Dict[int, float]:
    """Joules one copy of the segment adds to each GPU's energy counter: its mean power times its
    length (so the looped counter never goes backwards)."""
    sums: Dict[int, List[float]] = {}
    for r in loop:
        if "power_watts" in r:
            sums.setdefault(r["gpu"], []).append(r["power_watts"])
    return {g: sum(p) / len(p) * length for g, p in sums.items()}


def round_t(t: float) -> Any:
    value = round(t, 6)
    return int(value) if value == int(value) else value


def retemper(record: Dict[str, Any], profiles: Dict[int, List[Tuple[float, float, str]]],
             limits: Dict[int, Dict[str, Any]], args: argparse.Namespace) -> Dict[str, Any]:
    gpu = record.get("gpu")
    if gpu not in profiles:
        return record
    exact = at(profiles[gpu], record["t"])
    die = int(round(exact))  # whole degrees, as NVML reports them
    out = dict(record)
    if "gpu_temperature_celsius" in out:
        out["gpu_temperature_celsius"] = die
    if "memory_temperature_celsius" in out:
        hbm = exact - args.hbm_offset
        memory_max = limits[gpu].get(LIMIT_KEYS["memory_max"])
        if isinstance(memory_max, (int, float)):
            hbm = min(hbm, memory_max - HBM_CEILING_BELOW_MAX)
        out["memory_temperature_celsius"] = int(round(hbm))
    if "clock_event_reasons_mask" in out and not args.no_clock_reasons:
        mask = int(out["clock_event_reasons_mask"])
        if die >= limits[gpu].get(LIMIT_KEYS["max_operating"], math.inf):
            mask |= SW_THERMAL
        if die >= limits[gpu].get(LIMIT_KEYS["slowdown"], math.inf):
            mask |= HW_THERMAL
        out["clock_event_reasons_mask"] = mask
    return out


def build(header: Dict[str, Any], records: List[Dict[str, Any]], args: argparse.Namespace) -> List[Dict[str, Any]]:
    frames = parse_profile(args.profile)
    gpus = header.get("gpus") or []
    chosen = range(len(gpus)) if args.gpu is None else [args.gpu]
    if args.gpu is not None and not 0 <= args.gpu < len(gpus):
        raise Usage(f"--gpu {args.gpu}: the trace has {len(gpus)} GPU(s)")
    profiles = {g: resolve(frames, gpus[g]) for g in chosen}
    limits = {g: gpus[g] for g in chosen}
    if args.segment:
        begin, end = args.segment
    else:
        begin, end = steady_segment(records, next(iter(chosen)))
    length = end - begin
    duration = frames[-1][0]
    loop = [r for r in records if r.get("type") == "sample" and begin <= r["t"] < end]
    joules_per_copy = energy_per_copy(loop, length)
    out: List[Dict[str, Any]] = []
    copy = 0
    while copy * length < duration:
        for r in loop:
            t = r["t"] - begin + copy * length
            if t <= duration:
                shifted = {**r, "t": round_t(t)}
                if "energy_joules" in r:  # a counter: it goes on rising from copy to copy
                    shifted["energy_joules"] = round(r["energy_joules"] + copy * joules_per_copy.get(r["gpu"], 0.0), 3)
                out.append(retemper(shifted, profiles, limits, args))
        copy += 1
    first = next(iter(chosen))
    annotations = [{"type": "event", "t": round_t(t), "kind": "annotation",
                    "text": f"synthetic thermal ramp: {label or 'keyframe'} (GPU die {value:.0f} °C)"}
                   for t, value, label in profiles[first] if label and t < duration]
    merged = sorted(out + annotations, key=lambda r: r["t"])  # stable: each copy keeps its order
    samples = sum(1 for r in merged if r["type"] == "sample")
    synthetic = {
        "what": "gpu_temperature_celsius, memory_temperature_celsius and the thermal bits of "
                "clock_event_reasons_mask are synthetic (tools/thermal_ramp.py); every other value "
                "is the source recording's steady part, looped",
        "source": os.path.basename(args.input), "source_segment_s": [round(begin, 3), round(end, 3)],
        "hbm_offset_celsius": args.hbm_offset, "profile_spec": args.profile,
        "profiles": {str(g): [[t, round(v, 2), label] for t, v, label in p] for g, p in profiles.items()},
    }
    new_header = {**header, "command": [], "synthetic": synthetic}
    end_line = {"type": "end", "t": round_t(max(r["t"] for r in merged)), "sample_lines": samples,
                "dropped_records": 0, "reason": "duration"}
    return [new_header, *merged, end_line]


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("input", metavar="IN.jsonl")
    p.add_argument("output", metavar="OUT.jsonl", nargs="?")
    p.add_argument("--profile", default="default", help="default, or T:BASE[+|-N][:LABEL],...")
    p.add_argument("--gpu", type=int, default=None, help="only this GPU follows the profile")
    p.add_argument("--segment", default=None, metavar="A:B", help="seconds of IN to loop")
    p.add_argument("--hbm-offset", type=float, default=10.0, help="HBM this much below the die")
    p.add_argument("--no-clock-reasons", action="store_true", help="leave clock_event_reasons_mask as recorded")
    p.add_argument("--list", action="store_true", help="print the resolved profile, write nothing")
    args = p.parse_args(argv)
    if args.segment:
        try:
            a, b = (float(x) for x in args.segment.split(":"))
        except ValueError:
            p.error("--segment is A:B in seconds")
        if not b - a >= 1:
            p.error("--segment: B must exceed A by 1 s or more")
        args.segment = (a, b)
    if not args.list and not args.output:
        p.error("OUT.jsonl is required (or --list)")
    return args


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    try:
        header, records = read_trace(args.input)
        if args.list:
            for g, gpu in enumerate(header.get("gpus") or []):
                print(f"GPU {g}: " + ", ".join(f"{k} {gpu.get(v)}" for k, v in LIMIT_KEYS.items()))
                for t, value, label in resolve(parse_profile(args.profile), gpu):
                    print(f"  {t:6.1f} s  {value:5.1f} °C  {label}")
            return 0
        lines = build(header, records, args)
    except Usage as error:
        print(f"thermal_ramp: {error}", file=sys.stderr)
        return 2
    except Missing as error:
        print(f"thermal_ramp: {error}", file=sys.stderr)
        return 1
    tmp = args.output + ".tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        for record in lines:
            out.write(json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n")
    os.replace(tmp, args.output)
    print(f"thermal_ramp: {args.output}: {lines[-1]['sample_lines']} samples over {lines[-1]['t']} s "
          f"from {os.path.basename(args.input)} {lines[0]['synthetic']['source_segment_s']} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
