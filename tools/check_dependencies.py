#!/usr/bin/env python3
"""Checks that every dependency the build requires is one scripts/setup.sh installs.

The list is cmake/debian-packages.txt; the build finds what it requires through cmake/Require.cmake's
gpudoc_find_package / gpudoc_find_pkg_config, which name the Debian package when it is missing. This
check fails (exit 1, naming file and line) on:

* a find_package, pkg_check_modules, pkg_search_module, find_library, find_path or find_file that
  is REQUIRED anywhere but cmake/Require.cmake (a requirement the install would not know of),
  but for the few that no Debian package provides (ALLOWED below);
* a gpudoc_find_* of a name the list does not have, or one in src/ or cmake/ whose row is not for
  the gpudoc binary (the build would stop on a machine set up by scripts/quickstart.sh);
* a row of the list that is malformed.

    python3 tools/check_dependencies.py REPOSITORY_ROOT
"""

import argparse
import os
import re
import sys

# Required finds that are not Debian packages: the C library's threads, and the CUDA toolkit that
# came with the nvcc the build found (the build uses CUDA only when nvcc is there).
ALLOWED = {"Threads", "CUDAToolkit"}
ROLES = {"build", "gpudoc", "tests"}
FIND_CALL = re.compile(r"\b(find_package|pkg_check_modules|pkg_search_module|find_library|find_path|find_file)"
                       r"\s*\(([^)]*)\)", re.S)
GPUDOC_CALL = re.compile(r"\bgpudoc_find_(package|pkg_config)\s*\(([^)]*)\)", re.S)
SKIP_DIRS = {".git", "node_modules"}


def read_list(path):
    """{provides: (role, package)} and the errors of cmake/debian-packages.txt."""
    rows, errors = {}, []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = line.split()
            if len(fields) != 3 or fields[0] not in ROLES:
                errors.append(f"{path}:{number}: expected 'ROLE PACKAGE PROVIDES' with ROLE one of "
                              f"{', '.join(sorted(ROLES))}: {line}")
                continue
            role, package, provides = fields
            if provides != "-":
                if provides in rows:
                    errors.append(f"{path}:{number}: '{provides}' is provided by two rows")
                rows[provides] = (role, package)
    return rows, errors


def build_files(root):
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("build"))
        for name in sorted(files):
            if name == "CMakeLists.txt" or name.endswith(".cmake"):
                yield os.path.join(folder, name)


def strip_comments(text):
    """The text with CMake's line comments blanked (line numbers kept)."""
    return "\n".join(re.sub(r"#.*", "", line) for line in text.split("\n"))


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def check(root):
    list_path = os.path.join(root, "cmake", "debian-packages.txt")
    rows, errors = read_list(list_path)
    require = os.path.join(root, "cmake", "Require.cmake")
    for path in build_files(root):
        if os.path.abspath(path) == os.path.abspath(require):
            continue
        with open(path, encoding="utf-8") as f:
            text = strip_comments(f.read())
        rel = os.path.relpath(path, root)
        for m in FIND_CALL.finditer(text):
            args = m.group(2).split()
            if "REQUIRED" in args and (not args or args[0] not in ALLOWED):
                errors.append(f"{rel}:{line_of(text, m.start())}: {m.group(1)}({' '.join(args)}) requires "
                              "something outside cmake/debian-packages.txt: use gpudoc_find_package or "
                              "gpudoc_find_pkg_config (cmake/Require.cmake) and list its package")
        for m in GPUDOC_CALL.finditer(text):
            args = m.group(2).split()
            name = args[0] if m.group(1) == "package" else (args[1] if len(args) > 1 else "")
            where = f"{rel}:{line_of(text, m.start())}"
            if name not in rows:
                errors.append(f"{where}: '{name}' has no row in cmake/debian-packages.txt")
                continue
            role, package = rows[name]
            for_binary = not rel.startswith("tests" + os.sep)
            if for_binary and role not in ("build", "gpudoc"):
                errors.append(f"{where}: the gpudoc binary needs '{name}', but cmake/debian-packages.txt "
                              f"lists {package} for '{role}': scripts/quickstart.sh would not install it")
    return errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", help="the repository's root")
    args = parser.parse_args()
    errors = check(args.root)
    for e in errors:
        print(e)
    if errors:
        print(f"{len(errors)} problem(s) with the build's dependencies")
        return 1
    print("every dependency the build requires is in cmake/debian-packages.txt, with the right role")
    return 0


if __name__ == "__main__":
    sys.exit(main())
