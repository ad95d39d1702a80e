#!/bin/bash
# The dashboard browser test against the real `gpudoc serve` (not the mock): serve a replayed
# two-GPU H200 trace on a free loopback port and point dashboard_browser_test.py at it.
#   dashboard_serve_test.sh GPUDOC PYTHON TEST_SCRIPT DUMPER TRACE
set -u
gpudoc=$1 python=$2 script=$3 dumper=$4 trace=$5
work=$(mktemp -d -t gpudoc-dashboard-serve.XXXXXX) || exit 1
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$work"' EXIT
GPUDOC_BACKEND="replay:$trace" "$gpudoc" serve --listen 127.0.0.1:0 --no-store --duration 170 \
  --diagnose-window 20 --diagnose-every 2 2>"$work/serve.err" &
pid=$!
port=
for _ in $(seq 100); do
  port=$(sed -n 's|.*serving .* on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$work/serve.err")
  [[ -n "$port" ]] && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
if [[ -z "$port" ]]; then
  echo "gpudoc serve did not start:" >&2
  cat "$work/serve.err" >&2
  exit 1
fi
GPUDOC_DASHBOARD_URL="http://127.0.0.1:$port/" "$python" "$script" --dumper "$dumper" --trace "$trace"
