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

# make_base: a minimal Debian 12 root (what a fresh container or cloud image starts from), once.
make_base() {
  local base="$out/bookworm-base"
  [[ -f "$base/.complete" ]] && return 0
  [[ ! -e "$base" ]] || remove_root "$base"
  echo "time_quickstart.sh: debootstrap bookworm into $base (once)"
  debootstrap --variant=minbase --include=ca-certificates,git bookworm "$base" http://deb.debian.org/debian \
    >"$out/debootstrap.log" 2>&1 || { tail -20 "$out/debootstrap.log" >&2; exit 3; }
  touch "$base/.complete"
}

# mount_root ROOT / umount_root ROOT: what a chroot needs of the kernel, and DNS. ROOT/dev is a
# tmpfs of its own with the few device nodes a build uses and a private devpts instance: the host's
# /dev is never bound in, so nothing done inside (or to) the root can reach the host's devices.
mount_root() {
  local r=$1
  mount -t proc proc "$r/proc"
  mount -t sysfs -o ro sysfs "$r/sys"
  mount -t tmpfs -o mode=755,size=16m tmpfs "$r/dev"
  mknod -m 666 "$r/dev/null" c 1 3
  mknod -m 666 "$r/dev/zero" c 1 5
  mknod -m 666 "$r/dev/full" c 1 7
  mknod -m 666 "$r/dev/random" c 1 8
  mknod -m 666 "$r/dev/urandom" c 1 9
  mknod -m 666 "$r/dev/tty" c 5 0
  mkdir "$r/dev/pts" "$r/dev/shm"
  mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts "$r/dev/pts"
  ln -s pts/ptmx "$r/dev/ptmx"
  mount -t tmpfs -o mode=1777 tmpfs "$r/dev/shm"
  ln -s /proc/self/fd "$r/dev/fd"
  ln -s /proc/self/fd/0 "$r/dev/stdin"
  ln -s /proc/self/fd/1 "$r/dev/stdout"
  ln -s /proc/self/fd/2 "$r/dev/stderr"
  cp /etc/resolv.conf "$r/etc/resolv.conf"
  # Certificate authorities this host was given locally (a TLS-inspecting proxy's, say) are trusted
  # inside too, so that npm reaches its registry from the root as it does from the host.
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$r/usr/local/share/ca-certificates/"
    chroot "$r" update-ca-certificates >/dev/null 2>&1 || true
  fi
}
umount_root() {
  local m
  for m in dev/shm dev/pts dev sys proc; do
    mountpoint -q "$1/$m" && { umount "$1/$m" || umount -l "$1/$m"; }
  done
  return 0
}
# remove_root ROOT: deletes ROOT only when nothing is mounted under it, and never crosses into
# another file system.
remove_root() {
  if mountpoint -q "$1" || findmnt -rn -o TARGET | grep -qF "$1/"; then
    echo "time_quickstart.sh: something is still mounted under $1; not removing it" >&2
    return 1
  fi
  rm -rf --one-file-system "$1"
}

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
