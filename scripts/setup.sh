#!/usr/bin/env bash
# Installs what gpudoc needs from Debian's packages (only what is missing) and builds it.
# Usage: scripts/setup.sh [--gpudoc-only] [PRESET] [-DNAME=VALUE...]
#   PRESET          a configure preset of CMakePresets.json (default: default)
#   --gpudoc-only   only what the gpudoc binary needs (the rows `build` and `gpudoc` of
#                   cmake/debian-packages.txt) and the `gpudoc` target (scripts/quickstart.sh);
#                   without it, the test packages too and every target
#   -DNAME=VALUE    passed to the configure step (scripts/test.sh: -DGPUDOC_WERROR=ON ...)
# Works on a fresh Debian 12 as root; as another user it names the packages to install first.
# Exit codes: 0 built; 3 something to install that it cannot (not root, no apt, a package or the
# npm registry out of reach); otherwise the failing step's own code.
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
say() { echo "gpudoc setup: $*"; }
fail() { echo "gpudoc setup: $1" >&2; exit "${2:-3}"; }

# What to install: cmake/debian-packages.txt, the list the build's own checks name (ROLE PACKAGE
# PROVIDES). A row whose PROVIDES is a command (cmd:NAME) is there when that command is on the
# PATH, from a Debian package or not (an npm that came with a Node.js from elsewhere, say).
roles='^(build|gpudoc)$'
((only_gpudoc)) || roles='^(build|gpudoc|tests)$'
missing=()
while read -r role package provides; do
  [[ "$role" =~ $roles ]] || continue
  if [[ "$provides" == cmd:* ]] && command -v "${provides#cmd:}" >/dev/null 2>&1; then continue; fi
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" || missing+=("$package")
done < <(sed -e 's/#.*//' cmake/debian-packages.txt | awk 'NF == 3')
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    fail "these Debian packages are missing: ${missing[*]}
  Install them as root, then run this again:
    sudo apt-get install --no-install-recommends ${missing[*]}
  (or run this script as root: it installs them itself)."
  fi
  command -v apt-get >/dev/null 2>&1 ||
    fail "no apt-get here: install the equivalents of ${missing[*]} (cmake/debian-packages.txt says what each is for)"
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || fail "apt-get update failed (is a Debian mirror reachable?)"
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    fail "apt-get install failed for: ${missing[*]}"
fi

# The plot library embedded into gpudoc's HTML pages, at the versions pinned in
# web/package-lock.json, into web/node_modules (git-ignored; CMake embeds it at build time).
if [[ ! -f web/node_modules/uplot/dist/uPlot.iife.min.js || web/package-lock.json -nt web/node_modules/.package-lock.json ]]; then
  say "installing the HTML pages' plot library (npm ci --prefix web)"
  npm ci --prefix web --no-audit --no-fund --loglevel=error >/dev/null ||
    fail "npm ci --prefix web failed: the npm registry must be reachable once to fetch uPlot (web/package.json)"
fi

# The Kubernetes API schemas the tests validate deploy/kubernetes with (tests/deploy/schemas,
# pinned by its package-lock.json; tests/deploy/manifests_test.py): with the tests only.
schemas=tests/deploy/schemas
if ((!only_gpudoc)) && [[ ! -d $schemas/node_modules/kubernetes-models || $schemas/package-lock.json -nt $schemas/node_modules/.package-lock.json ]]; then
  say "installing the Kubernetes schemas for the deploy tests (npm ci --prefix $schemas)"
  npm ci --prefix "$schemas" --no-audit --no-fund --loglevel=error >/dev/null ||
    fail "npm ci --prefix $schemas failed: the npm registry must be reachable once (tests/deploy/schemas/package.json)"
fi

# say_build_time BUILD_DIR CORES: how long building the gpudoc binary will take, said before it
# starts, and only when there is something to build. From scratch it is CPU_S CPU-seconds of
# compiling, measured on a fresh Debian 12 (Release, g++ 12, no ccache; docs/results/build-time.md),
# CUDA_S more for the .cu files where nvcc is found; a build folder with objects already takes the
# share of its steps still to run. SLOWEST_S is the longest single file, the floor however many
# cores there are.
say_build_time() {
  local dir=$1 cores=$2 cpu_s=890 cuda_s=40 slowest_s=20 what="gpudoc" total left
  if grep -q '^CMAKE_CUDA_COMPILER:FILEPATH=/' "$dir/CMakeCache.txt" 2>/dev/null; then
    cpu_s=$((cpu_s + cuda_s)) what="gpudoc with its CUDA benchmarks"
  fi
  total=$(ninja -C "$dir" -t commands gpudoc 2>/dev/null | wc -l)
  left=$(ninja -C "$dir" -n gpudoc 2>/dev/null | grep -c '^\[' || true)
  ((left > 0 && total > 0)) || return 0
  ((left <= total)) || left=$total
  cpu_s=$((cpu_s * left / total))
  local s=$((cpu_s / cores))
  # Under half a minute is not worth a line: steps ninja lists that its restat then skips (the
  # commit stamp is rewritten on every build and relinks only when the commit changed).
  ((cpu_s >= 30)) || return 0
  ((s > slowest_s)) || s=$slowest_s
  if ((left == total)); then
    say "building $what from scratch: about $(((s + 30) / 60)) min on $cores core(s)" \
        "($((cpu_s / 60)) CPU-minutes of compiling)"
  else
    say "building $what: $left of $total steps left, about $(((s + 30) / 60)) min on $cores core(s)"
  fi
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
else
  # The preset would set its own build type again (RelWithDebInfo) and so rebuild every file of a
  # folder configured as Release: the folder's own type is kept.
  build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
  [[ -z "$build_type" ]] || configure_args=(-DCMAKE_BUILD_TYPE="$build_type" ${configure_args[@]+"${configure_args[@]}"})
fi
# The configure step's output is shown only when it fails: then all of it, the missing package named.
log_dir=$(mktemp -d)
trap 'rm -rf "$log_dir"' EXIT
if ! cmake --preset "$preset" ${configure_args[@]+"${configure_args[@]}"} >"$log_dir/configure.log" 2>&1; then
  cat "$log_dir/configure.log" >&2
  fail "configuring the build failed (above); cmake/debian-packages.txt lists what it needs" 1
fi
if ((only_gpudoc)); then
  say_build_time "$build_dir" "$jobs"
  cmake --build --preset "$preset" -j "$jobs" --target gpudoc
else
  cmake --build --preset "$preset" -j "$jobs"
fi
