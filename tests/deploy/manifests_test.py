"""deploy/kubernetes and its overlays (deploy/kubernetes-overlays) against the Kubernetes API's
schemas, offline:
- each is rendered as `kubectl apply -k` would (`kubectl kustomize`; without kubectl on the PATH
  the base is read from its kustomization's resources and the overlays are checked by their patches);
- every object is validated with the schemas of kubernetes-models 5.1.0 (Kubernetes' OpenAPI
  document: types, required fields, enums; resource.k8s.io/v1 is in it, so Kubernetes 1.34 or
  newer) and, for the ServiceMonitor, @kubernetes-models/prometheus-operator 6.0.0 (the operator's
  CRD), through node (tests/deploy/schemas/validate.mjs; `npm ci --prefix tests/deploy/schemas`,
  which scripts/setup.sh runs). Those schemas leave unknown fields open, as the API server's
  non-strict decoding does: node_files_test.py checks the fields gpudoc relies on by name;
- each overlay changes what it says and nothing else; both containers run the image
  deploy/container/Containerfile builds, tagged with the project's version.
Tools: node (nodejs), PyYAML (python3-yaml); kubectl where present.

    python3 tests/deploy/manifests_test.py SOURCE_DIR
"""
import copy
import json
import pathlib
import re
import shutil
import subprocess
import sys
import unittest

SOURCE = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
BASE = SOURCE / "deploy/kubernetes"
OVERLAYS = SOURCE / "deploy/kubernetes-overlays"
SCHEMAS = SOURCE / "tests/deploy/schemas"


def yaml_module():
    try:
        import yaml
    except ImportError:
        raise AssertionError("PyYAML is missing: apt-get install python3-yaml (scripts/setup.sh)")
    return yaml


def render(folder):
    """The objects `kubectl apply -k FOLDER` would send, or None without kubectl."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return None
    r = subprocess.run([kubectl, "kustomize", str(folder)], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise AssertionError(f"kubectl kustomize {folder}: {r.stderr}")
    return [d for d in yaml_module().safe_load_all(r.stdout) if d]


def read_base():
    """The base's objects from its kustomization's resources, with its namespace applied."""
    yaml = yaml_module()
    k = yaml.safe_load((BASE / "kustomization.yaml").read_text(encoding="utf-8"))
    objects = []
    for name in k["resources"]:
        for d in yaml.safe_load_all((BASE / name).read_text(encoding="utf-8")):
            if d and d["kind"] != "Namespace":
                d["metadata"]["namespace"] = k["namespace"]
            if d:
                objects.append(d)
    return objects


def by_kind(objects):
    return {o["kind"]: o for o in objects}


def project_version():
    m = re.search(r"project\(gpudoc VERSION ([0-9.]+)", (SOURCE / "CMakeLists.txt").read_text(encoding="utf-8"))
    return m.group(1)


class ManifestsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.base = render(BASE) or read_base()
        cls.rendered = render(BASE) is not None
        cls.overlays = {o.name: render(o) for o in sorted(OVERLAYS.iterdir()) if o.is_dir()}

    def validate(self, objects):
        node = shutil.which("node")
        if node is None:
            self.fail("node not found: apt-get install nodejs (scripts/setup.sh installs npm, which brings it)")
        if not (SCHEMAS / "node_modules/kubernetes-models").is_dir():
            self.fail("the schemas are not installed: npm ci --prefix tests/deploy/schemas (scripts/setup.sh does)")
        r = subprocess.run([node, str(SCHEMAS / "validate.mjs")], input=json.dumps(objects), capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return [json.loads(line) for line in r.stdout.splitlines()]

    def test_base_is_valid(self):
        results = self.validate(self.base)
        self.assertEqual(sorted(r["kind"] for r in results), ["DaemonSet", "Namespace", "Service", "ServiceMonitor"])
        for r in results:
            self.assertTrue(r["ok"], r)

    def test_overlays_are_valid(self):
        for name, objects in self.overlays.items():
            if objects is None:
                self.skipTest("kubectl is not on the PATH: the overlays are not rendered (their patches are checked)")
            for r in self.validate(objects):
                self.assertTrue(r["ok"], (name, r))

    def test_the_schemas_catch_a_wrong_field(self):
        # The check itself: a string where the API wants an integer, a probe without a handler's
        # required field, an unknown kind.
        ds = copy.deepcopy(by_kind(self.base)["DaemonSet"])
        ds["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["periodSeconds"] = "30s"
        svc = copy.deepcopy(by_kind(self.base)["Service"])
        svc["spec"]["ports"][0]["port"] = "metrics"
        sm = copy.deepcopy(by_kind(self.base)["ServiceMonitor"])
        sm["spec"]["endpoints"] = "metrics"
        unknown = {"apiVersion": "v1", "kind": "NoSuchKind", "metadata": {"name": "x"}}
        results = self.validate([ds, svc, sm, unknown])
        self.assertEqual([r["ok"] for r in results], [False] * 4, results)
        self.assertIn("livenessProbe/periodSeconds must be integer", results[0]["errors"][0])

    def test_nvidia_runtime_overlay(self):
        path = OVERLAYS / "nvidia-runtime"
        objects = self.overlays["nvidia-runtime"]
        if objects is None:
            patch = yaml_module().safe_load((path / "runtime-class.yaml").read_text(encoding="utf-8"))
            self.assertEqual(patch["spec"]["template"]["spec"], {"runtimeClassName": "nvidia"})
            return
        got, want = by_kind(objects), by_kind(copy.deepcopy(self.base))
        self.assertEqual(got["DaemonSet"]["spec"]["template"]["spec"].pop("runtimeClassName"), "nvidia")
        self.assertEqual(got, want)

    def test_without_prometheus_operator_overlay(self):
        path = OVERLAYS / "without-prometheus-operator"
        objects = self.overlays["without-prometheus-operator"]
        if objects is None:
            patch = yaml_module().safe_load((path / "no-servicemonitor.yaml").read_text(encoding="utf-8"))
            self.assertEqual((patch["$patch"], patch["kind"]), ("delete", "ServiceMonitor"))
            return
        want = by_kind(copy.deepcopy(self.base))
        del want["ServiceMonitor"]
        self.assertEqual(by_kind(objects), want)

    def test_images_are_the_recipe_s(self):
        version = project_version()
        containers = by_kind(self.base)["DaemonSet"]["spec"]["template"]["spec"]["containers"]
        self.assertEqual({c["image"] for c in containers}, {f"gpudoc:{version}"})
        recipe = (SOURCE / "deploy/container/Containerfile").read_text(encoding="utf-8")
        self.assertIn(f"ARG GPUDOC_VERSION={version}\n", recipe)
        self.assertIn(f"-t gpudoc:{version} .", recipe)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
