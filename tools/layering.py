#!/usr/bin/env python3
"""Checks that src/'s libraries depend one way (docs/architecture.md): a file in src/A may include
headers of src/B only when B sits on a lower layer than A. Prints every include that runs back up
(file:line, the include, the two layers) and exits 1 if there is one; 0 when the tree reads top-down.

    python3 tools/layering.py SRC_DIR
"""

import argparse
import os
import re
import sys

# Lower number = lower layer; folders on the same layer may not include each other. A new folder
# under src/ needs its place here (the check says so).
LAYERS = {
    "core": 0,
    "findings": 0,
    "gpu": 1,
    # gpudoc slice outside the job and its interception library inside it: core only
    "slice": 1,
    "telemetry": 2,
    "diagnose": 3,
    "bench": 3,
    # the analysis of CUPTI records reads only core; the injection library inside the job core's loader only
    "profile": 3,
    # the SQLite store: baseline runs, health and guard history; includes core only, sits below
    # everything that keeps runs in it
    "store": 3,
    "health": 4,
    "guard": 4,
    # cost accounting: a trace's diagnosis or a profile, priced; baseline and view show it
    "cost": 4,
    # the regression gate: judges runs and keeps them in the store
    "baseline": 5,
    # above baseline and health: the exporter shows the store's last verdicts; below view and cli
    "serve": 6,
    # gpudoc tune: trials through the baseline's workload run, judged by its statistics; beside serve
    "tune": 6,
    # gpudoc report --fleet: serve's counters read back from Prometheus; beside serve
    "fleet": 6,
    "view": 7,
    "cli": 8,
}
SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cc", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([A-Za-z0-9_]+)/')


def violations(src_dir):
    """Yields (path, line number, included folder, own folder) for each include that runs up."""
    for folder in sorted(os.listdir(src_dir)):
        top = os.path.join(src_dir, folder)
        if not os.path.isdir(top):
            continue
        for root, _, files in os.walk(top):
            for name in sorted(files):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(root, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or m.group(1) == folder:
                            continue
                        yield from check(path, number, m.group(1), folder)


def check(path, number, target, folder):
    if folder not in LAYERS:
        yield path, number, target, folder, f"src/{folder} has no layer in tools/layering.py"
    elif target not in LAYERS:
        return  # not a folder of src/ (a system or third-party header written with quotes)
    elif LAYERS[target] >= LAYERS[folder]:
        yield path, number, target, folder, (
            f"{folder} (layer {LAYERS[folder]}) includes {target} (layer {LAYERS[target]}): the arrow runs back up")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src_dir")
    args = parser.parse_args()
    if not os.path.isdir(args.src_dir):
        print(f"layering.py: {args.src_dir}: not a folder", file=sys.stderr)
        return 2
    found = 0
    for path, number, target, folder, why in violations(args.src_dir):
        print(f"{os.path.relpath(path, args.src_dir)}:{number}: {why}")
        found += 1
    if found:
        print(f"{found} include(s) against the layering", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
