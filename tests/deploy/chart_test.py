#!/usr/bin/env python3
"""Checks the Helm chart deploy/helm/phalanx with the real helm: `helm lint --strict` and
`helm template` for the default values and the combinations of deploylib.combinations(), asserting on
the rendered objects and on the master.yaml / extender.yaml / KubeSchedulerConfiguration they carry.
Run one class with `chart_test.py ClassName` (ctest registers one test per class)."""

import base64
import json
import re
import tarfile
import tempfile
import unittest
import urllib.parse
from pathlib import Path

from deploylib import (CHART, REPO, REQUIRED, SCHEDULER_CONFIG, Rendered, combinations, helm_run,
                       parse_yaml, phalanx_binaries, run)

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
                          "max_slots_per_pod": 8})

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
        # One extender at a time, also during an upgrade: each runs its own admission loop.
        self.assertEqual(deployment["spec"]["strategy"], {"type": "Recreate"})
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


class ExternalDb(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.r = Rendered(COMBINATIONS["external-db"])

    def test_no_database_is_deployed(self):
        for kind in ("Deployment", "PersistentVolumeClaim", "Service"):
            self.assertIsNone(self.r.find(kind, f"{self.r.fullname}-db"), kind)
        self.r.get("Deployment", f"{self.r.fullname}-master")

    def test_master_uses_the_external_database(self):
        self.assertEqual(self.r.config_file("master", "master.yaml")["db"],
                         {"host": "pg.example.internal", "port": 6432, "name": "phx", "user": "phx_user",
                          "password": "s3cret", "sslmode": "require"})

    def test_no_network_policy_for_a_database_the_chart_does_not_run(self):
        self.assertIsNone(self.r.find("NetworkPolicy", f"{self.r.fullname}-db"))


class NodePortTls(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.r = Rendered(COMBINATIONS["nodeport-tls"])

    def test_node_port_service(self):
        svc = self.r.get("Service", f"{self.r.fullname}-master")
        self.assertEqual(svc["spec"]["type"], "NodePort")
        self.assertEqual(svc["spec"]["ports"][0]["port"], 8080)

    def test_master_terminates_tls_with_the_secret(self):
        m = self.r.config_file("master", "master.yaml")
        self.assertEqual(m["tls"], {"cert": "/etc/phalanx/tls/tls.crt", "key": "/etc/phalanx/tls/tls.key"})
        pod = self.r.get("Deployment", f"{self.r.fullname}-master")["spec"]["template"]["spec"]
        mount = next(v for v in self.r.container("master", "phalanx-master")["volumeMounts"]
                     if v["mountPath"] == "/etc/phalanx/tls")
        volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
        self.assertEqual(volume["secret"]["secretName"], "phalanx-tls")

    def test_task_pods_may_trust_a_ca_of_the_secret(self):
        self.assertNotIn("ca", self.r.config_file("master", "master.yaml")["tls"])
        m = Rendered({**COMBINATIONS["nodeport-tls"], "tlsCaKey": "ca.crt"}).config_file("master", "master.yaml")
        self.assertEqual(m["tls"]["ca"], "/etc/phalanx/tls/ca.crt")

    def test_notes_tell_how_to_reach_the_node_port(self):
        notes = helm_run("install", "t", CHART, "--dry-run=client", "-n", "ns",
                         values=COMBINATIONS["nodeport-tls"]).stdout
        self.assertIn("NodePort Service t-phalanx-master", notes)
        self.assertIn("jsonpath='{.spec.ports[0].nodePort}'", notes)
        self.assertIn("https://<node address>:<node port>", notes)
        self.assertIn("TLS passthrough", notes)


class CpuSlots(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.r = Rendered(COMBINATIONS["cpu-slots"])

    def test_master_requests_cpus_per_slot(self):
        m = self.r.config_file("master", "master.yaml")
        self.assertEqual(m["slot_type"], "cpu")
        self.assertEqual(m["slot_resource_requests"], {"cpu": 7.5})
        self.assertEqual(m["max_slots_per_pod"], 2)

    def test_extender_sees_every_pod_of_the_profile(self):
        (extender,) = self.r.config_file("scheduler", "kube-scheduler-config.yaml")["extenders"]
        self.assertNotIn("managedResources", extender)
        self.assertEqual(extender["filterVerb"], "filter")

    def test_extender_counts_cpu_slots(self):
        self.assertEqual(self.r.config_file("scheduler", "extender.yaml"),
                         {"listen": "127.0.0.1:8888", "status_listen": "0.0.0.0:9091", "slot_type": "cpu", "slot_resource": "cpu",
                          "cpus_per_slot": 7.5, "max_slots_per_pod": 2})


class ResourcePools(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.r = Rendered(COMBINATIONS["two-pools"])

    def test_master_yaml_lists_both_pools(self):
        self.assertEqual(self.r.config_file("master", "master.yaml")["resource_pools"], [
            {"pool_name": "a100", "kubernetes_namespace": "phalanx-test-a100", "max_slots_per_pod": 4,
             "task_container_defaults": {"gpu_pod_spec": {"spec": {"nodeSelector": {"gpu": "a100"}}}}},
            {"pool_name": "t4", "kubernetes_namespace": "phalanx-test-t4"},
        ])

    def test_extender_yaml_carries_pool_max_slots_per_pod(self):
        self.assertEqual(self.r.config_file("scheduler", "extender.yaml")["pool_max_slots_per_pod"], {"a100": 4})

    def test_extender_settings_join_what_the_chart_sets(self):
        self.assertEqual(self.r.config_file("scheduler", "extender.yaml"),
                         {"listen": "127.0.0.1:8888", "status_listen": "0.0.0.0:9091", "slot_type": "gpu",
                          "slot_resource": "nvidia.com/gpu", "max_slots_per_pod": 8,
                          "pool_max_slots_per_pod": {"a100": 4}, "refused_placement_timeout_ms": 60000})

    def test_pool_max_slots_per_pod_above_the_global_value(self):
        r = Rendered({"maxSlotsPerPod": 4, "resourcePools": [{"pool_name": "a100", "max_slots_per_pod": 8},
                                                             {"pool_name": "t4"}]})
        self.assertEqual(r.config_file("scheduler", "extender.yaml"),
                         {"listen": "127.0.0.1:8888", "status_listen": "0.0.0.0:9091", "slot_type": "gpu", "slot_resource": "nvidia.com/gpu",
                          "max_slots_per_pod": 4, "pool_max_slots_per_pod": {"a100": 8}})
        self.assertEqual(r.config_file("master", "master.yaml")["resource_pools"][0]["max_slots_per_pod"], 8)

    def test_master_pod_rights_in_exactly_the_pool_namespaces(self):
        role = f"{self.r.fullname}-master"
        for kind in ("Role", "RoleBinding"):
            got = {o["metadata"]["namespace"] for o in self.r.all(kind) if o["metadata"]["name"] == role}
            self.assertEqual(got, {"phalanx-test-a100", "phalanx-test-t4"}, kind)


class DefaultScheduler(unittest.TestCase):
    def assertNoScheduler(self, r):
        self.assertEqual([o for o in r.objects if o["metadata"]["name"].startswith(f"{r.fullname}-scheduler")], [])
        self.assertEqual(len(r.all("PriorityClass")), len(PRIORITY_CLASSES))
        r.get("Deployment", f"{r.fullname}-master")

    def test_default_scheduler_deploys_no_scheduler(self):
        r = Rendered({**REQUIRED, "defaultScheduler": "default"})
        self.assertEqual(r.config_file("master", "master.yaml")["default_scheduler"], "default")
        self.assertNoScheduler(r)

    def test_determineds_values_are_understood(self):
        for value in ("coscheduler", "preemption"):
            r = Rendered({**REQUIRED, "defaultScheduler": value})
            self.assertEqual(r.config_file("master", "master.yaml")["default_scheduler"], "phalanx", value)
            r.get("Deployment", f"{r.fullname}-scheduler")
        r = Rendered({**REQUIRED, "defaultScheduler": ""})
        self.assertEqual(r.config_file("master", "master.yaml")["default_scheduler"], "default")
        self.assertNoScheduler(r)

    def test_an_existing_scheduler_serves_the_phalanx_profile(self):
        r = Rendered({**REQUIRED, "deployScheduler": False})
        self.assertEqual(r.config_file("master", "master.yaml")["default_scheduler"], "phalanx")
        self.assertNoScheduler(r)


class CheckpointStorage(unittest.TestCase):
    def checkpoint_storage(self, cs):
        return Rendered({**REQUIRED, "checkpointStorage": cs}).config_file("master", "master.yaml")["checkpoint_storage"]

    def test_s3_credentials_go_to_a_secret_in_every_pool_namespace(self):
        values = {**COMBINATIONS["two-pools"], "checkpointStorage": {
            "type": "s3", "bucket": "ckpt", "accessKey": "AKIA-S3CRET", "secretKey": "SK-S3CRET",
            "endpointUrl": "http://minio:9000", "prefix": "p"}}
        r = Rendered(values)
        name = f"{r.fullname}-checkpoint-storage"
        self.assertEqual(r.config_file("master", "master.yaml")["checkpoint_storage"],
                         {"type": "s3", "bucket": "ckpt", "credentials_secret": name,
                          "endpoint_url": "http://minio:9000", "prefix": "p"})
        secrets = [o for o in r.all("Secret") if o["metadata"]["name"] == name]
        self.assertEqual({o["metadata"]["namespace"] for o in secrets}, {"phalanx-test-a100", "phalanx-test-t4"})
        for o in secrets:
            self.assertEqual(o["stringData"], {"access_key": "AKIA-S3CRET", "secret_key": "SK-S3CRET"})
        # Nowhere else: not in master.yaml, not in any other object.
        for o in r.objects:
            if o["metadata"]["name"] != name:
                self.assertNotIn("S3CRET", json.dumps(o), f"{o['kind']}/{o['metadata']['name']}")

    def test_s3_without_keys_needs_no_secret(self):
        r = Rendered({**REQUIRED, "checkpointStorage": {"type": "s3", "bucket": "ckpt"}})
        self.assertEqual(r.config_file("master", "master.yaml")["checkpoint_storage"], {"type": "s3", "bucket": "ckpt"})
        self.assertIsNone(r.find("Secret", f"{r.fullname}-checkpoint-storage"))

    def test_gcs(self):
        self.assertEqual(self.checkpoint_storage({"type": "gcs", "bucket": "ckpt"}), {"type": "gcs", "bucket": "ckpt"})

    def test_azure(self):
        self.assertEqual(self.checkpoint_storage({"type": "azure", "container": "c", "account_url": "https://a",
                                                  "credential": "k"}),
                         {"type": "azure", "container": "c", "account_url": "https://a", "credential": "k"})


class UserSettings(unittest.TestCase):
    def test_registry_pull_secret_password_and_pod_specs(self):
        cpu_spec = {"spec": {"tolerations": [{"key": "cpu", "operator": "Exists"}]}}
        r = Rendered({**REQUIRED, "imageRegistry": "registry.example.com/ml/", "imagePullSecretName": "regcred",
                      "defaultPassword": "pw", "taskContainerDefaults": {"cpuPodSpec": cpu_spec}})
        self.assertEqual(r.container("master", "phalanx-master")["image"],
                         "registry.example.com/ml/phalanx-master:0.1.0")
        for component in ("master", "db", "scheduler"):
            pod = r.get("Deployment", f"{r.fullname}-{component}")["spec"]["template"]["spec"]
            self.assertEqual(pod["imagePullSecrets"], [{"name": "regcred"}], component)
        m = r.config_file("master", "master.yaml")
        self.assertEqual(m["auth"], {"default_password": "pw"})
        self.assertEqual(m["task_container_defaults"], {"cpu_pod_spec": cpu_spec})

    def test_kube_scheduler_image_follows_the_cluster_version(self):
        r = Rendered(REQUIRED, extra=["--kube-version", "v1.37.1"])
        self.assertEqual(r.container("scheduler", "kube-scheduler")["image"], "registry.k8s.io/kube-scheduler:v1.37.1")
        r = Rendered({**REQUIRED, "images": {"kubeScheduler": "mirror.example.com/kube-scheduler:v1.36.0"}})
        self.assertEqual(r.container("scheduler", "kube-scheduler")["image"], "mirror.example.com/kube-scheduler:v1.36.0")


class SchedulerConfig(unittest.TestCase):
    """The chart ships deploy/scheduler/kube-scheduler-config.yaml, the file the test cluster runs."""

    @classmethod
    def setUpClass(cls):
        cls.r = Rendered(REQUIRED)
        cls.shared = parse_yaml(SCHEDULER_CONFIG.read_text())

    def test_rendered_config_is_the_shared_file_with_only_the_phalanx_profile(self):
        expected = dict(self.shared, profiles=[p for p in self.shared["profiles"] if p["schedulerName"] == "phalanx"])
        self.assertEqual(len(expected["profiles"]), 1)
        self.assertEqual(self.r.config_file("scheduler", "kube-scheduler-config.yaml"), expected)

    def test_gpu_slots_keep_the_calls_to_pods_that_request_gpus(self):
        (extender,) = self.r.config_file("scheduler", "kube-scheduler-config.yaml")["extenders"]
        self.assertEqual(extender["managedResources"], [{"name": "nvidia.com/gpu", "ignoredByScheduler": False}])

    def test_extender_listens_where_kube_scheduler_calls_it(self):
        (extender,) = self.shared["extenders"]
        self.assertEqual(self.r.config_file("scheduler", "extender.yaml")["listen"],
                         urllib.parse.urlsplit(extender["urlPrefix"]).netloc)

    def test_lease_rights_match_the_configured_lease(self):
        le = self.shared["leaderElection"]
        self.assertTrue(le["leaderElect"])
        role = self.r.get("Role", f"{self.r.fullname}-scheduler-leader-election", le["resourceNamespace"])
        self.assertIn({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                       "resourceNames": [le["resourceName"]], "verbs": ["get", "update"]}, role["rules"])
        binding = self.r.get("RoleBinding", f"{self.r.fullname}-scheduler-leader-election", le["resourceNamespace"])
        self.assertEqual(binding["subjects"][0]["name"], f"{self.r.fullname}-scheduler")

    def test_packaged_chart_carries_the_file_itself(self):
        with tempfile.TemporaryDirectory() as tmp:
            helm_run("package", CHART, "--destination", tmp)
            (tgz,) = Path(tmp).glob("phalanx-*.tgz")
            with tarfile.open(tgz) as tar:
                member = tar.getmember("phalanx/files/kube-scheduler-config.yaml")
                self.assertTrue(member.isfile(), "helm package must resolve the link into a regular file")
                self.assertEqual(tar.extractfile(member).read(), SCHEDULER_CONFIG.read_bytes())
            packaged = helm_run("template", "t", tgz, "--namespace", "phalanx-test", values=REQUIRED).stdout
            self.assertEqual(mask_generated(packaged), mask_generated(self.r.text))


class Rbac(unittest.TestCase):
    """Least privilege: only kube-scheduler binds pods; the master and extender touch pods only in pools."""

    @classmethod
    def setUpClass(cls):
        cls.r = Rendered(COMBINATIONS["two-pools"])

    def rules(self):
        for o in self.r.all("Role") + self.r.all("ClusterRole"):
            for rule in o["rules"]:
                yield o, rule

    def test_no_wildcards_and_no_binding_rights_of_our_own(self):
        for o, rule in self.rules():
            for field in ("apiGroups", "resources", "verbs"):
                self.assertNotIn("*", rule[field], o["metadata"]["name"])
            self.assertFalse({"pods/binding", "bindings"} & set(rule["resources"]), o["metadata"]["name"])

    def test_the_only_cluster_wide_write_is_the_masters_priority_classes(self):
        n = self.r.fullname
        for o in self.r.all("ClusterRole"):
            for rule in o["rules"]:
                if rule["resources"] == ["priorityclasses"]:
                    self.assertEqual(o["metadata"]["name"], f"{n}-master")
                    self.assertEqual(rule["verbs"], ["get", "create"])
                    continue
                self.assertLessEqual(set(rule["verbs"]), {"get", "list", "watch"}, o["metadata"]["name"])

    def test_no_cluster_role_of_ours_names_pods_or_secrets(self):
        for o in self.r.all("ClusterRole"):
            for rule in o["rules"]:
                self.assertFalse({r.split("/")[0] for r in rule["resources"]} & {"pods", "secrets"},
                                 f"{o['metadata']['name']}: {rule}")

    def test_extender_patches_and_deletes_pods_only_in_the_pools_and_listed_namespaces(self):
        def extender_namespaces(r):
            name = f"{r.fullname}-scheduler-extender"
            roles = {o["metadata"]["namespace"]: o for o in r.all("Role") if o["metadata"]["name"] == name}
            bound = {o["metadata"]["namespace"] for o in r.all("RoleBinding") if o["metadata"]["name"] == name}
            self.assertEqual(set(roles), bound)
            for role in roles.values():
                self.assertEqual(role["rules"], [{"apiGroups": [""], "resources": ["pods"],
                                                  "verbs": ["get", "list", "watch", "patch", "delete"]}])
            return set(roles)

        self.assertEqual(extender_namespaces(self.r), {"phalanx-test-a100", "phalanx-test-t4"})
        r = Rendered({**COMBINATIONS["two-pools"], "extenderNamespaces": ["research", "phalanx-test-t4"]})
        self.assertEqual(extender_namespaces(r), {"phalanx-test-a100", "phalanx-test-t4", "research"})
        self.assertEqual(extender_namespaces(Rendered(REQUIRED)), {"phalanx-test"})

    def test_only_the_scheduler_is_bound_to_kube_schedulers_roles(self):
        bound = {b["roleRef"]["name"]: [s["name"] for s in b["subjects"]] for b in self.r.all("ClusterRoleBinding")}
        n = self.r.fullname
        self.assertEqual(bound["system:kube-scheduler"], [f"{n}-scheduler"])
        self.assertEqual(bound["system:volume-scheduler"], [f"{n}-scheduler"])
        self.assertEqual(bound[f"{n}-master"], [f"{n}-master"])
        auth = self.r.get("RoleBinding", f"{n}-scheduler-authentication-reader", "kube-system")
        self.assertEqual(auth["roleRef"]["name"], "extension-apiserver-authentication-reader")

    def test_master_manages_pods_in_each_pool(self):
        for ns in ("phalanx-test-a100", "phalanx-test-t4"):
            role = self.r.get("Role", f"{self.r.fullname}-master", ns)
            pods = next(rule for rule in role["rules"] if rule["resources"] == ["pods"])
            self.assertEqual(set(pods["verbs"]), {"get", "list", "watch", "create", "delete", "patch"})
        self.assertIsNone(self.r.find("Role", f"{self.r.fullname}-master", "phalanx-test"))


def pod_specs(r):
    """(name, pod spec) of every Deployment the chart renders."""
    return [(d["metadata"]["name"], d["spec"]["template"]["spec"]) for d in r.all("Deployment")]


class GeneratedSecrets(unittest.TestCase):
    """No built-in account without a password; the extender's signing key; both kept across upgrades
    (the lookup itself runs against a real API server in cluster_test.py's KeptSecrets)."""

    def password(self, r):
        secret = r.get("Secret", f"{r.fullname}-master-auth")
        kept = base64.b64decode(secret["data"]["default-password"]).decode()
        self.assertEqual(r.config_file("master", "master.yaml")["auth"], {"default_password": kept})
        return kept, secret

    def test_without_default_password_a_strong_one_is_generated(self):
        first, secret = self.password(Rendered(REQUIRED))
        second, _ = self.password(Rendered(REQUIRED))
        for pw in (first, second):
            self.assertRegex(pw, r"^[A-Za-z0-9]{32}$")
        self.assertNotEqual(first, second, "the password must be random, not a constant of the chart")
        # Survives helm uninstall, for a database that outlives the release.
        self.assertEqual(secret["metadata"]["annotations"], {"helm.sh/resource-policy": "keep"})

    def test_an_empty_default_password_is_never_rendered(self):
        pw, _ = self.password(Rendered({**REQUIRED, "defaultPassword": ""}))
        self.assertTrue(pw)

    def test_an_explicit_default_password_is_used(self):
        self.assertEqual(self.password(Rendered({**REQUIRED, "defaultPassword": "pw"}))[0], "pw")

    def test_the_kept_value_is_read_back_with_lookup(self):
        template = (CHART / "templates" / "_helpers.tpl").read_text()
        self.assertIn('lookup "v1" "Secret" .ctx.Release.Namespace .name', template)

    def test_placement_key_is_random_and_mounted_read_only_into_the_extender_alone(self):
        r = Rendered(REQUIRED)
        name = f"{r.fullname}-placement-key"
        key = base64.b64decode(r.get("Secret", name)["data"]["placement-key"]).decode()
        self.assertRegex(key, r"^[A-Za-z0-9]{64}$")
        self.assertNotEqual(key, base64.b64decode(
            Rendered(REQUIRED).get("Secret", name)["data"]["placement-key"]).decode())
        pod = r.get("Deployment", f"{r.fullname}-scheduler")["spec"]["template"]["spec"]
        (volume,) = [v for v in pod["volumes"] if v.get("secret", {}).get("secretName") == name]
        self.assertEqual(volume["secret"]["defaultMode"], 0o440)
        ext = r.container("scheduler", "phalanx-extender")
        (mount,) = [m for m in ext["volumeMounts"] if m["name"] == volume["name"]]
        self.assertTrue(mount["readOnly"])
        path = f"{mount['mountPath']}/{volume['secret']['items'][0]['path']}"
        self.assertEqual(ext["args"][ext["args"].index("--placement-key-file") + 1], path)
        for c in pod["containers"]:
            if c["name"] != "phalanx-extender":
                self.assertNotIn(volume["name"], [m["name"] for m in c["volumeMounts"]])
        # Only in the Secret.
        for o in r.objects:
            if o["kind"] != "Secret":
                self.assertNotIn(key, json.dumps(o))

    def test_no_scheduler_no_placement_key(self):
        r = Rendered({**REQUIRED, "deployScheduler": False})
        self.assertIsNone(r.find("Secret", f"{r.fullname}-placement-key"))


class MasterService(unittest.TestCase):
    def service_type(self, values):
        r = Rendered({**REQUIRED, **values})
        return r.get("Service", f"{r.fullname}-master")["spec"]["type"]

    def test_cluster_ip_unless_asked_otherwise(self):
        self.assertEqual(self.service_type({}), "ClusterIP")
        self.assertEqual(self.service_type({"masterServiceType": "LoadBalancer"}), "LoadBalancer")
        self.assertEqual(self.service_type({"masterServiceType": "NodePort"}), "NodePort")
        self.assertEqual(self.service_type({"useNodePortForMaster": True}), "NodePort")


class SecurityContexts(unittest.TestCase):
    """Every pod and container the chart creates, in every combination: non-root, read-only root file
    system (writable emptyDirs where needed), no privilege escalation, no capabilities, seccomp."""

    def test_every_pod_and_container(self):
        checked = 0
        for combo, values in COMBINATIONS.items():
            r = Rendered(values)
            for name, pod in pod_specs(r):
                with self.subTest(f"{combo}: {name}"):
                    psc = pod["securityContext"]
                    self.assertIs(psc["runAsNonRoot"], True)
                    self.assertGreater(psc["runAsUser"], 0)
                    self.assertEqual(psc["seccompProfile"], {"type": "RuntimeDefault"})
                    empty_dirs = {v["name"] for v in pod["volumes"] if "emptyDir" in v}
                    for c in pod.get("initContainers", []) + pod["containers"]:
                        sc = c["securityContext"]
                        self.assertIs(sc["runAsNonRoot"], True, c["name"])
                        self.assertGreater(sc["runAsUser"], 0, c["name"])
                        self.assertIs(sc["readOnlyRootFilesystem"], True, c["name"])
                        self.assertIs(sc["allowPrivilegeEscalation"], False, c["name"])
                        self.assertEqual(sc["capabilities"], {"drop": ["ALL"]}, c["name"])
                        self.assertEqual(sc["seccompProfile"], {"type": "RuntimeDefault"}, c["name"])
                        self.assertNotIn("privileged", sc)
                        writable = {m["mountPath"] for m in c["volumeMounts"] if m["name"] in empty_dirs}
                        self.assertIn("/tmp", writable, c["name"])
                        checked += 1
                    self.assertFalse({"hostNetwork", "hostPID", "hostIPC"} & set(pod))
        self.assertGreaterEqual(checked, 4 * len(COMBINATIONS) - 2)

    def test_postgres_writes_only_to_its_volumes(self):
        r = Rendered(REQUIRED)
        mounts = {m["mountPath"] for m in r.container("db", "postgres")["volumeMounts"]}
        self.assertEqual(mounts, {"/var/lib/postgresql/data", "/var/run/postgresql", "/tmp"})
        pod = r.get("Deployment", f"{r.fullname}-db")["spec"]["template"]["spec"]
        self.assertEqual(pod["securityContext"]["fsGroup"], 999)  # the postgres image's postgres user

    def test_phalanx_images_run_as_the_uid_the_chart_sets(self):
        dockerfile = (REPO / "deploy" / "docker" / "Dockerfile").read_text()
        self.assertIn("USER 10001", dockerfile)
        r = Rendered(REQUIRED)
        for component, name in (("master", "phalanx-master"), ("scheduler", "phalanx-extender")):
            self.assertEqual(r.container(component, name)["securityContext"]["runAsUser"], 10001)


class NetworkPolicies(unittest.TestCase):
    def policy(self, r, component):
        return r.get("NetworkPolicy", f"{r.fullname}-{component}")["spec"]

    def test_on_by_default_and_only_ingress(self):
        r = Rendered(REQUIRED)
        for component in ("master", "scheduler", "db"):
            spec = self.policy(r, component)
            self.assertEqual(spec["policyTypes"], ["Ingress"])
            self.assertEqual(spec["podSelector"]["matchLabels"]["app.kubernetes.io/component"], component)

    def test_can_be_turned_off(self):
        r = Rendered({**REQUIRED, "networkPolicy": {"enabled": False}})
        self.assertEqual(r.all("NetworkPolicy"), [])

    def test_master_api_only_from_task_pods_of_the_pools(self):
        r = Rendered(COMBINATIONS["two-pools"])
        (rule,) = self.policy(r, "master")["ingress"]  # metrics: none by default
        self.assertEqual(rule["ports"], [{"port": "api"}])
        (peer,) = rule["from"]
        self.assertEqual(peer["namespaceSelector"], {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In",
             "values": ["phalanx-test-a100", "phalanx-test-t4"]}]})
        self.assertEqual(peer["podSelector"], {"matchLabels": {"app.kubernetes.io/managed-by": "phalanx-master"},
                                               "matchExpressions": [{"key": "phalanx.io/gang",
                                                                     "operator": "Exists"}]})

    def test_configured_api_and_metrics_sources(self):
        values = COMBINATIONS["hardened"]
        r = Rendered(values)
        api, metrics = self.policy(r, "master")["ingress"]
        self.assertEqual(api["from"][1:], values["networkPolicy"]["masterApiFrom"])
        self.assertEqual(metrics, {"ports": [{"port": "metrics"}], "from": values["networkPolicy"]["metricsFrom"]})
        (scheduler,) = self.policy(r, "scheduler")["ingress"]
        self.assertEqual(scheduler, {"ports": [{"port": "status"}, {"port": 10259}],
                                     "from": values["networkPolicy"]["metricsFrom"]})

    def test_nothing_reaches_the_scheduler_pod_by_default(self):
        # Its extender verbs listen on 127.0.0.1 for the kube-scheduler beside it.
        r = Rendered(REQUIRED)
        self.assertEqual(self.policy(r, "scheduler")["ingress"], [])
        self.assertEqual(r.config_file("scheduler", "extender.yaml")["listen"], "127.0.0.1:8888")

    def test_postgres_only_from_the_master(self):
        r = Rendered(REQUIRED)
        (rule,) = self.policy(r, "db")["ingress"]
        self.assertEqual(rule["from"], [{"podSelector": {"matchLabels": {
            "app.kubernetes.io/name": "phalanx", "app.kubernetes.io/instance": "t",
            "app.kubernetes.io/component": "master"}}}])


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
