#!/usr/bin/env bash
# The README's second command (and CI's): set up, build, and run every test except those that need
# a GPU (ctest label "gpu"; run those on a GPU machine with: ctest --test-dir build -L gpu).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh default
ctest --test-dir build --label-exclude gpu --output-on-failure -j "$(nproc 2>/dev/null || echo 2)"
