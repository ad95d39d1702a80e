#!/usr/bin/env bash
# `cmake --install BUILD --prefix P` gives a working gpudoc anywhere: P/bin/gpudoc doctor finds the
# bundled traces in P/share/gpudoc/traces, also after P is moved, and not in a checkout around P.
#   install_test.sh BUILD_DIR CMAKE
set -euo pipefail
build=${1:?usage: install_test.sh BUILD_DIR CMAKE}
cmake=${2:?usage: install_test.sh BUILD_DIR CMAKE}
source "$(dirname "$0")/common.sh"

# The prefix sits where a build tree's binary would find a checkout's tests/data
# (bin/../../../tests/data): a decoy copy of the traces is there, and must not be used.
prefix="$work/checkout/stage/prefix"
"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1 ||
  fail "cmake --install: $(tail -5 "$work/install.log")"

(cd "$prefix" && find . -type f | sort) >"$work/files.txt"
expect_listed "$work/files.txt" ./bin/gpudoc ./share/gpudoc/traces/gemm_saturated.jsonl \
  ./share/gpudoc/traces/sawtooth_p1000_d50.jsonl ./share/gpudoc/traces/tiny_kernels.jsonl \
  ./share/gpudoc/traces/allreduce_straggler_slow1.jsonl ./share/doc/gpudoc/README.md \
  ./share/doc/gpudoc/methodology.md ./share/doc/gpudoc/findings.md ./lib/gpudoc/libgpudoc_slice.so
[[ -x "$prefix/bin/gpudoc" ]] || fail "$prefix/bin/gpudoc is not executable"
# lib/gpudoc/libgpudoc_profile.so: gpudoc profile's injection library, where CUPTI's headers were found
if grep -v -e '^\./bin/gpudoc$' -e '^\./lib/gpudoc/libgpudoc_slice\.so$' -e '^\./share/gpudoc/traces/[a-z0-9_]*\.jsonl$' -e '^\./share/doc/gpudoc/[A-Za-z-]*\.md$' \
  -e '^\./lib/gpudoc/libgpudoc_profile\.so$' -e '^\./share/doc/gpudoc/copyright$' -e '^\./share/gpudoc/deploy/' \
  -e '^\./lib/systemd/system/gpudoc-\(serve\.service\|health\.service\|health\.timer\)$' \
  -e '^\./share/man/man1/gpudoc\(-[a-z]*\)\?\.1\.gz$' -e '^\./share/bash-completion/completions/gpudoc$' \
  -e '^\./share/lintian/overrides/gpudoc$' \
  -e '^\./share/gpudoc/python/gpudoc-[0-9.]*-py3-none-any\.whl$' "$work/files.txt"; then
  fail "the files above were installed too; only what cmake/Packaging.cmake lists belongs in a prefix"
fi

# The installed gpudoc slice finds its preload library in ../lib/gpudoc (it then stops at the
# driver, which this machine may lack: the message says which step it reached).
slice_out=$(CUDA_MPS_PIPE_DIRECTORY="$work/no-mps" GPUDOC_CUDA_DRIVER="$work/no-libcuda.so.1" \
  "$prefix/bin/gpudoc" slice --mem 1G -- true 2>&1) || true
[[ "$slice_out" == *"cannot load the CUDA driver"* ]] ||
  fail "the installed gpudoc slice did not find lib/gpudoc/libgpudoc_slice.so: $slice_out"

mkdir -p "$work/checkout/tests/data"
cp "$prefix/share/gpudoc/traces/"*.jsonl "$work/checkout/tests/data/"

used=$(replay_dir "$prefix/bin/gpudoc")
want=$(realpath "$prefix/share/gpudoc/traces")
[[ "$used" == "$want" ]] || fail "the installed gpudoc replayed $used, not its own $want"

# Moved elsewhere, the prefix still works: the traces are found relative to the executable.
mv "$prefix" "$work/moved"
used=$(replay_dir "$work/moved/bin/gpudoc")
want=$(realpath "$work/moved/share/gpudoc/traces")
[[ "$used" == "$want" ]] || fail "the moved gpudoc replayed $used, not its own $want"
echo "ok: installed and moved gpudoc replay the traces of their own prefix ($want)"
