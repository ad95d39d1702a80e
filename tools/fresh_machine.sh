#!/usr/bin/env bash
# The README's first command on a fresh machine, as a check: fails when the quick start fails.
#
#   tools/fresh_machine.sh [--commit REF] [--test] [--keep] OUTDIR
#
# In a new Debian 12 (bookworm) root made from Debian's packages (debootstrap --variant=minbase: no
# compiler, no npm, no node), with a clone of this repository at REF (default HEAD: the tree CI is
# given; uncommitted changes are not in it):
#   1. as a user other than root, scripts/quickstart.sh must stop at once with exit 3 and a message
#      naming the packages to install (not a stack of apt errors);
#   2. as root, scripts/quickstart.sh must install what is missing (npm and node included), build
#      gpudoc, run `gpudoc doctor` (a replay of the bundled H200 traces: there is no GPU in a root)
#      and exit 0, having written build/doctor.html;
#   3. the same command again must build nothing and say no build estimate;
#   4. with --test, the README's second command (scripts/test.sh, CI's) must exit 0 in the same root:
#      the test packages installed, every target built with warnings as errors, every test but the
#      GPU ones passed. Inside a root made by this check, the check itself is skipped (exit 77): a
#      root is not made within a root.
# Each step's output is OUTDIR/NAME.log; OUTDIR/summary.txt has a line per step with its exit code
# and wall time. Exit 0 when all hold, 1 when one does not, 77 when this machine cannot make a root
# (not root, or no debootstrap: scripts/setup.sh installs it with the test packages), 2 on bad usage.
#
# The minimal base root is made once and kept in $GPUDOC_FRESH_CACHE (default
# /var/cache/gpudoc/fresh-machine), made anew when older than 14 days; the packages apt downloads
# are kept there too, so later runs install from them instead of the mirror (each root still
# installs everything anew). The root itself is removed at the end unless --keep.
set -euo pipefail
usage() { sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

ref=HEAD keep=0 with_tests=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --commit) shift; ref=${1:?--commit needs a commit}; ;;
    --keep) keep=1 ;;
    --test) with_tests=1 ;;
    -h|--help) usage ;;
    -*) echo "fresh_machine.sh: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
  shift
done
[[ $# -eq 1 ]] || usage
if [[ -f /etc/gpudoc-fresh-root ]]; then echo "fresh_machine.sh: this is a root made by this check: skipped"; exit 77; fi
if [[ $(id -u) -ne 0 ]]; then echo "fresh_machine.sh: making a Debian root needs root: skipped"; exit 77; fi
if ! command -v debootstrap >/dev/null; then echo "fresh_machine.sh: no debootstrap (apt-get install debootstrap): skipped"; exit 77; fi

repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
sha=$(git -C "$repo" rev-parse --short=12 "$ref^{commit}") || { echo "fresh_machine.sh: no commit $ref" >&2; exit 2; }
mkdir -p "$1"
out=$(realpath "$1")
base_dir=${GPUDOC_FRESH_CACHE:-/var/cache/gpudoc/fresh-machine}
apt_cache="$base_dir/apt-archives"
mkdir -p "$base_dir" "$apt_cache"
# shellcheck source=tools/fresh_root.sh
source "$(dirname "$0")/fresh_root.sh"

if [[ -f "$base_dir/bookworm-base/.complete" && -n $(find "$base_dir/bookworm-base/.complete" -mtime +14) ]]; then
  rm -f "$base_dir/bookworm-base/.complete"   # make_base makes it anew
fi
make_base

root=$(mktemp -d "$out/root.XXXXXX")
current_root=""
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  [[ -n "$current_root" ]] && umount_root "$current_root"
  ((keep)) || remove_root "$root" || true
}
trap cleanup EXIT
cp -a "$base_dir/bookworm-base/." "$root/"
rm -f "$root/.complete"
echo "made by tools/fresh_machine.sh" >"$root/etc/gpudoc-fresh-root"
git clone --quiet --no-hardlinks "$repo" "$root/root/gpudoc"
git -C "$root/root/gpudoc" checkout --quiet --detach "$sha"
chroot "$root" useradd --create-home newcomer
git clone --quiet --no-hardlinks "$root/root/gpudoc" "$root/home/newcomer/gpudoc"
chroot "$root" chown -R newcomer:newcomer /home/newcomer/gpudoc
current_root=$root
mount_root "$root"

: >"$out/summary.txt"
failed=0
# run NAME USER DIR [SCRIPT]: SCRIPT (default scripts/quickstart.sh) in the root as USER from DIR, as
# a new user would (a login environment of its own); the exit code is in $rc, the output in
# OUTDIR/NAME.log.
run() {
  local name=$1 user=$2 dir=$3 script=${4:-scripts/quickstart.sh} start=$SECONDS
  rc=0
  chroot --userspec="$user:$user" "$root" /usr/bin/env -i HOME="$(getent_home "$user")" USER="$user" \
    TERM=dumb LANG=C.UTF-8 NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c "cd $dir && time $script" >"$out/$name.log" 2>&1 </dev/null || rc=$?
  wall=$((SECONDS - start))
}
getent_home() { [[ $1 == root ]] && echo /root || echo "/home/$1"; }
verdict() {  # NAME OK(0/1) WHAT
  local mark=ok
  (($2)) || { mark=FAIL; failed=1; }
  printf '%-4s %-14s exit %-3s %4d s  %s\n' "$mark" "$1" "$rc" "$wall" "$3" | tee -a "$out/summary.txt"
}
echo "fresh_machine.sh: commit $sha in a new Debian 12 root ($root)"

# 1. Not root, nothing installed: a clear message and exit 3, before anything else happens.
if chroot "$root" sh -c 'command -v npm || command -v node || command -v g++' >/dev/null; then
  echo "fresh_machine.sh: the base root has npm, node or g++ already; it is not fresh" >&2; exit 1
fi
run not-root newcomer /home/newcomer/gpudoc
ok=0
if ((rc == 3)) && grep -q "apt-get install" "$out/not-root.log" && grep -q "npm" "$out/not-root.log" &&
   ! grep -qE "^(E|W): " "$out/not-root.log"; then ok=1; fi
verdict not-root "$ok" "as a user: exit 3 naming the packages (npm among them), no apt errors"

# 2. Root, nothing installed (no npm, no node): everything installed, built, and the replay diagnosed.
run quickstart root /root/gpudoc
ok=0
if ((rc == 0)) && grep -q "REPLAY" "$out/quickstart.log" && [[ -s "$root/root/gpudoc/build/doctor.html" ]]; then ok=1; fi
verdict quickstart "$ok" "as root from nothing: installed, built, doctor's replay and build/doctor.html"
if [[ -f "$root/root/gpudoc/build/.ninja_log" ]]; then
  # CPU-seconds of compiling and the slowest file: what scripts/setup.sh's estimate is made of
  awk -F'\t' 'NR > 1 { d = ($2 - $1) / 1000; s += d; if (d > m) { m = d; f = $4 } }
              END { printf "compile: %.0f s of steps in all, slowest %.1f s (%s)\n", s, m, f }' \
    "$root/root/gpudoc/build/.ninja_log" | tee -a "$out/summary.txt"
fi

# 3. Again: nothing to install or build, and no estimate of a build that will not happen.
run again root /root/gpudoc
ok=0
if ((rc == 0)) && ! grep -q "installing\|building gpudoc" "$out/again.log"; then ok=1; fi
verdict again "$ok" "run again: nothing installed or built, no estimate"

# 4. The README's second command in the same root: the test packages, every target, every test.
if ((with_tests)); then
  run tests root /root/gpudoc scripts/test.sh
  ok=0
  if ((rc == 0)) && grep -q "100% tests passed" "$out/tests.log"; then ok=1; fi
  verdict tests "$ok" "scripts/test.sh: test packages installed, built with -Werror, every non-GPU test passed"
  grep -E "tests passed|Total Test time" "$out/tests.log" | tee -a "$out/summary.txt" || true
fi

exit "$failed"
