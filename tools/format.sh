#!/usr/bin/env bash
# Formats gpudoc's C++ and CUDA sources with clang-format-14 and the repository's .clang-format.
#
#   tools/format.sh           rewrite the files of src/ and tests/ in place
#   tools/format.sh --check   change nothing; list each file that is not formatted and exit 1
#
# The files are those git tracks under src/ and tests/ (*.cpp, *.hpp, *.cu, *.cuh, *.h): build
# folders and web/node_modules are never touched. CLANG_FORMAT names another binary of version 14.
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
case "${1:-}" in
  "") ;;
  --check) check=1 ;;
  *) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
clang_format=${CLANG_FORMAT:-clang-format-14}
command -v "$clang_format" >/dev/null || { echo "format.sh: $clang_format not found (apt-get install clang-format-14)" >&2; exit 3; }
version=$("$clang_format" --version)
[[ "$version" == *"version 14."* ]] || { echo "format.sh: $clang_format is not version 14: $version" >&2; exit 3; }

mapfile -t files < <(git ls-files -- 'src/*.cpp' 'src/*.hpp' 'src/*.h' 'src/*.cu' 'src/*.cuh' \
                                     'tests/*.cpp' 'tests/*.hpp' 'tests/*.h' 'tests/*.cu' 'tests/*.cuh')
if ((check)); then
  # --dry-run -Werror: exit non-zero on the first file that would change; list them all first.
  bad=0
  for f in "${files[@]}"; do
    "$clang_format" --style=file --dry-run -Werror "$f" >/dev/null 2>&1 || { echo "not formatted: $f"; bad=1; }
  done
  ((bad == 0)) && echo "format.sh: ${#files[@]} files formatted as .clang-format says"
  exit "$bad"
fi
"$clang_format" --style=file -i "${files[@]}"
echo "format.sh: formatted ${#files[@]} files"
