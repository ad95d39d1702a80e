"""deploy/systemd, deploy/kubernetes, deploy/slurm checked offline:
- the systemd unit passes `systemd-analyze verify` with no complaint, keeps its hardening
  (DynamicUser, ProtectSystem=strict, NoNewPrivileges, loopback listen, restart on failure) and an
  exposure of at most 2.5 in `systemd-analyze security --offline`;
- the Kubernetes manifests parse (PyYAML), the DaemonSet's selector, Service and ServiceMonitor
  find each other, and the pod keeps its GPU-node placement, hostPID, read-only root and limits;
- the Slurm prolog and epilog pass shellcheck and, run against a fake gpudoc and a fake scontrol,
  pass a healthy node, drain a failing one with the gate's reason, drain on a hung gate, and pass
  (or drain, when asked) when gpudoc cannot judge.
Tools: systemd-analyze (systemd), shellcheck, PyYAML (python3-yaml): scripts/setup.sh.

    python3 tests/deploy/node_files_test.py SOURCE_DIR
"""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
DEPLOY = SOURCE / "deploy"
UNIT = DEPLOY / "systemd/gpudoc-serve.service"


def need(tool, package):
    p = shutil.which(tool)
    if p is None:
        raise AssertionError(f"{tool} not found: apt-get install {package} (scripts/setup.sh)")
    return p


def unit_settings():
    settings = {}
    for line in UNIT.read_text(encoding="utf-8").splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            k, v = line.split("=", 1)
            settings.setdefault(k, []).append(v)
    return settings


class SystemdUnitTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        tmp = pathlib.Path(self.tmp.name)
        stub = tmp / "gpudoc"  # verify wants ExecStart's binary to exist
        stub.write_text("#!/bin/sh\nexit 0\n")
        stub.chmod(0o755)
        self.unit = tmp / UNIT.name
        self.unit.write_text(UNIT.read_text(encoding="utf-8").replace("/usr/bin/gpudoc", str(stub)))

    def tearDown(self):
        self.tmp.cleanup()

    def test_verify_is_silent(self):
        r = subprocess.run([need("systemd-analyze", "systemd"), "verify", str(self.unit)],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual((r.returncode, r.stdout + r.stderr), (0, ""))

    def test_exposure(self):
        r = subprocess.run([need("systemd-analyze", "systemd"), "security", "--offline=yes", "--threshold=25",
                            "--no-pager", self.unit.name], cwd=self.tmp.name, capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout[-600:] + r.stderr)

    def test_hardening_and_defaults(self):
        s = unit_settings()
        for key, value in [("DynamicUser", "yes"), ("ProtectSystem", "strict"), ("NoNewPrivileges", "yes"),
                           ("Restart", "on-failure"), ("CapabilityBoundingSet", "")]:
            self.assertEqual(s.get(key), [value], key)
        self.assertIn("GPUDOC_SERVE_LISTEN=127.0.0.1:9401", s["Environment"])
        self.assertIn("--listen ${GPUDOC_SERVE_LISTEN}", s["ExecStart"][0])
        self.assertNotIn("PrivateDevices", s)  # it would hide /dev/nvidia*


def load_k8s():
    try:
        import yaml
    except ImportError:
        raise AssertionError("PyYAML is missing: apt-get install python3-yaml (scripts/setup.sh)")
    docs = {}
    for f in sorted((DEPLOY / "kubernetes").glob("*.yaml")):
        for d in yaml.safe_load_all(f.read_text(encoding="utf-8")):
            docs[d["kind"]] = d
    return docs


class KubernetesTest(unittest.TestCase):
    def setUp(self):
        self.docs = load_k8s()

    def test_every_resource_listed_and_present(self):
        k = self.docs["Kustomization"]
        files = {f.name for f in (DEPLOY / "kubernetes").glob("*.yaml")} - {"kustomization.yaml"}
        self.assertEqual(set(k["resources"]), files)
        for kind in ("Namespace", "DaemonSet", "Service", "ServiceMonitor"):
            self.assertIn(kind, self.docs)

    def test_daemonset_pod(self):
        ds = self.docs["DaemonSet"]
        pod = ds["spec"]["template"]
        self.assertEqual(ds["spec"]["selector"]["matchLabels"].items() - pod["metadata"]["labels"].items(), set())
        spec = pod["spec"]
        self.assertIn("nvidia.com/gpu.present", spec["nodeSelector"])
        self.assertIn("nvidia.com/gpu", [t["key"] for t in spec["tolerations"]])
        self.assertIs(spec["hostPID"], True)
        self.assertIs(spec.get("hostNetwork", False), False)
        self.assertIs(spec["automountServiceAccountToken"], False)
        (c,) = spec["containers"]
        sc = c["securityContext"]
        self.assertIs(sc["readOnlyRootFilesystem"], True)
        self.assertIs(sc["allowPrivilegeEscalation"], False)
        self.assertEqual(sc["capabilities"]["drop"], ["ALL"])
        self.assertTrue(c["resources"]["limits"]["cpu"] and c["resources"]["limits"]["memory"])
        self.assertNotIn("nvidia.com/gpu", c["resources"]["limits"])  # takes no GPU from the jobs
        self.assertEqual(c["args"][:3], ["serve", "--listen", "$(POD_IP):9401"])
        for m in c["volumeMounts"]:
            if m["name"] == "store":
                self.assertIs(m["readOnly"], True)

    def test_service_and_monitor_find_the_pods(self):
        pod_labels = self.docs["DaemonSet"]["spec"]["template"]["metadata"]["labels"]
        svc = self.docs["Service"]
        self.assertEqual(svc["metadata"]["name"], "gpudoc")  # job="gpudoc" in the alerting rules
        self.assertEqual(svc["spec"]["selector"].items() - pod_labels.items(), set())
        ports = {p["name"] for p in svc["spec"]["ports"]}
        container_ports = {p["name"] for p in self.docs["DaemonSet"]["spec"]["template"]["spec"]["containers"][0]["ports"]}
        self.assertLessEqual({p["targetPort"] for p in svc["spec"]["ports"]}, container_ports)
        sm = self.docs["ServiceMonitor"]
        self.assertEqual(sm["spec"]["selector"]["matchLabels"].items() - svc["metadata"]["labels"].items(), set())
        self.assertLessEqual({e["port"] for e in sm["spec"]["endpoints"]}, ports)


class SlurmGateTest(unittest.TestCase):
    """prolog.sh and epilog.sh against a fake `gpudoc health --gate` and a fake scontrol."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        t = pathlib.Path(self.tmp.name)
        self.calls = t / "scontrol.calls"
        self.gpudoc = t / "gpudoc"
        self.gpudoc.write_text('#!/bin/bash\n[[ "$*" == "health --gate" ]] || exit 2\n'
                               'printf "%b" "${FAKE_OUT:-}"\nsleep "${FAKE_SLEEP:-0}"\nexit "${FAKE_RC:-0}"\n')
        self.scontrol = t / "scontrol"
        self.scontrol.write_text(f'#!/bin/bash\nfor a in "$@"; do printf "%s\\n" "$a"; done >> {self.calls}\n'
                                 'printf -- "--\\n" >> ' + str(self.calls) + '\nexit "${FAKE_SCONTROL_RC:-0}"\n')
        for f in (self.gpudoc, self.scontrol):
            f.chmod(0o755)

    def tearDown(self):
        self.tmp.cleanup()

    def gate(self, script, **env):
        e = {"SLURMD_NODENAME": "node7", "SLURM_JOB_ID": "42", "GPUDOC_BIN": str(self.gpudoc),
             "SCONTROL_BIN": str(self.scontrol), "GPUDOC_GATE_DEFAULTS": "/nonexistent", "PATH": os.environ["PATH"]}
        e.update(env)
        r = subprocess.run(["bash", str(DEPLOY / "slurm" / script)], env=e, capture_output=True, text=True,
                           timeout=60)
        calls = self.calls.read_text().split("--\n")[:-1] if self.calls.exists() else []
        return r.returncode, [c.splitlines() for c in calls], r.stderr

    def drained(self, reason):
        return [["update", "nodename=node7", "state=drain", f"reason=gpudoc: {reason}"]]

    def test_shellcheck(self):
        r = subprocess.run([need("shellcheck", "shellcheck"), "-x", "prolog.sh", "epilog.sh"],
                           cwd=DEPLOY / "slurm", capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_healthy_node_passes(self):
        for script in ("prolog.sh", "epilog.sh"):
            self.assertEqual(self.gate(script)[:2], (0, []))

    def test_failing_node_drained_with_the_reason(self):
        out = "ecc: 2 uncorrectable errors on GPU 3\\nmore detail\\n"
        rc, calls, err = self.gate("prolog.sh", FAKE_RC="1", FAKE_OUT=out)
        self.assertEqual((rc, calls), (1, self.drained("ecc: 2 uncorrectable errors on GPU 3")))
        self.assertIn("draining node7", err)
        self.calls.unlink()
        rc, calls, _ = self.gate("epilog.sh", FAKE_RC="1", FAKE_OUT=out)
        self.assertEqual((rc, calls), (0, self.drained("ecc: 2 uncorrectable errors on GPU 3")))

    def test_prolog_may_let_the_job_run(self):
        rc, calls, _ = self.gate("prolog.sh", FAKE_RC="1", FAKE_OUT="xid 79 on GPU 0", GPUDOC_GATE_FAIL_JOB="0")
        self.assertEqual((rc, calls), (0, self.drained("xid 79 on GPU 0")))

    def test_failing_without_reason(self):
        rc, calls, _ = self.gate("prolog.sh", FAKE_RC="1")
        self.assertEqual((rc, calls), (1, self.drained("health --gate failed without a reason")))

    def test_hung_gate_drains(self):
        rc, calls, _ = self.gate("prolog.sh", FAKE_SLEEP="30", GPUDOC_GATE_TIMEOUT="1")
        self.assertEqual((rc, calls), (1, self.drained("health --gate did not finish in 1s (a GPU or its driver hangs?)")))

    def test_gpudoc_that_cannot_judge_passes_or_drains(self):
        rc, calls, err = self.gate("prolog.sh", FAKE_RC="3", FAKE_OUT="no NVIDIA driver")
        self.assertEqual((rc, calls), (0, []))
        self.assertIn("could not judge the node (exit 3: no NVIDIA driver); passing", err)
        rc, calls, _ = self.gate("epilog.sh", FAKE_RC="3", GPUDOC_GATE_ON_ERROR="drain")
        self.assertEqual((rc, calls), (0, self.drained("gpudoc health --gate could not judge the node (exit 3)")))
        self.calls.unlink()
        rc, calls, err = self.gate("prolog.sh", GPUDOC_BIN="/nonexistent/gpudoc")
        self.assertEqual((rc, calls), (0, []))
        self.assertIn("/nonexistent/gpudoc cannot be run (exit 127)", err)

    def test_scontrol_failure_fails_the_script(self):
        rc, calls, err = self.gate("epilog.sh", FAKE_RC="1", FAKE_OUT="pcie link x8", FAKE_SCONTROL_RC="1")
        self.assertEqual((rc, calls), (1, self.drained("pcie link x8")))
        self.assertIn("scontrol could not drain node7", err)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
