"""Fixtures of the SDK's tests: the test cluster's API server (tests/cluster, from
$PHALANX_TEST_CLUSTER_DIR), a fresh database on the test Postgres ($PHALANX_TEST_PG_DIR) and a real
phalanx-master ($PHALANX_MASTER_BINARY) on both, with one resource pool in a namespace of its own.
Its slots are CPUs and its pods go to the default scheduler, which places them on the cluster's kwok
nodes (no extender runs here), so that runs start and can be preempted gracefully. The tests play
the trial process with the environment of its pod, as the master wrote it."""
import json
import os
import re
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

import phalanx


def _exported(path):
    out = {}
    for line in Path(path).read_text().splitlines():
        if m := re.fullmatch(r"export (\w+)=(.*)", line.strip()):
            out[m[1]] = m[2]
    return out


class Kube:
    """The test cluster's API server, with the token of its kubeconfig (scripts/test-cluster writes
    server, certificate-authority and token)."""

    def __init__(self, kubeconfig):
        text = Path(kubeconfig).read_text()
        self.server = re.search(r"server: (\S+)", text)[1]
        self.token = re.search(r"token: (\S+)", text)[1]
        self.ssl = ssl.create_default_context(cafile=re.search(r"certificate-authority: (\S+)", text)[1])

    def request(self, method, path, body=None, content_type="application/json"):
        req = urllib.request.Request(self.server + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {self.token}",
                                              "Content-Type": content_type})
        try:
            with urllib.request.urlopen(req, context=self.ssl, timeout=30) as r:
                return json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            if e.code == 409 and method == "POST":
                return None  # Exists already.
            raise AssertionError(f"{method} {path}: {e.code} {e.read()[:500]!r}") from e

    def pod_env(self, ns, pod, missing_ok=False):
        """The plain-valued env of the pod's task container (None for no such pod if missing_ok)."""
        if missing_ok and not self.request("GET", f"/api/v1/namespaces/{ns}/pods?fieldSelector=metadata.name%3D{pod}")["items"]:
            return None
        spec = self.request("GET", f"/api/v1/namespaces/{ns}/pods/{pod}")["spec"]
        container = next(c for c in spec["containers"] if c["name"] == "phalanx-container")
        return {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}

    def finish_pods(self, ns, allocation):
        """The run's containers exit (the test cluster's kwok ends them at this annotation)."""
        pods = self.request("GET", f"/api/v1/namespaces/{ns}/pods?labelSelector=phalanx.io/gang%3D{allocation}")
        for pod in pods["items"]:
            self.request("PATCH", f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}",
                         {"metadata": {"annotations": {"phalanx.io/sim-duration": "0"}}},
                         "application/merge-patch+json")

    def mark_preempted(self, ns, pod):
        """What phalanx-extender does to a victim's pods."""
        patch = {"metadata": {"labels": {"phalanx.io/preempt": "requested"},
                              "annotations": {"phalanx.io/preempted-by": f"{ns}/someone-else"}}}
        self.request("PATCH", f"/api/v1/namespaces/{ns}/pods/{pod}", patch,
                     "application/merge-patch+json")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def kube():
    env = _exported(Path(os.environ["PHALANX_TEST_CLUSTER_DIR"]) / "env")
    return Kube(env["KUBECONFIG"])


@pytest.fixture(scope="session")
def master(kube, tmp_path_factory):
    """(address, namespace, log path) of a phalanx-master on a fresh database."""
    url = _exported(Path(os.environ["PHALANX_TEST_PG_DIR"]) / "env")["PHALANX_TEST_PG_URL"]
    db = f"sdk_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    subprocess.run(["psql", url, "-qc", f"CREATE DATABASE {db}"], check=True)
    m = re.fullmatch(r"postgresql://([^@]+)@([^:]+):(\d+)/.*", url)
    ns = f"sdk-{uuid.uuid4().hex[:8]}"
    kube.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    for name, value in (("phalanx-high-priority", 100), ("phalanx-medium-priority", 50),
                        ("phalanx-low-priority", 1)):
        kube.request("POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
                     {"metadata": {"name": name}, "value": value, "preemptionPolicy": "Never"})
    address = f"127.0.0.1:{_free_port()}"
    tmp = tmp_path_factory.mktemp("master")
    config = tmp / "master.yaml"
    config.write_text(
        f"db: {{user: {m[1]}, host: {m[2]}, port: {m[3]}, name: {db}}}\n"
        "max_slots_per_pod: 8\nslot_type: cpu\nslot_resource_requests: {cpu: 1}\n"
        "default_scheduler: default\nauth: {default_password: sdk}\n"
        f"task_master_address: {address}\n"
        f"resource_pools: [{{pool_name: gpu, kubernetes_namespace: {ns}}}]\n")
    log = tmp / "master.log"
    proc = subprocess.Popen([os.environ["PHALANX_MASTER_BINARY"], "--config", str(config), "--listen",
                             address, "--metrics-listen", "127.0.0.1:0"],
                            stdout=log.open("w"), stderr=subprocess.STDOUT,
                            env={**os.environ, "KUBECONFIG": _exported(
                                Path(os.environ["PHALANX_TEST_CLUSTER_DIR"]) / "env")["KUBECONFIG"]})
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, f"phalanx-master exited:\n{log.read_text()[-3000:]}"
        try:
            phalanx.Client(address).login("admin", "sdk")
            break
        except Exception:
            assert time.monotonic() < deadline, f"no login within 60 s:\n{log.read_text()[-3000:]}"
            time.sleep(0.2)
    yield address, ns, log
    proc.terminate()
    proc.wait(timeout=30)
    kube.request("DELETE", f"/api/v1/namespaces/{ns}")


@pytest.fixture
def client(master):
    c = phalanx.Client(master[0])
    c.login("admin", "sdk")
    return c
