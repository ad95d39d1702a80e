#!/usr/bin/env python3
"""A second reader of NVML's energy, independent of gpudoc, for tools/cost_check.sh: runs a command
and reads every GPU's total-energy counter (nvmlDeviceGetTotalEnergyConsumption, millijoules since
the driver loaded) just before the command starts and just after it exits, and the power reading
(nvmlDeviceGetPowerUsage) every --period seconds in between, through ctypes on libnvidia-ml.so.1
(no pynvml needed). Writes one JSON object to --out and exits with the command's exit code.

    python3 tools/nvml_energy.py --out nvml.json -- python3 train.py

{"start_unix": ..., "end_unix": ..., "exit_code": 0, "period_s": 0.1,
 "gpus": [{"index": 0, "name": "NVIDIA H200", "energy_start_mj": ..., "energy_end_mj": ...,
           "energy_j": ..., "power": [[t_s, watts], ...]}]}

t_s: seconds since the first counter reading. Under `gpudoc diagnose -- python3 tools/nvml_energy.py
...` this program is gpudoc's command, so gpudoc's run (the command's start to its exit) and this
reader's counter readings span the same time but for Python's start-up and exit (milliseconds).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import subprocess
import sys
import threading
import time


class Nvml:
    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        self.check(self.lib.nvmlInit_v2(), "nvmlInit_v2")

    def check(self, rc: int, what: str) -> None:
        if rc != 0:
            raise RuntimeError(f"{what} returned NVML error {rc}")

    def handles(self) -> list:
        n = ctypes.c_uint()
        self.check(self.lib.nvmlDeviceGetCount_v2(ctypes.byref(n)), "nvmlDeviceGetCount_v2")
        out = []
        for i in range(n.value):
            h = ctypes.c_void_p()
            self.check(self.lib.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(h)), "nvmlDeviceGetHandleByIndex_v2")
            out.append(h)
        return out

    def name(self, h) -> str:
        buf = ctypes.create_string_buffer(96)
        self.check(self.lib.nvmlDeviceGetName(h, buf, 96), "nvmlDeviceGetName")
        return buf.value.decode(errors="replace")

    def energy_mj(self, h) -> int:
        e = ctypes.c_ulonglong()
        self.check(self.lib.nvmlDeviceGetTotalEnergyConsumption(h, ctypes.byref(e)),
                   "nvmlDeviceGetTotalEnergyConsumption")
        return e.value

    def power_w(self, h) -> float:
        p = ctypes.c_uint()
        self.check(self.lib.nvmlDeviceGetPowerUsage(h, ctypes.byref(p)), "nvmlDeviceGetPowerUsage")
        return p.value / 1000.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--period", type=float, default=0.1, help="seconds between power readings")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run (after --)")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    nvml = Nvml()
    handles = nvml.handles()
    gpus = [{"index": i, "name": nvml.name(h), "power": []} for i, h in enumerate(handles)]
    t0 = time.monotonic()
    start_unix = time.time()
    for g, h in zip(gpus, handles):
        g["energy_start_mj"] = nvml.energy_mj(h)
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            t = time.monotonic() - t0
            for g, h in zip(gpus, handles):
                g["power"].append([t, nvml.power_w(h)])
            done.wait(args.period)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    code = subprocess.call(command)
    done.set()
    sampler.join()
    end = time.monotonic() - t0
    for g, h in zip(gpus, handles):
        g["energy_end_mj"] = nvml.energy_mj(h)
        g["energy_j"] = (g["energy_end_mj"] - g["energy_start_mj"]) / 1000.0
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"start_unix": start_unix, "duration_s": end, "exit_code": code, "period_s": args.period,
                   "gpus": gpus}, f)
    return code


if __name__ == "__main__":
    sys.exit(main())
