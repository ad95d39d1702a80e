#!/usr/bin/env python3
"""`pip install ./python` works offline on Debian 12: a venv in a private temporary folder (its
pip and setuptools come from python3-venv's bundled wheels; `wheel`, which setuptools 66 needs
to build one, from python3-wheel-whl), the package installed with no index and no build
isolation, then imported from outside the source tree. Usage: install_test.py REPO_ROOT"""
import glob
import os
import shutil
import subprocess
import sys
import tempfile


def run(*args, cwd=None):
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PYTHONPATH", None)
    result = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        sys.exit(f"install_test: {' '.join(args)} failed ({result.returncode}):\n{result.stdout}")
    return result.stdout


def main():
    root = os.path.abspath(sys.argv[1])
    folder = tempfile.mkdtemp(prefix="gpudoc-install-test-")
    try:
        venv = os.path.join(folder, "venv")
        run(sys.executable, "-m", "venv", venv)
        python = os.path.join(venv, "bin", "python")
        has_wheel = subprocess.run([python, "-c", "import wheel"], stderr=subprocess.DEVNULL).returncode == 0
        if not has_wheel:
            wheels = sorted(glob.glob("/usr/share/python-wheels/wheel-*.whl"))
            if not wheels:
                sys.exit("install_test: no `wheel` for the venv: install python3-wheel-whl (scripts/setup.sh does)")
            run(python, "-m", "pip", "install", "--no-index", wheels[-1])
        # A copy, so the build's egg-info and build/ folders never land in the source tree.
        source = os.path.join(folder, "src")
        shutil.copytree(os.path.join(root, "python"), source,
                        ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
        run(python, "-m", "pip", "install", "--no-index", "--no-build-isolation", source)
        out = run(python, "-c",
                  "import gpudoc, io, sys\n"
                  "assert gpudoc.__file__.startswith(sys.prefix), gpudoc.__file__\n"
                  "g = gpudoc.Guard('', stderr=io.StringIO()); assert not g.connected\n"
                  "c = gpudoc.BatchSizeController(64, micro_batch=16); assert c.accumulation_steps == 4\n"
                  "gpudoc.report(installed=1)\n"
                  "print('version', gpudoc.__version__)", cwd=folder)
        if '::gpudoc {"installed": 1}' not in out or "version 0.1.0" not in out:
            sys.exit(f"install_test: unexpected output from the installed package:\n{out}")
        print("install_test: gpudoc", out.split("version ")[-1].strip(), "installed and imported from", venv)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
