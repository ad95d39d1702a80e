#!/usr/bin/env bash
# The README's first command: set up, build, and run gpudoc's main job.
# On a machine with an NVIDIA GPU: a live `gpudoc watch`. Without one: a replay of a real H200
# trace bundled in tests/data, and it says so.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh default
gpudoc=build/src/cli/gpudoc
duration="${GPUDOC_QUICKSTART_SECONDS:-20}"
if "$gpudoc" watch --once >/dev/null 2>&1; then
  exec "$gpudoc" watch --duration "$duration"
fi
trace=tests/data/sawtooth_p1000_d50.jsonl
echo
echo "No NVIDIA GPU or driver on this machine, so this is a REPLAY of a real H200 trace"
echo "($trace, recorded with gpudoc record; see tests/data/README.md), not live telemetry."
echo
sleep 2
exec "$gpudoc" watch "$trace" --duration "$duration"
