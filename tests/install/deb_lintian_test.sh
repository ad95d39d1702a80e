#!/usr/bin/env bash
# lintian on the .deb that `cpack -G DEB` makes: no error; the warnings are printed. Skipped (exit
# 77) where lintian is not installed (Debian package lintian; scripts/setup.sh installs it).
#   deb_lintian_test.sh BUILD_DIR CPACK
set -euo pipefail
build=${1:?usage: deb_lintian_test.sh BUILD_DIR CPACK}
cpack=${2:?usage: deb_lintian_test.sh BUILD_DIR CPACK}
source "$(dirname "$0")/common.sh"

if ! command -v lintian >/dev/null; then
  echo "SKIP: lintian is not installed (apt-get install lintian): the package is not linted"
  exit 77
fi
"$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$work/pkg" \
  -D "CPACK_DEBIAN_PACKAGE_MAINTAINER=gpudoc package test <package-test@example.org>" >"$work/cpack.log" 2>&1 ||
  fail "cpack -G DEB: $(tail -20 "$work/cpack.log")"
debs=("$work"/pkg/gpudoc_*.deb)
[[ ${#debs[@]} -eq 1 && -f "${debs[0]}" ]] || fail "expected one gpudoc_*.deb, got: ${debs[*]}"
# lintian exits non-zero on errors (its default --fail-on); its tags are printed either way.
rc=0
lintian --pedantic --tag-display-limit 0 "${debs[0]}" >"$work/lintian.txt" 2>&1 || rc=$?
cat "$work/lintian.txt"
if grep -q '^E: ' "$work/lintian.txt"; then
  fail "lintian found errors (above)"
fi
[[ $rc -eq 0 ]] || fail "lintian exited $rc (above)"
echo "ok: lintian, no errors; $(grep -c '^W: ' "$work/lintian.txt" || true) warnings"
