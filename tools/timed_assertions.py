#!/usr/bin/env python3
"""Finds test assertions whose verdict depends on the machine's speed.

A test checks behaviour; speed is a benchmark's (tests/perf), reported, never a pass/fail on
seconds under a loaded `ctest -j`. An upper bound on elapsed time may stay only as a guard against
a hang, far above the normal time, and then says so: `hang guard` in a comment on the assertion's
line or the line before it (with the normal time and the margin).

Flagged: an upper-bound assertion (gtest's EXPECT_/ASSERT_ LT and LE, unittest's assertLess and
assertLessEqual, a Python `assert a < b`) whose bound is a time: a chrono duration (`5s`, `200ms`,
`std::chrono::seconds(7)`, `2 * period + 60ms`; not a ratio of durations), or a number or a constant named like a time (`kMaxSeconds`) against
something named like a time (`took`, `elapsed`, `seconds`, `wall_s`, `latency_ms`, a clock's now).

  tools/timed_assertions.py ROOT [ROOT...]     # exit 1 and one line per assertion when any is found
"""
import os
import re
import sys

SUFFIXES = (".cpp", ".hpp", ".h", ".cc", ".py")
# Benchmarks report speed; data is not code; the tools' own tests (tests/tools) quote such lines.
SKIP_DIRS = {"perf", "data", "tools", "__pycache__"}

CPP_ASSERT = re.compile(r"\b(?:EXPECT|ASSERT)_(?:LT|LE)\s*\((.*)")
PY_ASSERT_CALL = re.compile(r"\bassert(?:Less|LessEqual)\s*\((.*)")
PY_ASSERT_STMT = re.compile(r"^\s*assert\s+(.+?)\s*<=?\s*(.+)$")

NUMBER = r"[-+]?(?:\d[\d']*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[fFlL]?"
CHRONO_LITERAL = re.compile(r"(?<![\w.])\d[\d']*(?:\.\d+)?(?:ns|us|ms|s|min|h)\b")
CHRONO_CALL = re.compile(r"(?:std::)?(?:chrono::)?(?:nanoseconds|microseconds|milliseconds|seconds|minutes)\s*[({]")
PLAIN_NUMBER = re.compile(r"^\s*" + NUMBER + r"\s*$")
TIME_CONSTANT = re.compile(r"^\s*k\w*(?:Seconds|Second|Secs|Ms|Millis|Time|Timeout)\w*\s*$")
TIME_WORD = re.compile(
    r"took|elapsed|seconds|wall_s|_secs?\b|_ms\b|_us\b|timed_|latency|duration|now\s*\(|monotonic|perf_counter|time\s*\(\)|"
    r"closed_after|slowest",
    re.IGNORECASE)
MARK = "hang guard"


def split_args(text):
    """The top-level comma-separated arguments of a call whose opening parenthesis came before."""
    args, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                args.append(cur)
                return args
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(cur)
            cur = ""
            continue
        cur += ch
    args.append(cur)
    return args


def is_timed(measured, bound):
    # A duration divided by another (`1s / period`) is a count, not a time.
    if (CHRONO_LITERAL.search(bound) or CHRONO_CALL.search(bound)) and "/" not in bound:
        return True
    if PLAIN_NUMBER.match(bound) or TIME_CONSTANT.match(bound):
        return bool(TIME_WORD.search(measured))
    return False


def timed_assertion(line):
    code = line.split("//")[0] if "//" in line else line
    for pattern in (CPP_ASSERT, PY_ASSERT_CALL):
        m = pattern.search(code)
        if m:
            args = split_args(m.group(1))
            return len(args) >= 2 and is_timed(args[0], args[1])
    m = PY_ASSERT_STMT.match(code.split("#")[0])
    return bool(m) and is_timed(m.group(1), m.group(2).split(",")[0])


def check_file(path):
    found = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return found
    for i, line in enumerate(lines):
        if not timed_assertion(line):
            continue
        before = lines[i - 1] if i > 0 else ""
        if MARK in line.lower() or MARK in before.lower():
            continue
        found.append((i + 1, line.strip()))
    return found


def walk(root):
    if os.path.isfile(root):
        yield root
        return
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            if name.endswith(SUFFIXES):
                yield os.path.join(folder, name)


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    bad = 0
    for root in argv[1:]:
        for path in walk(root):
            for number, text in check_file(path):
                print(f"{path}:{number}: an upper bound on time without a `hang guard` comment: {text}")
                bad += 1
    if bad:
        print(f"{bad} timed assertion(s): move the speed to a benchmark (tests/perf), check a count, or keep a "
              "bound 10x+ above the normal time on a loaded 2-core machine with a `// hang guard: normally ...` "
              "comment", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
