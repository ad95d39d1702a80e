#!/usr/bin/env bash
# Installs what gpudoc needs from Debian's packages (only what is missing) and builds it.
# Usage: scripts/setup.sh [PRESET]   (default preset: default; see CMakePresets.json)
# Works on a fresh Debian 12 as root; elsewhere install the same packages yourself.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"

packages=(g++ cmake ninja-build git pkg-config libcli11-dev nlohmann-json3-dev libfmt-dev libsqlite3-dev
          libgtest-dev libgmock-dev libbenchmark-dev python3
          chromium)   # chromium: the HTML report's test opens it in a real headless browser
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
# npm fetches the HTML report's plot library (web/package.json); any npm will do, e.g. one that
# came with a Node.js from elsewhere, so Debian's is installed only when there is none.
command -v npm >/dev/null 2>&1 || missing+=(npm)
if ((${#missing[@]})); then
  echo "gpudoc setup: installing ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "gpudoc setup: run as root, or install these packages first: ${missing[*]}" >&2
    exit 3
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The plot library embedded into `gpudoc diagnose --html` pages, at the versions pinned in
# web/package-lock.json, into web/node_modules (git-ignored; CMake embeds it at build time).
if [[ ! -f web/node_modules/uplot/dist/uPlot.iife.min.js || web/package-lock.json -nt web/node_modules/.package-lock.json ]]; then
  echo "gpudoc setup: installing the HTML report's plot library (npm ci --prefix web)"
  npm ci --prefix web --no-audit --no-fund --loglevel=error >/dev/null
fi

jobs=$(nproc 2>/dev/null || echo 2)
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$jobs"
