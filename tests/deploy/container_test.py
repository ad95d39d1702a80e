"""deploy/container/Containerfile checked without a container engine (none runs here; hadolint is
not in Debian):
- two stages from Debian 12 (debian:12 to build, debian:12-slim to run), no NVIDIA base image;
- the build stage installs exactly the rows `build` and `gpudoc` of cmake/debian-packages.txt: its
  package selection is run here on that list, and any package it names literally must be in it;
  then it builds with scripts/setup.sh --gpudoc-only and the portable preset;
- the runtime stage installs nothing, runs unprivileged, and copies from the build stage only paths
  that the install rules make: `cmake --install` of this build tree into a private folder, with the
  recipe's prefix, holds each of them, and the gpudoc there runs;
- .dockerignore keeps build folders and node_modules out of the context.

    python3 tests/deploy/container_test.py SOURCE_DIR BUILD_DIR CMAKE
"""
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile
import unittest

SOURCE = pathlib.Path(sys.argv[1])
BUILD = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else None
CMAKE = sys.argv[3] if len(sys.argv) > 3 else "cmake"
RECIPE = SOURCE / "deploy/container/Containerfile"
PACKAGES = SOURCE / "cmake/debian-packages.txt"


def instructions(text):
    """(INSTRUCTION, arguments) in order: comments dropped, continuation lines joined."""
    out, current = [], ""
    for line in text.splitlines():
        if line.lstrip().startswith("#") and not current:
            continue
        if line.lstrip().startswith("#"):
            continue  # a comment inside a continued instruction
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        current += line
        if current.strip():
            word, _, rest = current.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
        current = ""
    return out


def stages(text):
    result = []
    for word, args in instructions(text):
        if word == "FROM":
            result.append({"from": args, "steps": []})
        else:
            result[-1]["steps"].append((word, args))
    return result


def package_rows(roles):
    rows = []
    for line in PACKAGES.read_text(encoding="utf-8").splitlines():
        fields = line.split("#", 1)[0].split()
        if len(fields) == 3 and fields[0] in roles:
            rows.append(fields[1])
    return rows


class ContainerfileTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stages = stages(RECIPE.read_text(encoding="utf-8"))

    def test_two_debian_12_stages(self):
        self.assertEqual([s["from"] for s in self.stages], ["debian:12 AS build", "debian:12-slim"])
        for s in self.stages:
            self.assertNotRegex(s["from"], r"nvidia|nvcr\.io|cuda")

    def apt_installs(self, stage):
        """Each `apt-get install` of the stage's RUN steps: its arguments, up to the `&&` (outside
        parentheses) that ends the command."""
        found = []
        for word, args in stage["steps"]:
            if word != "RUN":
                continue
            for m in re.finditer(r"apt-get install ", args):
                depth, end = 0, len(args)
                for i in range(m.end(), len(args)):
                    depth += {"(": 1, ")": -1}.get(args[i], 0)
                    if depth == 0 and args.startswith("&&", i):
                        end = i
                        break
                found.append(args[m.end():end].strip())
        return found

    def test_build_stage_installs_the_build_and_gpudoc_rows(self):
        (install,) = self.apt_installs(self.stages[0])
        selection = re.search(r"\$\((.*)\)$", install)
        self.assertIsNotNone(selection, install)
        # The recipe's own selection, run on the repository's list.
        listed_copy = [a for w, a in self.stages[0]["steps"] if w == "COPY" and "debian-packages.txt" in a]
        self.assertEqual(listed_copy, ["cmake/debian-packages.txt /tmp/debian-packages.txt"])
        command = selection.group(1).replace("/tmp/debian-packages.txt", shlex.quote(str(PACKAGES)))
        chosen = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=True).stdout.split()
        self.assertEqual(chosen, package_rows({"build", "gpudoc"}))
        self.assertIn("libsqlite3-dev", chosen)
        # Whatever it names literally is in the list too.
        literal = [t for t in shlex.split(install[:selection.start()] + install[selection.end():])
                   if not t.startswith("-")]
        self.assertLessEqual(set(literal), set(package_rows({"build", "gpudoc", "tests"})), literal)

    def test_build_stage_builds_the_portable_preset(self):
        runs = " ".join(a for w, a in self.stages[0]["steps"] if w == "RUN")
        self.assertIn("scripts/setup.sh --gpudoc-only portable", runs)
        presets = json.loads((SOURCE / "CMakePresets.json").read_text(encoding="utf-8"))
        self.assertIn("portable", [p["name"] for p in presets["configurePresets"]])
        # `all` is built before installing: the install rules name more than the gpudoc target's files.
        self.assertRegex(runs, r"cmake --build build-portable\s+&&\s+DESTDIR=/staging cmake --install build-portable "
                               r"--prefix /usr --strip")

    def test_runtime_stage(self):
        steps = self.stages[1]["steps"]
        self.assertEqual(self.apt_installs(self.stages[1]), [])
        self.assertEqual([w for w, _ in steps if w == "RUN"], [])
        (user,) = [a for w, a in steps if w == "USER"]
        self.assertNotIn(user.split(":")[0], ("0", "root"))
        self.assertIn(("ENTRYPOINT", '["/usr/bin/gpudoc"]'), steps)
        env = " ".join(a for w, a in steps if w == "ENV")
        for setting in ("NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=utility",
                        "GPUDOC_STORE=/var/lib/gpudoc/gpudoc.db"):
            self.assertIn(setting, env)
        for w, a in steps:
            if w in ("COPY", "ADD"):
                self.assertEqual(w, "COPY")
                self.assertTrue(a.startswith("--from=build /staging/usr/"), a)

    def test_copied_paths_are_installed(self):
        if BUILD is None:
            self.skipTest("no build folder given")
        copies = [a.split()[1:] for w, a in self.stages[1]["steps"] if w == "COPY"]
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, "DESTDIR": os.path.join(tmp, "staging")}
            r = subprocess.run([CMAKE, "--install", str(BUILD), "--prefix", "/usr"], env=env, capture_output=True,
                               text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr)
            for source, _ in copies:
                path = pathlib.Path(tmp) / source.removeprefix("/")
                self.assertTrue(path.exists(), source)
                if source.endswith("/"):
                    self.assertTrue(any(path.iterdir()), source)
            gpudoc = pathlib.Path(tmp) / "staging/usr/bin/gpudoc"
            r = subprocess.run([str(gpudoc), "--version"], capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)

    def test_context_leaves_out_build_output(self):
        ignored = (SOURCE / ".dockerignore").read_text(encoding="utf-8").splitlines()
        for pattern in ("/build*/", "**/node_modules/"):
            self.assertIn(pattern, ignored)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
