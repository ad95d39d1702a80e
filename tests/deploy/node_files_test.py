"""deploy/systemd, deploy/kubernetes, deploy/slurm checked offline:
- the systemd unit passes `systemd-analyze verify` with no complaint, keeps its hardening
  (DynamicUser, ProtectSystem=strict, NoNewPrivileges, loopback listen, restart on failure) and an
  exposure of at most 2.5 in `systemd-analyze security --offline`;
- the Kubernetes manifests parse (PyYAML), the DaemonSet's selector, Service and ServiceMonitor
  find each other, and the pod keeps its GPU-node placement, hostPID, read-only root and limits;
- the Slurm prolog and epilog pass shellcheck and, run against a fake gpudoc and a fake scontrol,
  pass a healthy node, drain a failing one with the gate's reason, drain on a hung gate, drain
  (fail closed; or pass, when asked) when gpudoc cannot check the node, and keep each result in
  the shared store.
Tools: systemd-analyze (systemd), shellcheck, PyYAML (python3-yaml): scripts/setup.sh.

    python3 tests/deploy/node_files_test.py SOURCE_DIR [GPUDOC_BINARY]
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
# The built gpudoc (optional): the prolog is also run against it where no NVIDIA driver is loaded.
GPUDOC = sys.argv[2] if len(sys.argv) > 2 else None


def need(tool, package):
    p = shutil.which(tool)
    if p is None:
        raise AssertionError(f"{tool} not found: apt-get install {package} (scripts/setup.sh)")
    return p


UNITS = [UNIT, DEPLOY / "systemd/gpudoc-health.service", DEPLOY / "systemd/gpudoc-health.timer"]
# The one store: serve exports what the health timer, the Slurm prolog and the Kubernetes health
# container write there.
STORE = "/var/lib/gpudoc/gpudoc.db"


def unit_settings(unit=UNIT):
    settings = {}
    for line in unit.read_text(encoding="utf-8").splitlines():
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
        self.units = []
        for unit in UNITS:
            self.units.append(tmp / unit.name)
            self.units[-1].write_text(unit.read_text(encoding="utf-8").replace("/usr/bin/gpudoc", str(stub)))

    def tearDown(self):
        self.tmp.cleanup()

    def test_verify_is_silent(self):
        r = subprocess.run([need("systemd-analyze", "systemd"), "verify", *map(str, self.units)],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual((r.returncode, r.stdout + r.stderr), (0, ""))

    def test_exposure(self):
        for unit in self.units:
            if unit.suffix != ".service":
                continue
            r = subprocess.run([need("systemd-analyze", "systemd"), "security", "--offline=yes", "--threshold=25",
                                "--no-pager", unit.name], cwd=self.tmp.name, capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(r.returncode, 0, unit.name + ": " + r.stdout[-600:] + r.stderr)

    def test_hardening_and_defaults(self):
        s = unit_settings()
        for key, value in [("DynamicUser", "yes"), ("ProtectSystem", "strict"), ("NoNewPrivileges", "yes"),
                           ("Restart", "on-failure"), ("CapabilityBoundingSet", "")]:
            self.assertEqual(s.get(key), [value], key)
        self.assertIn("GPUDOC_SERVE_LISTEN=127.0.0.1:9401", s["Environment"])
        self.assertIn("--listen ${GPUDOC_SERVE_LISTEN}", s["ExecStart"][0])
        self.assertNotIn("PrivateDevices", s)  # it would hide /dev/nvidia*
        # serve only reads the store; a StateDirectory would hand it to serve's transient user.
        self.assertNotIn("StateDirectory", s)

    def test_health_timer_writes_the_store_serve_reads(self):
        serve, health, timer = (unit_settings(u) for u in UNITS)
        self.assertIn(f"GPUDOC_STORE={STORE}", serve["Environment"])
        self.assertIn(f"GPUDOC_STORE={STORE}", health["Environment"])
        self.assertEqual(health["ExecStart"], ["/usr/bin/gpudoc health --gate --store ${GPUDOC_STORE} $GPUDOC_HEALTH_ARGS"])
        for key, value in [("Type", "oneshot"), ("StateDirectory", "gpudoc"), ("UMask", "0022"),
                           ("ProtectSystem", "strict"), ("NoNewPrivileges", "yes"),
                           ("CapabilityBoundingSet", "CAP_SYSLOG")]:
            self.assertEqual(health.get(key), [value], key)
        self.assertNotIn("User", health)  # root, as the Slurm prolog: one owner for the store
        self.assertNotIn("PrivateDevices", health)
        self.assertEqual(timer["OnUnitInactiveSec"], ["15min"])
        self.assertEqual(timer["WantedBy"], ["timers.target"])
        self.assertNotIn("Unit", timer)  # gpudoc-health.timer starts gpudoc-health.service


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
        containers = {c["name"]: c for c in spec["containers"]}
        self.assertEqual(set(containers), {"gpudoc", "health"})
        c = containers["gpudoc"]
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
        for probe in ("readinessProbe", "livenessProbe"):  # the sampler alive, not just the socket open
            self.assertEqual(c[probe]["httpGet"], {"path": "/healthz", "port": "metrics"}, probe)
            self.assertNotIn("tcpSocket", c[probe])
        self.assertIn("# runtimeClassName: nvidia", (DEPLOY / "kubernetes/daemonset.yaml").read_text(encoding="utf-8"))

    def test_serve_reads_the_kubelet_pod_resources(self):
        # --kubernetes-pod-resources on the kubelet's socket, mounted read-only; uid 0 (the socket is
        # root's, only its owner may connect) with no capability, as the health container.
        spec = self.docs["DaemonSet"]["spec"]["template"]["spec"]
        serve = {c["name"]: c for c in spec["containers"]}["gpudoc"]
        self.assertIn("--kubernetes-pod-resources", serve["args"])
        (volume,) = [v for v in spec["volumes"] if v["name"] == "pod-resources"]
        self.assertEqual(volume["hostPath"]["path"], "/var/lib/kubelet/pod-resources")
        (mount,) = [m for m in serve["volumeMounts"] if m["name"] == "pod-resources"]
        self.assertEqual(mount["mountPath"], "/var/lib/kubelet/pod-resources")  # the flag's default socket's folder
        self.assertIs(mount["readOnly"], True)
        sc = serve["securityContext"]
        self.assertEqual((sc["runAsUser"], sc["runAsNonRoot"]), (0, False))
        self.assertEqual(sc["capabilities"]["drop"], ["ALL"])
        self.assertNotIn("add", sc["capabilities"])

    def test_health_container_writes_the_store_serve_reads(self):
        spec = self.docs["DaemonSet"]["spec"]["template"]["spec"]
        containers = {c["name"]: c for c in spec["containers"]}
        serve, health = containers["gpudoc"], containers["health"]
        env = {e["name"]: e.get("value") for e in health["env"]}
        self.assertEqual(env["GPUDOC_STORE"], STORE)
        self.assertEqual({e["name"]: e.get("value") for e in serve["env"]}["GPUDOC_STORE"], STORE)
        self.assertGreaterEqual(int(env["GPUDOC_HEALTH_EVERY"]), 60)
        self.assertEqual(health["image"], serve["image"])
        script = " ".join(health["args"])
        self.assertIn('gpudoc health --gate --store "$GPUDOC_STORE"', script)
        self.assertIn("trap 'exit 0' TERM", script)  # stops at once, not after the grace period
        self.assertIn("umask 022;", script)  # the store readable by serve's uid 65534
        (volume,) = [v for v in spec["volumes"] if v["name"] == "store"]
        self.assertEqual(volume["hostPath"]["path"], str(pathlib.PurePath(STORE).parent))
        (mount,) = [m for m in health["volumeMounts"] if m["name"] == "store"]
        self.assertEqual(mount["mountPath"], volume["hostPath"]["path"])
        self.assertIs(mount.get("readOnly", False), False)
        sc = health["securityContext"]
        self.assertEqual((sc["runAsUser"], sc["runAsNonRoot"]), (0, False))  # the store's owner, as under systemd
        self.assertEqual(sc["capabilities"]["drop"], ["ALL"])
        self.assertIs(sc["readOnlyRootFilesystem"], True)
        self.assertIs(sc["allowPrivilegeEscalation"], False)
        self.assertTrue(health["resources"]["limits"]["cpu"] and health["resources"]["limits"]["memory"])
        self.assertNotIn("nvidia.com/gpu", health["resources"]["limits"])

    def test_service_and_monitor_find_the_pods(self):
        pod_labels = self.docs["DaemonSet"]["spec"]["template"]["metadata"]["labels"]
        svc = self.docs["Service"]
        self.assertEqual(svc["metadata"]["name"], "gpudoc")  # job="gpudoc" in the alerting rules
        self.assertEqual(svc["spec"]["selector"].items() - pod_labels.items(), set())
        ports = {p["name"] for p in svc["spec"]["ports"]}
        container_ports = {p["name"] for c in self.docs["DaemonSet"]["spec"]["template"]["spec"]["containers"]
                           for p in c.get("ports", [])}
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
        self.store_seen = t / "store.seen"
        self.gpudoc.write_text('#!/bin/bash\n[[ "$1 $2 $3" == "health --gate --store" && $# == 4 ]] || exit 2\n'
                               f'printf "%s %s\\n" "$4" "$(umask)" > {self.store_seen}\n'
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

    def test_results_kept_in_the_shared_store(self):
        # Kept readable for serve (umask 022) even under a stricter umask of slurmd's.
        old = os.umask(0o077)
        try:
            self.assertEqual(self.gate("prolog.sh")[:2], (0, []))
        finally:
            os.umask(old)
        self.assertEqual(self.store_seen.read_text(), "/var/lib/gpudoc/gpudoc.db 0022\n")
        self.assertEqual(self.gate("epilog.sh", GPUDOC_STORE="/srv/gpudoc.db")[:2], (0, []))
        self.assertEqual(self.store_seen.read_text(), "/srv/gpudoc.db 0022\n")

    def test_fails_closed_when_gpudoc_cannot_check(self):
        nvml = "cannot check this node: cannot load the NVIDIA management library (NVML)\\n"
        rc, calls, err = self.gate("prolog.sh", FAKE_RC="3", FAKE_OUT=nvml)
        self.assertEqual((rc, calls), (1, self.drained("cannot check this node: cannot load the NVIDIA management library (NVML)")))
        self.calls.unlink()
        # Another first line (a gpudoc that printed its table) is kept after the exit's meaning.
        rc, calls, err = self.gate("prolog.sh", FAKE_RC="3", FAKE_OUT="No GPU checks: no NVML\\n\\nCHECK  GPU\\n")
        self.assertEqual((rc, calls), (1, self.drained("cannot check the node (exit 3, no GPU readable): No GPU checks: no NVML")))
        self.assertIn("draining node7", err)
        self.calls.unlink()
        rc, calls, _ = self.gate("epilog.sh", FAKE_RC="3")
        self.assertEqual((rc, calls), (0, self.drained("cannot check the node (exit 3, no GPU readable)")))
        self.calls.unlink()
        rc, calls, _ = self.gate("prolog.sh", GPUDOC_BIN="/nonexistent/gpudoc")
        self.assertEqual((rc, calls),
                         (1, self.drained("cannot check the node: /nonexistent/gpudoc is not installed or not executable")))
        self.calls.unlink()
        rc, calls, _ = self.gate("prolog.sh", FAKE_RC="4", FAKE_OUT="internal error")
        self.assertEqual((rc, calls), (1, self.drained("cannot check the node: health --gate exited 4: internal error")))
        self.calls.unlink()
        self.gpudoc.chmod(0o644)
        rc, calls, _ = self.gate("prolog.sh")
        self.assertEqual(rc, 1)
        self.assertIn("is not installed or not executable", calls[0][3])

    def test_prolog_default_store_is_the_shared_one(self):
        self.assertIn(f"store=${{GPUDOC_STORE:-{STORE}}}", (DEPLOY / "slurm/prolog.sh").read_text(encoding="utf-8"))

    def test_real_gpudoc_without_a_driver_drains(self):
        if GPUDOC is None:
            self.skipTest("no gpudoc binary given")
        store = pathlib.Path(self.tmp.name) / "store" / "gpudoc.db"
        probe = subprocess.run([GPUDOC, "health", "--gate", "--no-store"], capture_output=True, text=True, timeout=60)
        if probe.returncode != 3:
            self.skipTest(f"this machine's GPUs can be read (health --gate exited {probe.returncode})")
        rc, calls, _ = self.gate("prolog.sh", GPUDOC_BIN=GPUDOC, GPUDOC_STORE=str(store))
        self.assertEqual(rc, 1)
        (call,) = calls
        self.assertEqual(call[:3], ["update", "nodename=node7", "state=drain"])
        self.assertTrue(call[3].startswith("reason=gpudoc: cannot check "), call)
        self.assertIn("NVML", call[3])
        self.assertLessEqual(len(call[3]), len("reason=") + 250)

    def test_may_pass_when_gpudoc_cannot_check(self):
        rc, calls, err = self.gate("prolog.sh", FAKE_RC="3", FAKE_OUT="no NVIDIA driver", GPUDOC_GATE_ON_ERROR="pass")
        self.assertEqual((rc, calls), (0, []))
        self.assertIn("cannot check the node (exit 3, no GPU readable): no NVIDIA driver; passing", err)

    def test_scontrol_failure_fails_the_script(self):
        rc, calls, err = self.gate("epilog.sh", FAKE_RC="1", FAKE_OUT="pcie link x8", FAKE_SCONTROL_RC="1")
        self.assertEqual((rc, calls), (1, self.drained("pcie link x8")))
        self.assertIn("scontrol could not drain node7", err)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
