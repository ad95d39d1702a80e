#!/usr/bin/env bash
# How long the README's first command, scripts/quickstart.sh, takes on a clean clone, per commit.
#
#   tools/time_quickstart.sh [--host] [--cores N] [--keep] [--prepare] [--repo DIR] OUTDIR [COMMIT...]
#
# Default: on a fresh Debian 12 (bookworm) root made with debootstrap under OUTDIR, run as root
# in a chroot, as a new user would: quickstart installs its packages from the Debian mirror and
# the plot library from npm, then builds and runs `gpudoc doctor` (a replay: no GPU in there).
# --host: on this machine instead, with the packages and toolchain it has (CUDA too, if nvcc is
# there), ccache off (CCACHE_DISABLE=1), in a fresh clone under OUTDIR.
# Each COMMIT (default: HEAD) of the repository this script is in (or of --repo DIR) is cloned
# anew and timed; the run is held to --cores CPUs (default 2) with taskset, so that machines of any
# size compare.
#
# Needs root and debootstrap (apt-get install debootstrap) for the Debian root; the first run
# makes OUTDIR/bookworm-base once (a few minutes) and later runs copy it. Writes per commit
# OUTDIR/quickstart-COMMIT.log (everything quickstart printed, then `time`'s figures) and prints a
# table: wall time, CPU time (user + sys of the whole run), exit code, and the load average before,
# at most during, and after. A wall time is only worth comparing when the machine was otherwise
# idle: the load before should be below ~0.5 and during no higher than the --cores the run uses.
# --keep leaves each commit's root or clone in OUTDIR (several GB); by default it is removed.
# --prepare only makes the Debian root, so that a later timed run can start when the machine is quiet.
set -euo pipefail
usage() { sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

host=0 cores=2 keep=0 prepare=0 repo=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --host) host=1 ;;
    --cores) shift; cores=${1:?--cores needs a number} ;;
    --keep) keep=1 ;;
    --prepare) prepare=1 ;;
    --repo) shift; repo=${1:?--repo needs a git repository} ;;
    -h|--help) usage ;;
    -*) echo "time_quickstart.sh: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
  shift
done
[[ $# -ge 1 ]] || usage
out=$1
shift
repo=$(git -C "${repo:-$(dirname "$0")/..}" rev-parse --show-toplevel) || exit 2
commits=("$@")
((${#commits[@]})) || commits=(HEAD)
mkdir -p "$out"
out=$(realpath "$out")
cpus=$(seq -s, 0 $((cores - 1)))
if ((!host)); then
  [[ $(id -u) -eq 0 ]] || { echo "time_quickstart.sh: a Debian root needs root (or use --host)" >&2; exit 3; }
  command -v debootstrap >/dev/null || { echo "time_quickstart.sh: apt-get install debootstrap first" >&2; exit 3; }
fi

load1() { cut -d' ' -f1 /proc/loadavg; }

# make_base, mount_root, umount_root, remove_root: a fresh Debian 12 root (tools/fresh_root.sh).
# shellcheck source=tools/fresh_root.sh
source "$(dirname "$0")/fresh_root.sh"

# watch_load FILE: the highest 1-minute load average while the run goes on (killed at the end).
watch_load() {
  local max=0 now
  while true; do
    now=$(load1)
    if awk -v a="$now" -v b="$max" 'BEGIN { exit !(a > b) }'; then max=$now; echo "$max" >"$1"; fi
    sleep 5
  done
}

# time_one COMMIT: clone, run quickstart under `time`, print one table row.
time_one() {
  local commit=$1 sha name root clone log rc=0 before after wall cpu watcher
  sha=$(git -C "$repo" rev-parse --short=12 "$commit^{commit}")
  name="quickstart-$sha"
  ((host)) && name="$name-host"
  log="$out/$name.log"
  if ((host)); then
    root=""
    clone="$out/$name"
  else
    root="$out/$name-root"
    [[ ! -e "$root" ]] || remove_root "$root"
    cp -a "$out/bookworm-base" "$root"
    clone="$root/root/gpudoc"
  fi
  [[ -n "$root" ]] || rm -rf --one-file-system "$clone"
  git clone --quiet --no-hardlinks "$repo" "$clone"
  git -C "$clone" checkout --quiet --detach "$sha"
  if [[ -n "$root" ]]; then
    current_root=$root
    mount_root "$root"
  fi
  before=$(load1)
  echo "$before" >"$out/.maxload"
  watch_load "$out/.maxload" &
  watcher=$!
  local start=$SECONDS
  {
    echo "commit $sha ($commit), $(date -u +%Y-%m-%dT%H:%M:%SZ), cores $cpus, load before: $(cat /proc/loadavg)"
    if ((host)); then
      (cd "$clone" && CCACHE_DISABLE=1 taskset -c "$cpus" bash -c 'time scripts/quickstart.sh')
    else
      taskset -c "$cpus" chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
        NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        bash -c 'cd /root/gpudoc && time scripts/quickstart.sh'
    fi
  } >"$log" 2>&1 || rc=$?
  wall=$((SECONDS - start))
  kill "$watcher" 2>/dev/null || true
  wait "$watcher" 2>/dev/null || true
  after=$(load1)
  if [[ -n "$root" ]]; then
    umount_root "$root"
    current_root=""
  fi
  echo "load after: $(cat /proc/loadavg)" >>"$log"
  cpu=$(awk '/^user/ { split($2, u, /[ms]/) } /^sys/ { split($2, s, /[ms]/) } END { printf "%.0f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$log")
  printf '| %s | %s | %dm%02ds | %s s | %s | %s | %s | %s |\n' "$sha" "$( ((host)) && echo "this machine" || echo "fresh Debian 12")" \
    $((wall / 60)) $((wall % 60)) "$cpu" "$rc" "$before" "$(cat "$out/.maxload")" "$after" | tee -a "$out/summary.md"
  if ((!keep)); then
    if [[ -n "$root" ]]; then remove_root "$root"; else rm -rf --one-file-system "$clone"; fi
  fi
}

((host)) || make_base
((prepare)) && exit 0
current_root=""
trap '[[ -n "$current_root" ]] && umount_root "$current_root"' EXIT
if [[ ! -f "$out/summary.md" ]]; then
  printf '| commit | where | wall | CPU (user+sys) | exit | load before | load max during | load after |\n|---|---|---|---|---|---|---|---|\n' \
    >"$out/summary.md"
fi
head -2 "$out/summary.md"
for c in "${commits[@]}"; do
  time_one "$c"
done
