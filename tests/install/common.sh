# Shared by install_test.sh and deb_test.sh: a private work folder, failing with a reason, and
# which folder an installed gpudoc's `doctor --replay --json` replayed its traces from.

# A private folder (mktemp -d: mode 0700, unpredictable name), removed on exit.
work=$(mktemp -d "${TMPDIR:-/tmp}/gpudoc-install-test.XXXXXXXX")
trap 'rm -rf "$work"' EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# replay_dir GPUDOC: the folder the binary's `doctor --replay --json` read its traces from. The
# environment's GPUDOC_DATA_DIR would take precedence over every built-in place, so it is unset.
replay_dir() {
  local out="$work/doctor.json" rc=0
  env -u GPUDOC_DATA_DIR "$1" doctor --replay --json >"$out" 2>"$work/doctor.err" || rc=$?
  # --replay: the replayed traces' findings decide the exit code, 0 or 1; anything else is a failure.
  [[ $rc -le 1 ]] || fail "$1 doctor --replay --json exited $rc: $(head -c 2000 "$work/doctor.err")"
  python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["replay_dir"])' "$out" ||
    fail "no replay_dir in the JSON of $1 doctor --replay --json"
}

# expect_listed FILE PATH...: every PATH is a line of FILE.
expect_listed() {
  local list=$1 path
  shift
  for path in "$@"; do
    grep -qxF -- "$path" "$list" || fail "$path is missing (list: $list)"
  done
}
