#!/usr/bin/env bash
# The README's second command (and CI's): set up, build with warnings as errors, and run every test
# except those that need a GPU (ctest label "gpu"; on a GPU machine: tools/gpu_tests.sh OUTDIR).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh default -DGPUDOC_WERROR=ON
ctest --test-dir build --label-exclude gpu --output-on-failure -j "$(nproc 2>/dev/null || echo 2)"
