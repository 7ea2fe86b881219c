#!/usr/bin/env python3
"""End-to-end checks of the chart against the real test cluster (ctest fixture test_cluster):
DryRunServer: every value combination's manifests are accepted by kube-apiserver
  (`kubectl apply --dry-run=server`, all admission and validation, nothing stored), and its
  PodSecurity admission warns of no violation of the `restricted` level by the chart's pods;
KubeSchedulerStarts: the rendered KubeSchedulerConfiguration starts the real kube-scheduler, whose
  strict decoding rejects an unknown field in the same file.
KeptSecrets: rendered against the cluster (helm's lookup reads it), the chart reuses the generated
  admin password and placement key of the release's existing Secrets, as an upgrade does.
MasterRoleLabel: the master's ServiceAccount, which may patch pods in the release's namespace to
  label its own pod with its role, can change nothing else there (the chart's admission policy).
The cluster comes from $PHALANX_TEST_CLUSTER_DIR/env (KUBECONFIG), the binaries from
scripts/build-cluster's cache. Run one class with `cluster_test.py ClassName`."""

import base64
import datetime
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import unittest
import urllib.request
from pathlib import Path

from deploylib import REPO, REQUIRED, Rendered, combinations, run


def cluster_env():
    """The cluster's exported variables: from $PHALANX_TEST_CLUSTER_DIR/env, else the environment."""
    env = {}
    if cluster_dir := os.environ.get("PHALANX_TEST_CLUSTER_DIR"):
        for line in (Path(cluster_dir) / "env").read_text().splitlines():
            if m := re.fullmatch(r"export (\w+)=(.*)", line.strip()):
                env[m[1]] = m[2]
    elif "KUBECONFIG" in os.environ:
        env["KUBECONFIG"] = os.environ["KUBECONFIG"]
    if not env.get("KUBECONFIG"):
        raise AssertionError("no test cluster: set PHALANX_TEST_CLUSTER_DIR or eval \"$(scripts/test-cluster env)\"")
    return dict(os.environ, **env)


def bin_dir():
    """Where scripts/build-cluster caches kube-scheduler and kubectl, keyed by the pinned version."""
    gomod = (REPO / "tests" / "cluster" / "tools" / "k8s" / "go.mod").read_text()
    # As scripts/build-cluster: the line whose first field is the module.
    (version,) = {f[1] for f in map(str.split, gomod.splitlines()) if f[:1] == ["k8s.io/kubernetes"]}
    cache = Path(os.environ.get("PHALANX_CACHE") or Path.home() / ".cache" / "phalanx")
    return cache / f"k8s-{version}" / "bin"


class ClusterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.env = cluster_env()
        cls.kubectl = bin_dir() / "kubectl"
        # Unique per run: the cluster is shared with the other e2e tests of the run.
        cls.prefix = f"phalanx-deploy-{os.getpid()}-{int(time.time()) % 100000}"

    def kubectl_run(self, *args, check=True, stdin=None):
        return run([self.kubectl, *args], check=check, env=self.env, stdin=stdin)


class DryRunServer(ClusterTest):
    def test_every_combination_is_accepted_by_the_api_server(self):
        namespaces = [self.prefix]
        for name, values in combinations(self.prefix).items():
            namespaces += [p["kubernetes_namespace"] for p in values.get("resourcePools", [])
                           if "kubernetes_namespace" in p]
        for ns in dict.fromkeys(namespaces):
            self.kubectl_run("create", "namespace", ns)
            self.addCleanup(self.kubectl_run, "delete", "namespace", ns, "--wait=false", check=False)
            self.kubectl_run("label", "namespace", ns, "pod-security.kubernetes.io/warn=restricted")
        for name, values in combinations(self.prefix).items():
            with self.subTest(name):
                rendered = Rendered(values, release="e2e", namespace=self.prefix)
                with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
                    f.write(rendered.text)
                    f.flush()
                    proc = self.kubectl_run("apply", "--dry-run=server", "-f", f.name)
                accepted = [line for line in proc.stdout.splitlines() if line.endswith("(server dry run)")]
                self.assertEqual(len(accepted), len(rendered.objects), proc.stdout)
                self.assertNotIn("PodSecurity", proc.stderr)



class MasterRoleLabel(ClusterTest):
    def test_the_master_may_set_only_its_own_pods_role(self):
        ns = f"{self.prefix}-role"
        self.kubectl_run("create", "namespace", ns)
        self.addCleanup(self.kubectl_run, "delete", "namespace", ns, "--wait=false", check=False)
        rendered = Rendered(REQUIRED, release="e2e", namespace=ns)
        wanted = {"ServiceAccount", "Role", "RoleBinding", "ValidatingAdmissionPolicy",
                  "ValidatingAdmissionPolicyBinding"}
        objects = [o for o in rendered.objects if o["kind"] in wanted and
                   o["metadata"]["name"].startswith("e2e-phalanx-master")]
        self.kubectl_run("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
        for o in objects:
            if o["metadata"].get("namespace") is None and o["kind"].startswith("ValidatingAdmission"):
                self.addCleanup(self.kubectl_run, "delete", o["kind"], o["metadata"]["name"], check=False)
        for name, component in (("master-x", "master"), ("scheduler-x", "scheduler")):
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "phalanx",
                                                         "app.kubernetes.io/instance": "e2e",
                                                         "app.kubernetes.io/component": component}},
                   "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "real"}]}}
            self.kubectl_run("apply", "-n", ns, "-f", "-", stdin=json.dumps(pod))
        as_master = ["--as", f"system:serviceaccount:{ns}:e2e-phalanx-master", "-n", ns]

        def patch(pod, change):
            return self.kubectl_run("patch", "pod", pod, *as_master, "-p", json.dumps(change), check=False)

        # The policy takes effect within seconds of its creation.
        evil = {"spec": {"containers": [{"name": "c", "image": "evil"}]}}
        deadline = time.monotonic() + 30
        while (proc := patch("scheduler-x", evil)).returncode == 0:
            self.assertLess(time.monotonic(), deadline, "the master replaced the scheduler pod's image")
            patch("scheduler-x", {"spec": {"containers": [{"name": "c", "image": "real"}]}})
            time.sleep(0.5)
        self.assertIn("the master may change only the pods of this release's masters", proc.stderr)
        for change, refusal in (
                (evil, "may not change a master pod's spec"),
                ({"metadata": {"labels": {"app.kubernetes.io/component": "scheduler"}}}, "only its pod's phalanx.io/master-role"),
                ({"metadata": {"labels": {"phalanx.io/master-role": "owner"}}}, "to active or standby"),
                ({"metadata": {"annotations": {"x": "y"}}}, "annotations")):
            proc = patch("master-x", change)
            self.assertNotEqual(proc.returncode, 0, change)
            self.assertIn(refusal, proc.stderr)
        for role in ("standby", "active"):
            proc = patch("master-x", {"metadata": {"labels": {"phalanx.io/master-role": role}}})
            self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertNotEqual(patch("scheduler-x", {"metadata": {"labels": {"phalanx.io/master-role": "active"}}}).returncode, 0,
                            "a scheduler pod labelled active would take the master Service")


class KeptSecrets(ClusterTest):
    def test_upgrade_reuses_the_generated_password_and_placement_key(self):
        ns = f"{self.prefix}-kept"
        self.kubectl_run("create", "namespace", ns)
        self.addCleanup(self.kubectl_run, "delete", "namespace", ns, "--wait=false", check=False)
        # What a first install generated (as it would have), then the upgrade's rendering.
        kept = {"e2e-phalanx-master-auth": ("default-password", "Kept0password0of0the0first0inst"),
                "e2e-phalanx-placement-key": ("placement-key", "K" * 64)}
        fresh = Rendered(REQUIRED, release="e2e", namespace=ns, extra=["--dry-run=server"], env=self.env)
        for name, (key, value) in kept.items():
            self.assertNotEqual(base64.b64decode(fresh.get("Secret", name)["data"][key]).decode(), value)
            # As the first install left it: owned by the release (helm refuses to adopt it otherwise).
            self.kubectl_run("create", "-f", "-", stdin=json.dumps({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": name, "namespace": ns, "labels": {"app.kubernetes.io/managed-by": "Helm"},
                             "annotations": {"meta.helm.sh/release-name": "e2e",
                                             "meta.helm.sh/release-namespace": ns}},
                "data": {key: base64.b64encode(value.encode()).decode()}}))
        upgrade = Rendered(REQUIRED, release="e2e", namespace=ns, extra=["--dry-run=server"], env=self.env)
        for name, (key, value) in kept.items():
            self.assertEqual(base64.b64decode(upgrade.get("Secret", name)["data"][key]).decode(), value, name)
        self.assertEqual(upgrade.config_file("master", "master.yaml")["auth"],
                         {"default_password": kept["e2e-phalanx-master-auth"][1]})
        # Without --dry-run=server, helm template has no cluster: a new random value, never an empty one.
        offline = Rendered(REQUIRED, release="e2e", namespace=ns)
        self.assertRegex(offline.config_file("master", "master.yaml")["auth"]["default_password"], "^[A-Za-z0-9]{32}$")


class KubeSchedulerStarts(ClusterTest):
    def setUp(self):
        self.tmp = Path(self.enterContext(tempfile.TemporaryDirectory()))
        text = Rendered(REQUIRED).config_text("scheduler", "kube-scheduler-config.yaml")
        # Outside a pod there is no in-cluster config: point clientConnection at the cluster, as
        # scripts/test-cluster does with its copy of the same file.
        self.config, count = re.subn(r"^clientConnection:\n",
                                     f"clientConnection:\n  kubeconfig: {self.env['KUBECONFIG']}\n", text, flags=re.M)
        self.assertEqual(count, 1, "the rendered config has no clientConnection block to extend")
        # A lease that a (fictitious) holder keeps for an hour: this kube-scheduler stays a candidate and
        # never schedules, so it cannot disturb the cluster's own phalanx scheduler or other tests.
        self.lease = f"{self.prefix}-{self.id().rsplit('.', 1)[-1]}"[:63].replace("_", "-").rstrip("-")
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        self.kubectl_run("create", "-f", "-", stdin=json.dumps({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": self.lease, "namespace": "kube-system"},
            "spec": {"holderIdentity": "phalanx-deploy-test", "leaseDurationSeconds": 3600,
                     "acquireTime": now, "renewTime": now}}))
        self.addCleanup(self.kubectl_run, "delete", "lease", "-n", "kube-system", self.lease, check=False)

    def start(self, config_text):
        """Starts kube-scheduler on config_text; returns the process, its secure port and log path."""
        config = self.tmp / f"config-{len(list(self.tmp.iterdir()))}.yaml"
        config.write_text(config_text)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        log = config.with_suffix(".log")
        with log.open("w") as out:
            proc = subprocess.Popen(
                [bin_dir() / "kube-scheduler", f"--config={config}", "--bind-address=127.0.0.1",
                 f"--secure-port={port}", f"--cert-dir={self.tmp / 'certs'}",
                 f"--authentication-kubeconfig={self.env['KUBECONFIG']}",
                 f"--authorization-kubeconfig={self.env['KUBECONFIG']}",
                 f"--leader-elect-resource-name={self.lease}", "--v=2"],
                stdout=out, stderr=subprocess.STDOUT, env=self.env)
        self.addCleanup(self.stop, proc)
        return proc, port, log

    @staticmethod
    def stop(proc):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def test_rendered_config_runs(self):
        proc, port, log = self.start(self.config)
        insecure = ssl.create_default_context()
        insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
        deadline, ready = time.monotonic() + 90, None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=insecure, timeout=2) as r:
                    ready = r.read().decode()
                    break
            except OSError:
                time.sleep(0.5)
        self.assertIsNone(proc.poll(), f"kube-scheduler exited:\n{log.read_text()[-4000:]}")
        self.assertEqual(ready, "ok", log.read_text()[-4000:])
        # It runs our profile and extender, and waits for the held lease: it is not the leader.
        waiting = re.compile(rf'(?i)attempting to acquire leader lease.*kube-system/{re.escape(self.lease)}\b')
        deadline = time.monotonic() + 30
        while not waiting.search(log.read_text()):
            self.assertLess(time.monotonic(), deadline, log.read_text()[-4000:])
            time.sleep(0.5)
        logged = log.read_text()
        self.assertRegex(logged, r'Creating extender.*"URLPrefix":"http://127\.0\.0\.1:8888/"')
        self.assertIn("schedulerName: phalanx", logged)
        self.assertNotRegex(logged, "(?i)successfully acquired lease")

    def test_strict_decoding_rejects_an_unknown_field(self):
        proc, _, log = self.start(self.config + "notAField: true\n")
        self.assertNotEqual(proc.wait(60), 0)
        logged = log.read_text()
        self.assertRegex(logged, r"strict decoding error.*notAField", logged[-4000:])


if __name__ == "__main__":
    unittest.main()
