"""Shared helpers of the deploy tests: helm and kubectl from scripts/install-helm, rendering the chart
with given values, and reading YAML through the real kubectl (Python's standard library has no YAML
parser): `kubectl label --local ... <absent-label>- -o json` decodes manifests offline and prints them
as JSON, changing nothing."""

import functools
import json
import os
import subprocess
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "deploy" / "helm" / "phalanx"
SCHEDULER_CONFIG = REPO / "deploy" / "scheduler" / "kube-scheduler-config.yaml"
# The smallest values an install needs: maxSlotsPerPod is required.
REQUIRED = {"maxSlotsPerPod": 8}


def phalanx_binaries():
    """{name: path} of the built binaries in $PHALANX_BINARIES (paths separated by ';', set by
    ctest); fails when it is unset or a binary is missing."""
    value = os.environ.get("PHALANX_BINARIES", "")
    binaries = [path for path in value.split(";") if path]
    if not binaries:
        raise AssertionError("PHALANX_BINARIES is not set: give the paths of phalanx-master and "
                             "phalanx-extender, separated by ';' (ctest sets it)")
    for binary in binaries:
        if not os.path.isfile(binary):
            raise AssertionError(f"{binary} does not exist: build it first (ninja -C build)")
    return {Path(binary).name: binary for binary in binaries}


def run(cmd, check=True, env=None, stdin=None):
    """Runs cmd, capturing text output; with check, a failure raises with both streams shown."""
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, input=stdin)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} exited {proc.returncode}\n"
                             f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


@functools.cache
def helm():
    return Path(run([REPO / "scripts" / "install-helm"]).stdout.strip())


def layer_kubectl():
    """The kubectl shipped next to helm (for offline YAML decoding; e2e tests use the cluster's)."""
    return helm().parent.parent / "kubectl" / "kubectl"


def helm_run(*args, values=None, check=True, env=None):
    """Runs helm with values (a dict, written as a JSON values file: JSON is YAML) added via -f."""
    with tempfile.TemporaryDirectory() as tmp:
        extra = []
        if values is not None:
            path = Path(tmp) / "values.json"
            path.write_text(json.dumps(values))
            extra = ["-f", path]
        return run([helm(), *args, *extra], check=check, env=env)


def render(values, release="t", namespace="phalanx-test", extra=(), env=None):
    """`helm template` of the chart; returns the manifest text. env: helm's environment (a KUBECONFIG
    for --dry-run=server, whose lookups read the cluster)."""
    return helm_run("template", release, CHART, "--namespace", namespace, *extra, values=values, env=env).stdout


def decode_stream(text):
    """Parses a stream of concatenated JSON documents."""
    decoder, docs, pos = json.JSONDecoder(), [], 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            return docs
        doc, pos = decoder.raw_decode(text, pos)
        docs.append(doc)


def kube_objects(manifests):
    """The Kubernetes objects of a multi-document YAML text, as dicts."""
    env = dict(os.environ, KUBECONFIG=os.devnull)
    out = run([layer_kubectl(), "label", "--local", "-f", "-", "phalanx.test/absent-", "-o", "json"],
              env=env, stdin=manifests).stdout
    docs = []
    for doc in decode_stream(out):
        docs.extend(doc["items"] if doc.get("kind") == "List" else [doc])
    return docs


def parse_yaml(text):
    """One YAML document (any shape) as a dict: wrapped as the body of an object kubectl can decode."""
    wrapper = "apiVersion: phalanx.test/v1\nkind: Document\nbody:\n" + textwrap.indent(text, "  ")
    (doc,) = kube_objects(wrapper)
    return doc["body"]


class Rendered:
    """A rendered chart: its objects by kind and name, and the config files inside its Secret and
    ConfigMaps."""

    def __init__(self, values, release="t", namespace="phalanx-test", extra=(), env=None):
        self.release, self.namespace = release, namespace
        self.text = render(values, release, namespace, extra, env)
        self.objects = kube_objects(self.text)
        self.fullname = release if "phalanx" in release else f"{release}-phalanx"

    def all(self, kind):
        return [o for o in self.objects if o["kind"] == kind]

    def find(self, kind, name, namespace=None):
        """The object of that kind and name (and namespace, when given), or None."""
        for o in self.all(kind):
            meta = o["metadata"]
            if meta["name"] == name and namespace in (None, meta.get("namespace")):
                return o
        return None

    def get(self, kind, name, namespace=None):
        obj = self.find(kind, name, namespace)
        if obj is None:
            have = sorted(f"{o['kind']}/{o['metadata']['name']}" for o in self.objects)
            raise AssertionError(f"no {kind}/{name} rendered; have {have}")
        return obj

    def config_file(self, component, key):
        """A file of component's config (master: master.yaml; scheduler: extender.yaml, ...), parsed."""
        return parse_yaml(self.config_text(component, key))

    def config_text(self, component, key):
        return self.config_object(component)[key]

    def config_object(self, component):
        """The files of component's config: the master's Secret (stringData), else its ConfigMap
        (data); None when the chart renders neither."""
        name = f"{self.fullname}-{component}"
        secret = self.find("Secret", name)
        if secret is not None:
            return secret["stringData"]
        config_map = self.find("ConfigMap", name)
        return None if config_map is None else config_map["data"]

    def container(self, component, name):
        pod = self.get("Deployment", f"{self.fullname}-{component}")["spec"]["template"]["spec"]
        (c,) = [c for c in pod["containers"] if c["name"] == name]
        return c


def combinations(prefix="phalanx-test"):
    """The value sets every chart test and e2e test covers, by name; pool namespaces start with prefix."""
    return {
        "defaults": dict(REQUIRED),
        "external-db": {**REQUIRED, "db": {"hostAddress": "pg.example.internal", "port": 6432, "name": "phx",
                                           "user": "phx_user", "password": "s3cret", "sslmode": "require"}},
        "nodeport-tls": {**REQUIRED, "useNodePortForMaster": True, "tlsSecret": "phalanx-tls"},
        "cpu-slots": {"maxSlotsPerPod": 2, "slotType": "cpu", "slotResourceRequests": {"cpu": 7.5}},
        "two-pools": {**REQUIRED, "extenderSettings": {"refused_placement_timeout_ms": 60000},
                      "taskContainerDefaults": {"glooPortRange": "20000-20999"}, "resourcePools": [
            {"pool_name": "a100", "kubernetes_namespace": f"{prefix}-a100", "max_slots_per_pod": 4,
             "task_container_defaults": {"gpu_pod_spec": {"spec": {"nodeSelector": {"gpu": "a100"}}},
                                         "nccl_port_range": "31000:31999"}},
            {"pool_name": "t4", "kubernetes_namespace": f"{prefix}-t4"},
        ]},
        # Every security setting away from its default.
        "hardened": {**REQUIRED, "masterServiceType": "LoadBalancer", "defaultPassword": "admin-pw",
                     "networkPolicy": {
                         "masterApiFrom": [{"ipBlock": {"cidr": "10.0.0.0/8"}},
                                           {"namespaceSelector": {"matchLabels": {"team": "ml"}}}],
                         "metricsFrom": [{"namespaceSelector": {"matchLabels": {
                             "kubernetes.io/metadata.name": "monitoring"}}}]},
                     "checkpointStorage": {"type": "s3", "bucket": "ckpt", "accessKey": "AK", "secretKey": "SK"},
                     "podSpecPolicy": {"allow_run_as_root": False, "allowed_host_paths": ["/data"]},
                     "quotas": {"max_active_experiments_per_user": 5, "max_active_trials_per_user": 50,
                                "max_queued_pods_per_user": 200},
                     "resourcePools": [{"pool_name": "default", "podSpecPolicy": {
                         "allow_host_namespaces": True, "allowed_capabilities": ["IPC_LOCK"]}}]},
    }
