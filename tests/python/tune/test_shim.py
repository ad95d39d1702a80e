"""gpudoc's tune shim (python/gpudoc/tune.py): its patches, as `python3 -m gpudoc.tune` applies them
to a program, on the torch stand-in of tests/integration/tune/fake_torch (no torch needed) and, where
python3 imports torch, on torch's own DataLoader (CPU only)."""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
PYTHON_DIR = os.path.join(ROOT, "python")
FAKE_TORCH = os.path.join(ROOT, "tests", "integration", "tune", "fake_torch")
sys.path.insert(0, PYTHON_DIR)

from gpudoc import tune  # noqa: E402


def has_real_torch():
    python = os.environ.get("GPUDOC_TORCH_PYTHON", "")
    if not python:
        return None
    r = subprocess.run([python, "-c", "import torch"], capture_output=True)
    return python if r.returncode == 0 else None


class ParseTest(unittest.TestCase):
    def test_patches_with_and_without_values(self):
        self.assertEqual(tune.parse_patches("workers=8,pin_memory,prefetch=4,compile=reduce-overhead"),
                         {"workers": 8, "pin_memory": True, "prefetch": 4, "compile": "reduce-overhead"})
        self.assertEqual(tune.parse_patches("workers=2,workers=6"), {"workers": 6})

    def test_bad_patches_are_refused_naming_them(self):
        for text, words in [("nope", "unknown patch 'nope'"), ("workers", "needs a value"),
                            ("workers=x", "not a int"), ("workers=0", "1 or more"), ("pin_memory=1", "takes no value")]:
            with self.assertRaises(tune.UsageError) as e:
                tune.parse_patches(text)
            self.assertIn(words, str(e.exception))

    def test_program_after_the_double_dash(self):
        self.assertEqual(tune.parse_args(["--patch", "tf32", "--", "train.py", "--lr", "1"]),
                         ({"tf32": True}, ["train.py", "--lr", "1"]))
        self.assertEqual(tune.parse_args(["--patch=tf32", "--", "-m", "pkg.train"]), ({"tf32": True}, ["-m", "pkg.train"]))
        for argv in (["--patch", "tf32"], ["--patch", "tf32", "--"], ["--", "-m"], ["train.py"]):
            with self.assertRaises(tune.UsageError):
                tune.parse_args(argv)


class ShimRun(unittest.TestCase):
    """Runs a program under `python3 -m gpudoc.tune` with the torch stand-in first on the path."""

    def run_program(self, source, patches, env=None, args=(), python=sys.executable, fake=True):
        with tempfile.TemporaryDirectory() as tmp:
            script = os.path.join(tmp, "prog.py")
            with open(script, "w") as f:
                f.write(textwrap.dedent(source))
            report = os.path.join(tmp, "report.jsonl")
            e = dict(os.environ)
            e["PYTHONPATH"] = os.pathsep.join(([FAKE_TORCH] if fake else []) + [PYTHON_DIR])
            e["GPUDOC_TUNE_REPORT"] = report
            e.update(env or {})
            r = subprocess.run([python, "-m", "gpudoc.tune", "--patch", patches, "--", script, *args],
                               capture_output=True, text=True, env=e, cwd=tmp, timeout=120)
            lines = []
            if os.path.exists(report):
                with open(report) as f:
                    lines = [json.loads(line) for line in f if line.strip()]
            return r, lines


class DataLoaderTest(ShimRun):
    LOADER = """
        import json, torch
        loaders = [torch.utils.data.DataLoader(list(range(8)), batch_size=2),
                   torch.utils.data.DataLoader(list(range(8)), 2, False, None, None, 1)]
        print(json.dumps([[l.num_workers, l.pin_memory, l.persistent_workers, l.prefetch_factor] for l in loaders]))
        """

    def test_workers_pinned_persistent_prefetch(self):
        r, report = self.run_program(self.LOADER, "workers=4,pin_memory,persistent_workers,prefetch=3")
        self.assertEqual(r.returncode, 0, r.stderr)
        # keyword and positional num_workers alike
        self.assertEqual(json.loads(r.stdout), [[4, True, True, 3], [4, True, True, 3]])
        applied = {(x["patch"], x["applied"]) for x in report}
        self.assertEqual(applied, {("workers", True), ("pin_memory", True), ("persistent_workers", True),
                                   ("prefetch", True)})
        self.assertIn("DataLoader num_workers 0 -> 4", [x["detail"] for x in report])

    def test_a_loader_with_enough_workers_or_an_iterable_dataset_is_left_alone(self):
        r, report = self.run_program("""
            import json, torch
            class Stream(torch.utils.data.IterableDataset):
                pass
            a = torch.utils.data.DataLoader(list(range(8)), num_workers=6)
            b = torch.utils.data.DataLoader(Stream())
            print(json.dumps([a.num_workers, b.num_workers]))
            """, "workers=4")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout), [6, 0])
        self.assertFalse(any(x["applied"] for x in report))
        self.assertTrue(any("IterableDataset" in x["detail"] for x in report))

    def test_no_pinning_without_cuda_and_no_persistence_without_workers(self):
        r, report = self.run_program(self.LOADER, "pin_memory,persistent_workers", env={"FAKE_TORCH_CUDA": "0"})
        self.assertEqual(r.returncode, 0, r.stderr)
        # the first loader has no worker, the second one (positional num_workers=1) one
        self.assertEqual([x[:3] for x in json.loads(r.stdout)], [[0, False, False], [1, False, True]])
        self.assertFalse(any(x["applied"] for x in report if x["patch"] == "pin_memory"))
        self.assertEqual([x["applied"] for x in report if x["patch"] == "persistent_workers"], [False, True])

    def test_report_lines_are_bounded(self):
        r, report = self.run_program("""
            import torch
            for _ in range(50):
                torch.utils.data.DataLoader(list(range(4)))
            """, "workers=2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(report), 5)


class ModuleTest(ShimRun):
    NET = """
        import json, torch
        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = self.add(torch.nn.Conv2d())
                self.fc = self.add(torch.nn.Linear())
            def forward(self, x):
                return torch.autocast.entered
        loss = torch.nn.CrossEntropyLoss().cuda()   # no parameters: not "the model"
        model = Net().to("cuda")
        out = model(1)
        print(json.dumps({"formats": [p.memory_format for p in model.parameters()],
                          "compiled": getattr(model, "compiled_mode", None), "autocast": out,
                          "benchmark": torch.backends.cudnn.benchmark,
                          "tf32": torch.backends.cuda.matmul.allow_tf32}))
        """

    def test_channels_last_compile_autocast_and_flags(self):
        r, report = self.run_program(self.NET, "channels_last,compile=reduce-overhead,bf16_autocast,cudnn_benchmark,tf32")
        self.assertEqual(r.returncode, 0, r.stderr)
        got = json.loads(r.stdout)
        self.assertEqual(got, {"formats": ["channels_last", "channels_last"], "compiled": "reduce-overhead",
                               "autocast": 1, "benchmark": True, "tf32": True})
        self.assertEqual({x["patch"] for x in report if x["applied"]},
                         {"channels_last", "compile", "bf16_autocast", "cudnn_benchmark", "tf32"})

    def test_without_the_patches_nothing_changes(self):
        r, report = self.run_program(self.NET, "workers=2")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout), {"formats": ["contiguous", "contiguous"], "compiled": None,
                                                "autocast": 0, "benchmark": False, "tf32": False})
        self.assertEqual(report, [])

    def test_a_module_that_stays_on_the_cpu_is_not_touched(self):
        r, report = self.run_program("""
            import torch
            m = torch.nn.Conv2d().to("cpu")
            print(m.parameters().__next__().memory_format, getattr(m, "compiled_mode", None))
            """, "channels_last,compile=default")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "contiguous None")
        self.assertEqual(report, [])


class ObserveTest(ShimRun):
    def test_observe_changes_nothing_and_says_what_the_job_does(self):
        r, report = self.run_program("""
            import json, torch
            class Stream(torch.utils.data.IterableDataset):
                pass
            a = torch.utils.data.DataLoader(list(range(8)), batch_size=2, num_workers=3, pin_memory=True)
            b = torch.utils.data.DataLoader(Stream())
            net = torch.nn.Module()
            net.add(torch.nn.Conv2d())
            net.add(torch.nn.Conv2d())
            net = net.to("cuda")
            torch.nn.Linear().to("cpu")
            print(json.dumps([a.num_workers, b.num_workers, torch.backends.cudnn.benchmark]))
            """, "observe")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout), [3, 0, False])
        seen = [x for x in report if "seen" in x]
        self.assertEqual(seen[0], {"seen": "torch", "version": "0.0-fake", "compile": True})
        self.assertIn({"seen": "dataloader", "num_workers": 3, "pin_memory": True, "iterable": False}, seen)
        self.assertIn({"seen": "dataloader", "num_workers": 0, "pin_memory": False, "iterable": True}, seen)
        self.assertEqual([x for x in seen if x["seen"] == "module"], [{"seen": "module", "name": "Module", "convs": 2}])
        self.assertFalse(any("patch" in x for x in report))

    def test_a_job_without_torch_reports_nothing(self):
        r, report = self.run_program("print('no torch here')", "observe")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(report, [])


class ProgramTest(ShimRun):
    def test_the_program_runs_as_python_runs_it(self):
        r, _ = self.run_program("""
            import os, sys
            print(__name__, sys.argv[1:], os.path.dirname(os.path.abspath(__file__)) == sys.path[0])
            """, "tf32", args=("--lr", "0.1"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "__main__ ['--lr', '0.1'] True")

    def test_exit_status_and_errors_are_the_programs(self):
        r, _ = self.run_program("import sys; sys.exit(3)", "tf32")
        self.assertEqual(r.returncode, 3)
        r, _ = self.run_program("raise RuntimeError('CUDA out of memory')", "tf32")
        self.assertEqual(r.returncode, 1)
        self.assertIn("RuntimeError: CUDA out of memory", r.stderr)

    def test_a_module_with_dash_m(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "pkg"))
            open(os.path.join(tmp, "pkg", "__init__.py"), "w").close()
            with open(os.path.join(tmp, "pkg", "train.py"), "w") as f:
                f.write("import sys\nprint(__name__, sys.argv[1:])\n")
            e = dict(os.environ, PYTHONPATH=PYTHON_DIR)
            r = subprocess.run([sys.executable, "-m", "gpudoc.tune", "--patch", "tf32", "--", "-m", "pkg.train", "x"],
                               capture_output=True, text=True, env=e, cwd=tmp, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "__main__ ['x']")

    def test_a_bad_patch_is_exit_2_before_the_program_runs(self):
        r, _ = self.run_program("print('ran')", "warp_speed")
        self.assertEqual(r.returncode, 2)
        self.assertNotIn("ran", r.stdout)
        self.assertIn("unknown patch 'warp_speed'", r.stderr)


@unittest.skipUnless(has_real_torch(), "needs GPUDOC_TORCH_PYTHON: a python3 that imports torch")
class RealTorchTest(ShimRun):
    def test_real_dataloader_gets_workers_that_load(self):
        r, report = self.run_program("""
            import torch
            loader = torch.utils.data.DataLoader(torch.arange(64), batch_size=8)
            total = sum(int(b.sum()) for b in loader)
            print(loader.num_workers, loader.persistent_workers, total)
            """, "workers=2,persistent_workers", python=has_real_torch(), fake=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["2", "True", str(sum(range(64)))])
        self.assertTrue(any(x["patch"] == "workers" and x["applied"] for x in report))

    def test_real_modules_stay_on_the_cpu_untouched(self):
        r, report = self.run_program("""
            import torch
            m = torch.nn.Conv2d(3, 4, 3).to("cpu")
            print(m.weight.is_contiguous(), torch.backends.cudnn.benchmark)
            """, "channels_last,cudnn_benchmark", python=has_real_torch(), fake=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["True", "True"])
        self.assertEqual({x["patch"] for x in report}, {"cudnn_benchmark"})


if __name__ == "__main__":
    unittest.main()
