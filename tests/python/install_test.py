#!/usr/bin/env python3
"""The Python client installs offline on Debian 12, the three ways python/README.md gives, each in
a fresh venv in a private temporary folder with no package index (PIP_NO_INDEX=1), then imported
and used from outside the source tree:
1. the wheel the build makes (WHEEL; the .deb ships it in /usr/share/gpudoc/python) into a plain
   venv: installing a wheel needs nothing but pip;
2. the source, in a venv of Debian's python3 made with --system-site-packages, so that Debian's
   python3-setuptools and python3-wheel build it: `pip install --no-build-isolation ./python`;
3. the source, in a plain venv: `wheel` first from python3-wheel-whl (the venv's setuptools comes
   from python3-venv), then `pip install --no-build-isolation ./python`.
Usage: install_test.py REPO_ROOT WHEEL"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

DEBIAN_PYTHON = "/usr/bin/python3"
USE = ("import gpudoc, io, sys\n"
       "assert gpudoc.__file__.startswith(sys.prefix), gpudoc.__file__\n"
       "g = gpudoc.Guard('', stderr=io.StringIO()); assert not g.connected\n"
       "c = gpudoc.BatchSizeController(64, micro_batch=16); assert c.accumulation_steps == 4\n"
       "gpudoc.report(installed=1)\n"
       "print('version', gpudoc.__version__)")


def run(*args, cwd=None):
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INDEX": "1"}
    env.pop("PYTHONPATH", None)
    result = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        sys.exit(f"install_test: {' '.join(args)} failed ({result.returncode}):\n{result.stdout}")
    return result.stdout


def source_copy(root, folder):
    """A copy of python/, so the build's egg-info and build/ folders never land in the source tree."""
    source = os.path.join(folder, "src")
    shutil.copytree(os.path.join(root, "python"), source,
                    ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    return source


def check_installed(python, folder, how):
    out = run(python, "-c", USE, cwd=folder)
    if '::gpudoc {"installed": 1}' not in out or "version 0.1.0" not in out:
        sys.exit(f"install_test: unexpected output from the package installed {how}:\n{out}")
    print(f"install_test: gpudoc {out.split('version ')[-1].strip()} installed {how}")


def from_wheel(wheel, folder):
    if not os.path.isfile(wheel):
        sys.exit(f"install_test: no wheel at {wheel}: build the target gpudoc_python_wheel "
                 "(needs python3-setuptools and python3-wheel; scripts/setup.sh installs them)")
    venv = os.path.join(folder, "wheel-venv")
    run(sys.executable, "-m", "venv", venv)
    python = os.path.join(venv, "bin", "python")
    run(python, "-m", "pip", "install", wheel)
    check_installed(python, folder, f"from the wheel {os.path.basename(wheel)} into a plain venv")


def with_debian_setuptools(root, folder):
    probe = subprocess.run([DEBIAN_PYTHON, "-c", "import setuptools, wheel"], stderr=subprocess.DEVNULL)
    if probe.returncode != 0:
        sys.exit(f"install_test: {DEBIAN_PYTHON} lacks setuptools or wheel: apt-get install python3-setuptools "
                 "python3-wheel (scripts/setup.sh does)")
    venv = os.path.join(folder, "system-venv")
    run(DEBIAN_PYTHON, "-m", "venv", "--system-site-packages", venv)
    python = os.path.join(venv, "bin", "python")
    run(python, "-m", "pip", "install", "--no-build-isolation", source_copy(root, os.path.join(folder, "a")))
    check_installed(python, folder, "from source with Debian's setuptools and wheel (--system-site-packages)")


def in_plain_venv(root, folder):
    venv = os.path.join(folder, "plain-venv")
    run(sys.executable, "-m", "venv", venv)
    python = os.path.join(venv, "bin", "python")
    has_wheel = subprocess.run([python, "-c", "import wheel"], stderr=subprocess.DEVNULL).returncode == 0
    if not has_wheel:
        wheels = sorted(glob.glob("/usr/share/python-wheels/wheel-*.whl"))
        if not wheels:
            sys.exit("install_test: no `wheel` for the venv: install python3-wheel-whl (scripts/setup.sh does)")
        run(python, "-m", "pip", "install", wheels[-1])
    run(python, "-m", "pip", "install", "--no-build-isolation", source_copy(root, os.path.join(folder, "b")))
    check_installed(python, folder, "from source in a plain venv (wheel from python3-wheel-whl)")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: install_test.py REPO_ROOT WHEEL")
    root, wheel = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    folder = tempfile.mkdtemp(prefix="gpudoc-install-test-")
    try:
        from_wheel(wheel, folder)
        with_debian_setuptools(root, folder)
        in_plain_venv(root, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
