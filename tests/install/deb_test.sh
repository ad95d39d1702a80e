#!/usr/bin/env bash
# `cpack -G DEB` makes a package that installs /usr/bin/gpudoc, the traces under /usr/share/gpudoc
# and the docs under /usr/share/doc/gpudoc, with its Depends computed from the binary; unpacked
# anywhere, its gpudoc replays the traces it carries.
#   deb_test.sh BUILD_DIR CPACK
set -euo pipefail
build=${1:?usage: deb_test.sh BUILD_DIR CPACK}
cpack=${2:?usage: deb_test.sh BUILD_DIR CPACK}
source "$(dirname "$0")/common.sh"

for tool in dpkg-deb dpkg-shlibdeps file; do
  command -v "$tool" >/dev/null || fail "$tool not found: install dpkg-dev and file (scripts/setup.sh does)"
done
"$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$work/pkg" >"$work/cpack.log" 2>&1 ||
  fail "cpack -G DEB: $(tail -20 "$work/cpack.log")"
debs=("$work"/pkg/gpudoc_*.deb)
[[ ${#debs[@]} -eq 1 && -f "${debs[0]}" ]] || fail "expected one gpudoc_*.deb, got: ${debs[*]}"
deb=${debs[0]}

dpkg-deb -c "$deb" | awk '{print $NF}' | grep -v '/$' | sort >"$work/contents.txt"
expect_listed "$work/contents.txt" ./usr/bin/gpudoc ./usr/share/gpudoc/traces/gemm_saturated.jsonl \
  ./usr/share/gpudoc/traces/allreduce_straggler_slow1.jsonl ./usr/share/doc/gpudoc/README.md \
  ./usr/share/doc/gpudoc/methodology.md ./usr/lib/gpudoc/libgpudoc_slice.so
if grep -v -e '^\./usr/bin/gpudoc$' -e '^\./usr/lib/gpudoc/libgpudoc_slice\.so$' -e '^\./usr/share/gpudoc/traces/' -e '^\./usr/share/doc/gpudoc/' \
  -e '^\./usr/lib/gpudoc/libgpudoc_profile\.so$' "$work/contents.txt"; then
  fail "the package holds the files above, outside /usr/bin/gpudoc, /usr/lib/gpudoc/libgpudoc_{slice,profile}.so, /usr/share/gpudoc and /usr/share/doc/gpudoc"
fi

[[ "$(dpkg-deb -f "$deb" Package)" == gpudoc ]] || fail "Package is not gpudoc"
arch=$(dpkg --print-architecture)
[[ "$(dpkg-deb -f "$deb" Architecture)" == "$arch" ]] || fail "Architecture is not $arch"
depends=$(dpkg-deb -f "$deb" Depends)
# dpkg-shlibdeps names the C library (and, unless the build is portable, libstdc++) with versions.
[[ "$depends" == *"libc6 (>="* ]] || fail "Depends was not computed from the binary: '$depends'"

dpkg-deb -x "$deb" "$work/root"
used=$(replay_dir "$work/root/usr/bin/gpudoc")
want=$(realpath "$work/root/usr/share/gpudoc/traces")
[[ "$used" == "$want" ]] || fail "the packaged gpudoc replayed $used, not the package's $want"
echo "ok: $(basename "$deb"), Depends: $depends"
