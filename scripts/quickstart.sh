#!/usr/bin/env bash
# The README's first command: set up, build gpudoc (the binary only; scripts/test.sh builds the
# tests), and run its main job, `gpudoc doctor`.
# On a machine with an NVIDIA GPU: a short live look at every GPU and its diagnosis. Without one:
# the diagnosis of real H200 traces bundled in tests/data, and it says plainly that it is a replay.
# Either way it also writes the HTML report (zoomable plots, findings marked) to build/doctor.html.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --gpudoc-only default
gpudoc=build/src/cli/gpudoc
duration="${GPUDOC_QUICKSTART_SECONDS:-10}"
page=build/doctor.html
echo
set +e
"$gpudoc" doctor --duration "$duration" --html "$page"
rc=$?
set -e
echo
echo "The same as a page with zoomable plots: $page (opens offline in any browser)."
echo "Next: gpudoc diagnose -- python3 train.py   (record while your job runs, then diagnose it)"
case $rc in
  0|1) exit 0 ;;   # ran; 1 only means it found something worth reading above
  3)   echo "(No NVIDIA GPU or driver here, so that was the replay of recorded traces: gpudoc doctor exits 3.)"
       exit 0 ;;
  *)   exit "$rc" ;;
esac
