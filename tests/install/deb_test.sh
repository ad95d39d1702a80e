#!/usr/bin/env bash
# `cpack -G DEB` makes a complete package: /usr/bin/gpudoc and its libraries, the traces under
# /usr/share/gpudoc, deploy/ under /usr/share/gpudoc/deploy, the systemd units in
# /lib/systemd/system (systemd-analyze verify silent on them as installed), the docs (serve.md,
# which the units' Documentation= names), copyright and changelog.Debian.gz under
# /usr/share/doc/gpudoc, a man page per command, bash completion that completes from the
# installed binary, the Python client's wheel, Depends computed from the binary, and the
# Maintainer given (cpack refuses without one). Unpacked anywhere, its gpudoc replays the traces it carries.
#   deb_test.sh BUILD_DIR CPACK
set -euo pipefail
build=${1:?usage: deb_test.sh BUILD_DIR CPACK}
cpack=${2:?usage: deb_test.sh BUILD_DIR CPACK}
source "$(dirname "$0")/common.sh"

for tool in dpkg-deb dpkg-shlibdeps file systemd-analyze; do
  command -v "$tool" >/dev/null || fail "$tool not found: install dpkg-dev, file and systemd (scripts/setup.sh does)"
done
maintainer="gpudoc package test <package-test@example.org>"
# Without a Maintainer, cpack refuses and says how to give one.
if "$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$work/refused" -D CPACK_DEBIAN_PACKAGE_MAINTAINER= \
  >"$work/refused.log" 2>&1; then
  fail "cpack made a .deb without a Maintainer"
fi
grep -q 'GPUDOC_PACKAGE_MAINTAINER="Your Name <you@example.org>"' "$work/refused.log" ||
  fail "cpack without a Maintainer did not say how to give one: $(tail -5 "$work/refused.log")"

"$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$work/pkg" -D "CPACK_DEBIAN_PACKAGE_MAINTAINER=$maintainer" \
  >"$work/cpack.log" 2>&1 || fail "cpack -G DEB: $(tail -20 "$work/cpack.log")"
debs=("$work"/pkg/gpudoc_*.deb)
[[ ${#debs[@]} -eq 1 && -f "${debs[0]}" ]] || fail "expected one gpudoc_*.deb, got: ${debs[*]}"
deb=${debs[0]}

dpkg-deb -c "$deb" | awk '{print $NF}' | grep -v '/$' | sort >"$work/contents.txt"
expect_listed "$work/contents.txt" ./usr/bin/gpudoc ./usr/share/gpudoc/traces/gemm_saturated.jsonl \
  ./usr/share/gpudoc/traces/allreduce_straggler_slow1.jsonl ./usr/share/doc/gpudoc/README.md \
  ./usr/share/doc/gpudoc/methodology.md ./usr/share/doc/gpudoc/serve.md ./usr/share/doc/gpudoc/serve-metrics.md \
  ./usr/share/doc/gpudoc/copyright ./usr/share/doc/gpudoc/changelog.Debian.gz ./usr/share/lintian/overrides/gpudoc \
  ./usr/lib/gpudoc/libgpudoc_slice.so \
  ./lib/systemd/system/gpudoc-serve.service ./lib/systemd/system/gpudoc-health.service \
  ./lib/systemd/system/gpudoc-health.timer \
  ./usr/share/gpudoc/deploy/slurm/prolog.sh ./usr/share/gpudoc/deploy/kubernetes/daemonset.yaml \
  ./usr/share/gpudoc/deploy/container/Containerfile ./usr/share/gpudoc/deploy/prometheus/gpudoc-alerts.yml \
  ./usr/share/gpudoc/deploy/grafana/gpudoc-dashboard.json \
  ./usr/share/man/man1/gpudoc.1.gz ./usr/share/man/man1/gpudoc-serve.1.gz ./usr/share/man/man1/gpudoc-health.1.gz \
  ./usr/share/man/man1/gpudoc-doctor.1.gz ./usr/share/bash-completion/completions/gpudoc
if grep -v -e '^\./usr/bin/gpudoc$' -e '^\./usr/lib/gpudoc/libgpudoc_\(slice\|profile\)\.so$' \
  -e '^\./usr/share/gpudoc/\(traces\|deploy\)/' -e '^\./usr/share/doc/gpudoc/[^/]*$' \
  -e '^\./lib/systemd/system/gpudoc-\(serve\.service\|health\.service\|health\.timer\)$' \
  -e '^\./usr/share/man/man1/gpudoc\(-[a-z]*\)\?\.1\.gz$' -e '^\./usr/share/bash-completion/completions/gpudoc$' \
  -e '^\./usr/share/gpudoc/python/gpudoc-[0-9.]*-py3-none-any\.whl$' \
  -e '^\./usr/share/lintian/overrides/gpudoc$' \
  "$work/contents.txt"; then
  fail "the package holds the files above, outside the places cmake/Packaging.cmake names"
fi

# The Python client's wheel (python_client_install installs the build's copy of it offline).
wheel=$(grep -x '\./usr/share/gpudoc/python/gpudoc-[0-9.]*-py3-none-any\.whl' "$work/contents.txt") ||
  fail "the package holds no wheel of the Python client in /usr/share/gpudoc/python"

[[ "$(dpkg-deb -f "$deb" Package)" == gpudoc ]] || fail "Package is not gpudoc"
[[ "$(dpkg-deb -f "$deb" Maintainer)" == "$maintainer" ]] || fail "Maintainer is not the one given"
[[ "$(dpkg-deb -f "$deb" Version)" == *-1 ]] || fail "Version has no Debian revision: $(dpkg-deb -f "$deb" Version)"
arch=$(dpkg --print-architecture)
[[ "$(dpkg-deb -f "$deb" Architecture)" == "$arch" ]] || fail "Architecture is not $arch"
depends=$(dpkg-deb -f "$deb" Depends)
# dpkg-shlibdeps names the C library (and, unless the build is portable, libstdc++) with versions.
[[ "$depends" == *"libc6 (>="* ]] || fail "Depends was not computed from the binary: '$depends'"

root=$work/root
dpkg-deb -x "$deb" "$root"
used=$(replay_dir "$root/usr/bin/gpudoc")
want=$(realpath "$root/usr/share/gpudoc/traces")
[[ "$used" == "$want" ]] || fail "the packaged gpudoc replayed $used, not the package's $want"

# The units as installed: verify is silent when their gpudoc is the package's; each
# Documentation= file is in the package.
mkdir "$work/units"
for unit in "$root"/lib/systemd/system/*; do
  sed "s#/usr/bin/gpudoc#$root/usr/bin/gpudoc#g" "$unit" >"$work/units/$(basename "$unit")"
  while read -r doc; do
    case $doc in
      file://*) [[ -f "$root${doc#file://}" ]] ;;
      man:*) page=${doc#man:} && [[ -f "$root/usr/share/man/man${page//[^0-9]/}/${page%(*}.${page//[^0-9]/}.gz" ]] ;;
      *) false ;;
    esac || fail "$(basename "$unit") names $doc, which the package does not install"
  done < <(sed -n 's/^Documentation=//p' "$unit" | tr ' ' '\n')
done
verify=$(systemd-analyze verify "$work"/units/* 2>&1) || fail "systemd-analyze verify: $verify"
[[ -z "$verify" ]] || fail "systemd-analyze verify is not silent on the installed units: $verify"

[[ -x "$root/usr/share/gpudoc/deploy/slurm/prolog.sh" ]] || fail "the packaged prolog.sh is not executable"
python3 -m zipfile -l "$root/${wheel#./}" | grep 'gpudoc/guard\.py' > /dev/null || fail "$wheel does not hold the client"  # not grep -q: its early exit breaks the lister's pipe
zcat "$root/usr/share/doc/gpudoc/changelog.Debian.gz" | head -1 | grep -q "^gpudoc ($(dpkg-deb -f "$deb" Version)) " ||
  fail "changelog.Debian.gz does not open with this version"
grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' \
  "$root/usr/share/doc/gpudoc/copyright" || fail "copyright is not machine-readable (DEP-5)"
zcat "$root/usr/share/man/man1/gpudoc-serve.1.gz" | grep -q '^\.TH GPUDOC-SERVE "1"' ||
  fail "gpudoc-serve.1 is not titled GPUDOC-SERVE(1)"
zcat "$root/usr/share/man/man1/gpudoc-serve.1.gz" | grep -qF -- '\-\-listen' || fail "gpudoc-serve.1 lacks serve's options"

# Completion from the installed binary: commands, then a command's own long options.
completed=$(PATH="$root/usr/bin:$PATH" bash -c '
  source "$1"
  complete_line() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _gpudoc; echo "${COMPREPLY[*]}"; }
  complete_line gpudoc se; complete_line gpudoc serve --lis; complete_line gpudoc health --ga' _ \
  "$root/usr/share/bash-completion/completions/gpudoc")
[[ "$completed" == $'serve\n--listen\n--gate' ]] || fail "bash completion gave: $completed"
echo "ok: $(basename "$deb"), Depends: $depends"
