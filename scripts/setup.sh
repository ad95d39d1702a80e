#!/usr/bin/env bash
# Installs what gpudoc needs from Debian's packages (only what is missing) and builds it.
# Usage: scripts/setup.sh [--gpudoc-only] [PRESET] [-DNAME=VALUE...]
#   PRESET          a configure preset of CMakePresets.json (default: default)
#   --gpudoc-only   only what the gpudoc binary needs: its build packages, and the `gpudoc` target
#                   (scripts/quickstart.sh); without it, the test packages too and every target
#   -DNAME=VALUE    passed to the configure step (scripts/test.sh: -DGPUDOC_WERROR=ON ...)
# Works on a fresh Debian 12 as root; elsewhere install the same packages yourself.
set -euo pipefail
cd "$(dirname "$0")/.."
only_gpudoc=0
if [[ "${1:-}" == "--gpudoc-only" ]]; then
  only_gpudoc=1
  shift
fi
preset="${1:-default}"
shift || true
configure_args=("$@")

# What building the gpudoc binary needs, then what the tests need besides.
packages=(g++ cmake ninja-build git pkg-config libcli11-dev nlohmann-json3-dev libfmt-dev libsqlite3-dev)
if ((!only_gpudoc)); then
  packages+=(libgtest-dev libgmock-dev libbenchmark-dev python3
             libcpp-httplib-dev  # gpudoc serve's HTTP server (src/serve; its test until the command lands)
             python3-venv python3-wheel-whl  # the Python client's install test: an offline venv (tests/python)
             python3-torch   # the guard's real training job on the CPU (tests/python/workloads)
             chromium        # the HTML report's test opens it in a real headless browser
             dpkg-dev file   # the .deb test: cpack's dpkg-shlibdeps computes Depends, and needs `file`
             clang-format-14   # the formatting check (tools/format.sh --check)
             prometheus python3-prometheus-client  # promtool and the reference parsers on /metrics (tests/unit/serve)
             python3-yaml systemd shellcheck)  # deploy/'s checks (tests/deploy): YAML, systemd-analyze, shellcheck
fi
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

# say_build_time BUILD_DIR CORES: how long building the gpudoc binary from scratch will take, said
# before it starts. Measured on a fresh Debian 12 without ccache (docs/results/build-time.md): the
# quick start's first build of the gpudoc target (Release, fmt's shared library) is about 460
# CPU-seconds of g++ 12, its .cu files 38 more of nvcc 13, and no file takes more than ~15 s
# (src/cli/cmd_baseline.cpp), the floor however many cores there are. A build folder that has
# objects already takes less, a busy machine more.
say_build_time() {
  local dir=$1 cores=$2 cpu_s=460 what="gpudoc"
  if grep -q '^CMAKE_CUDA_COMPILER:FILEPATH=/' "$dir/CMakeCache.txt" 2>/dev/null; then
    cpu_s=$((cpu_s + 38)) what="gpudoc with its CUDA benchmarks"
  fi
  local s=$((cpu_s / cores))
  ((s > 15)) || s=15
  echo "gpudoc setup: building $what from scratch takes about $(((s + 59) / 60)) min on $cores core(s)" \
       "($((cpu_s / 60)) CPU-minutes of compiling)"
}

jobs=$(nproc 2>/dev/null || echo 2)
build_dir=build
[[ "$preset" == default ]] || build_dir="build-$preset"   # the presets' binaryDir
if ((!only_gpudoc)); then
  configure_args=(-DGPUDOC_TESTS=ON ${configure_args[@]+"${configure_args[@]}"})
elif [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  # A first configure without the tests (GoogleTest need not be installed) and without debug
  # information (a third of the compile time; the portable build is Release too). A build folder
  # that has been configured already keeps what it has.
  configure_args=(-DGPUDOC_TESTS=OFF -DCMAKE_BUILD_TYPE=Release ${configure_args[@]+"${configure_args[@]}"})
fi
cmake --preset "$preset" ${configure_args[@]+"${configure_args[@]}"} >/dev/null
if ((only_gpudoc)); then
  say_build_time "$build_dir" "$jobs"
  cmake --build --preset "$preset" -j "$jobs" --target gpudoc
else
  cmake --build --preset "$preset" -j "$jobs"
fi
