# shellcheck shell=bash
# Functions for a fresh Debian 12 (bookworm) root, sourced by tools/time_quickstart.sh and
# tools/fresh_machine.sh. The caller sets `out` (where the base root is kept) and `die`-like exits are
# its own; every function needs root.

# make_base: a minimal Debian 12 root (what a fresh container or cloud image starts from), once.
make_base() {
  local base="${base_dir:-$out}/bookworm-base"
  [[ -f "$base/.complete" ]] && return 0
  [[ ! -e "$base" ]] || remove_root "$base"
  echo "fresh root: debootstrap bookworm into $base (once)"
  debootstrap --variant=minbase --include=ca-certificates,git bookworm "$base" http://deb.debian.org/debian \
    >"${base_dir:-$out}/debootstrap.log" 2>&1 || { tail -20 "${base_dir:-$out}/debootstrap.log" >&2; exit 3; }
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
  # Downloaded packages kept between roots when the caller names a folder for them (apt_cache):
  # every root still installs from them anew.
  if [[ -n "${apt_cache:-}" ]]; then
    mkdir -p "$apt_cache/partial"
    mount --bind "$apt_cache" "$r/var/cache/apt/archives"
  fi
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
  for m in var/cache/apt/archives dev/shm dev/pts dev sys proc; do
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

