#!/usr/bin/env python3
"""Checks the Helm chart deploy/helm/phalanx with the real helm: `helm lint --strict` and
`helm template` for the default values and the combinations of deploylib.combinations(), asserting on
the rendered objects and on the master.yaml / extender.yaml / KubeSchedulerConfiguration they carry.
Here: lint, the rendered configs against the real binaries, the defaults, the required values, the
policy values reaching master.yaml, and the values the other chart tests import from here
(chart_values_test.py: each value combination; chart_security_test.py: RBAC, secrets, security
contexts, network policies). Run one class with `chart_test.py ClassName` (ctest registers one test
per class of each file)."""

import json
import re
import tempfile
import unittest
from pathlib import Path

from deploylib import CHART, REQUIRED, Rendered, combinations, helm_run, phalanx_binaries, run

COMBINATIONS = combinations()
POD_SPEC_POLICY = {
    "allow_privileged": False, "allow_privilege_escalation": False, "allowed_capabilities": [],
    "allow_host_namespaces": False, "allow_host_ports": False, "allowed_host_paths": [],
    "allowed_service_accounts": [], "allowed_secrets": [], "allow_automount_service_account_token": False,
    "allow_run_as_root": True,
    "allowed_volume_types": ["configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                             "projected", "secret"],
    "host_paths_read_only": True, "allow_unconfined_profiles": False, "allow_custom_selinux": False,
    "allowed_sysctls": [],
    "allowed_shared_fs_host_paths": []}
# The values the chart generates afresh under `helm template` (no cluster to look up the kept ones).
GENERATED = re.compile(r"((?:default-password|placement-key): |default_password: |checksum/config: )\S+")


def mask_generated(text):
    return GENERATED.sub(r"\1<generated>", text)
PRIORITY_CLASSES = {"phalanx-system-priority": 1000000, "phalanx-high-priority": 100,
                    "phalanx-medium-priority": 50, "phalanx-low-priority": 1}


def pod_specs(r):
    """(name, pod spec) of every Deployment the chart renders."""
    return [(d["metadata"]["name"], d["spec"]["template"]["spec"]) for d in r.all("Deployment")]


class Lint(unittest.TestCase):
    def test_lint_strict_passes_for_every_combination(self):
        for name, values in COMBINATIONS.items():
            with self.subTest(name):
                out = helm_run("lint", "--strict", CHART, values=values).stdout
                self.assertIn("0 chart(s) failed", out)


class RenderedConfigsLoad(unittest.TestCase):
    """The master.yaml and extender.yaml the chart renders, for every combination, pass the real
    binaries' --check-config."""

    def test_every_combination(self):
        binaries = phalanx_binaries()
        checked = 0
        for name, values in COMBINATIONS.items():
            r = Rendered(values)
            for component, key, binary in (("master", "master.yaml", "phalanx-master"),
                                           ("scheduler", "extender.yaml", "phalanx-extender")):
                if r.config_object(component) is None:
                    continue  # defaultScheduler: default deploys no scheduler.
                with self.subTest(f"{name}: {key}"), tempfile.TemporaryDirectory() as d:
                    path = Path(d) / key
                    path.write_text(r.config_text(component, key))
                    run([binaries[binary], "--config", path, "--check-config"])
                    checked += 1
        self.assertGreater(checked, len(COMBINATIONS))


class Defaults(unittest.TestCase):
    """Chart defaults plus the one required value."""

    @classmethod
    def setUpClass(cls):
        cls.r = Rendered(REQUIRED)

    def test_what_gets_installed(self):
        r, n = self.r, self.r.fullname
        for kind, name in [("Deployment", f"{n}-master"), ("Secret", f"{n}-master"),
                           ("Service", f"{n}-master"), ("ServiceAccount", f"{n}-master"),
                           ("Deployment", f"{n}-db"), ("PersistentVolumeClaim", f"{n}-db"),
                           ("Service", f"{n}-db"), ("Deployment", f"{n}-scheduler"),
                           ("ConfigMap", f"{n}-scheduler"), ("ServiceAccount", f"{n}-scheduler")]:
            r.get(kind, name)
        self.assertEqual(r.get("Service", f"{n}-master")["spec"]["type"], "ClusterIP")
        self.assertEqual(r.get("PersistentVolumeClaim", f"{n}-db")["spec"]["resources"]["requests"]["storage"],
                         "30Gi")

    def test_master_yaml(self):
        m = self.r.config_file("master", "master.yaml")
        self.assertEqual(m["port"], 8080)
        self.assertEqual(m["task_master_address"],
                         f"{self.r.fullname}-master.{self.r.namespace}.svc:8080")
        self.assertEqual(m["db"], {"host": f"{self.r.fullname}-db", "port": 5432, "name": "phalanx",
                                   "user": "postgres", "password": "postgres", "sslmode": "prefer"})
        self.assertEqual(m["max_slots_per_pod"], 8)
        self.assertEqual(m["slot_type"], "gpu")
        self.assertNotIn("slot_resource_requests", m)
        self.assertEqual(m["default_scheduler"], "phalanx")
        self.assertEqual(m["preemption_timeout"], "5m")
        self.assertEqual(m["pod_start_failure_timeout"], "5m")
        self.assertEqual(m["terminating_pod_timeout"], "5m")
        self.assertEqual(m["resource_pools"], [{"pool_name": "default", "kubernetes_namespace": "phalanx-test"}])
        self.assertEqual(m["checkpoint_storage"], {"type": "shared_fs", "host_path": "/tmp/checkpoints"})
        self.assertEqual(m["pod_spec_policy"], POD_SPEC_POLICY)
        self.assertEqual(m["quotas"], {"max_active_experiments_per_user": 0, "max_active_trials_per_user": 0,
                                       "max_queued_pods_per_user": 0})
        self.assertEqual(set(m["auth"]), {"default_password"})
        for absent in ("tls", "task_container_defaults"):
            self.assertNotIn(absent, m)

    def test_master_may_start_for_as_long_as_it_waits_for_the_database(self):
        # master/main.cc waits up to 5 minutes for Postgres before /healthz answers.
        c = self.r.container("master", "phalanx-master")
        startup = c["startupProbe"]
        self.assertEqual(startup["httpGet"], c["livenessProbe"]["httpGet"])
        self.assertGreater(startup["periodSeconds"] * startup["failureThreshold"], 300)

    def test_extender_status_is_reachable_by_prometheus_and_probes(self):
        c = self.r.container("scheduler", "phalanx-extender")
        self.assertEqual(c["ports"], [{"name": "status", "containerPort": 9091}])
        self.assertEqual(c["livenessProbe"]["httpGet"], {"path": "/healthz", "port": "status"})
        self.assertEqual(c["readinessProbe"]["httpGet"], {"path": "/readyz", "port": "status"})
        meta = self.r.get("Deployment", f"{self.r.fullname}-scheduler")["spec"]["template"]["metadata"]
        self.assertEqual(meta["annotations"]["prometheus.io/port"], "9091")

    def test_extender_yaml(self):
        self.assertEqual(self.r.config_file("scheduler", "extender.yaml"),
                         {"listen": "127.0.0.1:8888", "status_listen": "0.0.0.0:9091", "slot_type": "gpu", "slot_resource": "nvidia.com/gpu",
                          "max_slots_per_pod": 8, "follow_lease": "kube-system/phalanx-scheduler"})

    def test_passwords_are_only_in_the_secret(self):
        r = Rendered({**REQUIRED, "db": {"password": "s3cret-db"}, "defaultPassword": "s3cret-pw"})
        for o in r.objects:
            if o["kind"] != "Secret":
                self.assertNotIn("s3cret", json.dumps(o), f"{o['kind']}/{o['metadata']['name']}")
        env = {e["name"]: e for e in r.container("db", "postgres")["env"]}
        self.assertEqual(env["POSTGRES_PASSWORD"]["valueFrom"]["secretKeyRef"],
                         {"name": f"{r.fullname}-master", "key": "db-password"})
        self.assertEqual(r.get("Secret", f"{r.fullname}-master")["stringData"]["db-password"], "s3cret-db")
        self.assertEqual(r.config_file("master", "master.yaml")["db"]["password"], "s3cret-db")

    def test_master_pod_reads_its_config_from_the_secret(self):
        master = self.r.get("Deployment", f"{self.r.fullname}-master")["spec"]["template"]["spec"]
        c = self.r.container("master", "phalanx-master")
        self.assertEqual(c["image"], "phalanx-master:0.1.0")
        self.assertEqual(c["args"], ["--config", "/etc/phalanx/config/master.yaml"])
        self.assertEqual(c["ports"][0]["containerPort"], 8080)
        mount = next(m for m in c["volumeMounts"] if m["mountPath"] == "/etc/phalanx/config")
        volume = next(v for v in master["volumes"] if v["name"] == mount["name"])
        self.assertEqual(volume["secret"]["secretName"], f"{self.r.fullname}-master")
        self.assertEqual(volume["secret"]["items"], [{"key": "master.yaml", "path": "master.yaml"}])
        self.assertEqual(master["serviceAccountName"], f"{self.r.fullname}-master")
        self.assertEqual(master["priorityClassName"], "phalanx-system-priority")
        self.assertNotIn("imagePullSecrets", master)

    def test_scheduler_pod_runs_kube_scheduler_and_extender_sidecar(self):
        deployment = self.r.get("Deployment", f"{self.r.fullname}-scheduler")
        # Two replicas; only the one whose kube-scheduler leads runs admission rounds.
        self.assertEqual(deployment["spec"]["replicas"], 2)
        self.assertEqual(deployment["spec"]["strategy"],
                         {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}})
        pod = deployment["spec"]["template"]["spec"]
        self.assertEqual([c["name"] for c in pod["containers"]], ["kube-scheduler", "phalanx-extender"])
        ks = self.r.container("scheduler", "kube-scheduler")
        self.assertIn("--config=/etc/phalanx-scheduler/kube-scheduler-config.yaml", ks["command"])
        ext = self.r.container("scheduler", "phalanx-extender")
        self.assertEqual(ext["image"], "phalanx-extender:0.1.0")
        self.assertEqual(ext["args"], ["--config", "/etc/phalanx-scheduler/extender.yaml",
                                       "--placement-key-file", "/etc/phalanx-placement-key/placement-key"])
        self.assertEqual(pod["volumes"][0]["configMap"]["name"], f"{self.r.fullname}-scheduler")
        self.assertEqual(pod["serviceAccountName"], f"{self.r.fullname}-scheduler")

    def test_replicas_spread_and_survive_drains(self):
        for component in ("scheduler", "master"):
            name = f"{self.r.fullname}-{component}"
            pod = self.r.get("Deployment", name)["spec"]["template"]["spec"]
            term = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
            self.assertEqual(term["podAffinityTerm"]["topologyKey"], "kubernetes.io/hostname")
            selector = self.r.get("Deployment", name)["spec"]["selector"]["matchLabels"]
            self.assertEqual(term["podAffinityTerm"]["labelSelector"]["matchLabels"], selector)
            pdb = self.r.get("PodDisruptionBudget", name)["spec"]
            self.assertEqual(pdb, {"minAvailable": 1, "selector": {"matchLabels": selector}})
        one = Rendered({**REQUIRED, "schedulerReplicas": 1, "masterReplicas": 1})
        self.assertEqual(one.all("PodDisruptionBudget"), [])

    def test_a_release_name_that_would_cut_scheduler_host_names_is_refused(self):
        proc = helm_run("template", "r" * 29, CHART, values=REQUIRED, check=False)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("over 46 characters", proc.stderr)
        self.assertEqual(helm_run("template", "r" * 28, CHART, values=REQUIRED).returncode, 0)

    def test_the_master_service_routes_to_the_active_master_only(self):
        service = self.r.get("Service", f"{self.r.fullname}-master")["spec"]["selector"]
        self.assertEqual(service["phalanx.io/master-role"], "active")
        c = self.r.container("master", "phalanx-master")
        env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in c["env"]}
        self.assertEqual(env, {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"})
        # Standbys are ready too: the role label, not readiness, keeps them out of the Service.
        self.assertEqual(c["readinessProbe"]["httpGet"], {"path": "/healthz", "port": "metrics"})
        role = self.r.get("Role", f"{self.r.fullname}-master-role-label")
        self.assertEqual(role["rules"], [{"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]}])
        policy = self.r.get("ValidatingAdmissionPolicy", f"{self.r.fullname}-master-phalanx-test-role-label")
        self.assertEqual(policy["spec"]["failurePolicy"], "Fail")
        binding = self.r.get("ValidatingAdmissionPolicyBinding", f"{self.r.fullname}-master-phalanx-test-role-label")
        self.assertEqual(binding["spec"]["validationActions"], ["Deny"])

    def test_priority_classes_never_preempt(self):
        classes = {p["metadata"]["name"]: p for p in self.r.all("PriorityClass")}
        self.assertEqual({k: v["value"] for k, v in classes.items()}, PRIORITY_CLASSES)
        for p in classes.values():
            self.assertEqual(p["preemptionPolicy"], "Never")
            self.assertIs(p["globalDefault"], False)

    def test_resources_per_component(self):
        self.assertEqual(self.r.container("master", "phalanx-master")["resources"],
                         {"requests": {"cpu": "1", "memory": "1Gi"}})
        self.assertEqual(self.r.container("db", "postgres")["resources"], {"requests": {"cpu": "1", "memory": "1Gi"}})
        self.assertEqual(self.r.container("scheduler", "kube-scheduler")["resources"]["requests"]["cpu"], "100m")
        self.assertEqual(self.r.container("scheduler", "phalanx-extender")["resources"]["requests"]["cpu"], "200m")

    def test_notes_tell_how_to_reach_the_cluster_ip_service_and_read_the_password(self):
        notes = helm_run("install", "t", CHART, "--dry-run=client", "-n", "ns", values=REQUIRED).stdout
        self.assertIn("ClusterIP Service t-phalanx-master", notes)
        self.assertIn("kubectl port-forward -n ns service/t-phalanx-master 8080:8080", notes)
        self.assertIn("http://localhost:8080", notes)
        self.assertIn("kubectl get secret t-phalanx-master-auth -n ns -o jsonpath='{.data.default-password}' "
                      "| base64 -d", notes)
        self.assertNotIn("WARNING", notes)

    def test_notes_tell_how_to_reach_a_load_balancer(self):
        notes = helm_run("install", "t", CHART, "--dry-run=client", "-n", "ns",
                         values={**REQUIRED, "masterServiceType": "LoadBalancer"}).stdout
        self.assertIn("LoadBalancer Service t-phalanx-master", notes)
        # The NetworkPolicy admits only task pods until the admin names the clients.
        self.assertIn("add your\n  clients' sources", notes)
        self.assertIn("kubectl get service t-phalanx-master -n ns -o jsonpath='{.status.loadBalancer.ingress[0]}'",
                      notes)
        self.assertIn("http://<address>:8080", notes)


class RequiredValues(unittest.TestCase):
    """Values the chart rejects, each with its own message."""

    def assertFails(self, values, message):
        proc = helm_run("template", "t", CHART, values=values, check=False)
        self.assertNotEqual(proc.returncode, 0, proc.stdout)
        self.assertIn(message, proc.stderr)

    def test_missing_max_slots_per_pod(self):
        self.assertFails({}, "maxSlotsPerPod is required: set it to the number of slots (GPUs) per pod")

    def test_cpu_slots_need_cpus_per_slot(self):
        self.assertFails({**REQUIRED, "slotType": "cpu"}, "slotResourceRequests.cpu is required when slotType is cpu")

    def test_checkpoint_storage_needs_its_location(self):
        self.assertFails({**REQUIRED, "checkpointStorage": {"type": "s3"}},
                         "checkpointStorage.bucket is required when checkpointStorage.type is s3")
        self.assertFails({**REQUIRED, "checkpointStorage": {"type": "azure", "container": "c"}},
                         "checkpointStorage: azure needs connection_string or account_url")

    def test_duplicate_pool_names(self):
        self.assertFails({**REQUIRED, "resourcePools": [{"pool_name": "a"}, {"pool_name": "a"}]},
                         'resourcePools: pool_name "a" appears twice')

    def test_pool_names_and_namespaces_are_what_kubernetes_takes(self):
        self.assertFails({**REQUIRED, "resourcePools": [{"pool_name": "A100 GPUs"}]},
                         "at '/resourcePools/0/pool_name'")
        self.assertFails({**REQUIRED, "resourcePools": [{"pool_name": "a" * 64}]}, "at '/resourcePools/0/pool_name'")
        self.assertFails({**REQUIRED, "resourcePools": [{"pool_name": "a", "kubernetes_namespace": "Team_A"}]},
                         "at '/resourcePools/0/kubernetes_namespace'")

    def test_schema_rejects_misspelled_keys_and_unknown_choices(self):
        self.assertFails({**REQUIRED, "maxSlotPerPod": 8}, "additional properties 'maxSlotPerPod' not allowed")
        self.assertFails({**REQUIRED, "slotType": "tpu"}, "slotType")
        self.assertFails({**REQUIRED, "defaultScheduler": "volcano"}, "defaultScheduler")
        self.assertFails({**REQUIRED, "extenderSettings": {"listen": "0.0.0.0:1"}},
                         "invalid propertyName 'listen'")
        self.assertFails({**REQUIRED, "extenderSettings": {"placement_key_file": "/k"}},
                         "invalid propertyName 'placement_key_file'")

    def test_schema_checks_the_security_settings(self):
        self.assertFails({**REQUIRED, "db": {"sslmode": "on"}}, "at '/db/sslmode'")
        self.assertFails({**REQUIRED, "masterServiceType": "ExternalName"}, "at '/masterServiceType'")
        self.assertFails({**REQUIRED, "quotas": {"max_active_trials_per_user": -1}},
                         "at '/quotas/max_active_trials_per_user'")
        self.assertFails({**REQUIRED, "quotas": {"max_trials": 3}}, "additional properties 'max_trials' not allowed")
        self.assertFails({**REQUIRED, "podSpecPolicy": {"allow_privileged": "yes"}},
                         "at '/podSpecPolicy/allow_privileged'")
        self.assertFails({**REQUIRED, "podSpecPolicy": {"allowPrivileged": True}},
                         "additional properties 'allowPrivileged' not allowed")
        self.assertFails({**REQUIRED, "resourcePools": [{"pool_name": "a", "podSpecPolicy": {"allow_host_ports": 1}}]},
                         "at '/resourcePools/0/podSpecPolicy/allow_host_ports'")
        self.assertFails({**REQUIRED, "podSpecPolicy": {"allowed_volume_types": ["hostPath"]}},
                         "at '/podSpecPolicy/allowed_volume_types/0'")
        self.assertFails({**REQUIRED, "resourcePools": [{"pool_name": "a", "podSpecPolicy": {"host_paths_read_only": "no"}}]},
                         "at '/resourcePools/0/podSpecPolicy/host_paths_read_only'")
        self.assertFails({**REQUIRED, "runAsUser": {"phalanx": 0}}, "at '/runAsUser/phalanx'")
        self.assertFails({**REQUIRED, "networkPolicy": {"enable": False}},
                         "additional properties 'enable' not allowed")


class PolicyPassThrough(unittest.TestCase):
    """podSpecPolicy, per-pool podSpecPolicy, quotas and db.sslmode reach master.yaml."""

    def test_hardened_values(self):
        values = COMBINATIONS["hardened"]
        m = Rendered(values).config_file("master", "master.yaml")
        self.assertEqual(m["pod_spec_policy"], {**POD_SPEC_POLICY, **values["podSpecPolicy"]})
        self.assertEqual(m["quotas"], values["quotas"])
        self.assertEqual(m["resource_pools"][0]["pod_spec_policy"], values["resourcePools"][0]["podSpecPolicy"])
        self.assertEqual(m["auth"], {"default_password": "admin-pw"})

    def test_sslmode(self):
        m = Rendered({**REQUIRED, "db": {"sslmode": "verify-full"}}).config_file("master", "master.yaml")
        self.assertEqual(m["db"]["sslmode"], "verify-full")


if __name__ == "__main__":
    unittest.main()
