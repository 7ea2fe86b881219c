#!/usr/bin/env python3
"""Checks what the Helm chart renders for each value combination, with the real helm (shared values
in chart_test.py): an external database, NodePort and TLS, CPU slots, resource pools, the default
scheduler, checkpoint storage, user settings, and the KubeSchedulerConfiguration the chart ships.
Run one class with `chart_values_test.py ClassName` (ctest registers one test per class)."""

import json
import tarfile
import tempfile
import unittest
import urllib.parse
from pathlib import Path

from chart_test import COMBINATIONS, PRIORITY_CLASSES, mask_generated
from deploylib import CHART, REQUIRED, SCHEDULER_CONFIG, Rendered, helm_run, parse_yaml


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
                         {"listen": "127.0.0.1:8888", "status_listen": "0.0.0.0:9091", "follow_lease": "kube-system/phalanx-scheduler", "slot_type": "cpu", "slot_resource": "cpu",
                          "cpus_per_slot": 7.5, "max_slots_per_pod": 2})


class ResourcePools(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.r = Rendered(COMBINATIONS["two-pools"])

    def test_master_yaml_lists_both_pools(self):
        self.assertEqual(self.r.config_file("master", "master.yaml")["resource_pools"], [
            {"pool_name": "a100", "kubernetes_namespace": "phalanx-test-a100", "max_slots_per_pod": 4,
             "task_container_defaults": {"gpu_pod_spec": {"spec": {"nodeSelector": {"gpu": "a100"}}},
                                         "nccl_port_range": "31000:31999"}},
            {"pool_name": "t4", "kubernetes_namespace": "phalanx-test-t4"},
        ])

    def test_extender_yaml_carries_pool_max_slots_per_pod(self):
        self.assertEqual(self.r.config_file("scheduler", "extender.yaml")["pool_max_slots_per_pod"], {"a100": 4})

    def test_extender_settings_join_what_the_chart_sets(self):
        self.assertEqual(self.r.config_file("scheduler", "extender.yaml"),
                         {"listen": "127.0.0.1:8888", "status_listen": "0.0.0.0:9091", "follow_lease": "kube-system/phalanx-scheduler", "slot_type": "gpu",
                          "slot_resource": "nvidia.com/gpu", "max_slots_per_pod": 8,
                          "pool_max_slots_per_pod": {"a100": 4}, "refused_placement_timeout_ms": 60000})

    def test_pool_max_slots_per_pod_above_the_global_value(self):
        r = Rendered({"maxSlotsPerPod": 4, "resourcePools": [{"pool_name": "a100", "max_slots_per_pod": 8},
                                                             {"pool_name": "t4"}]})
        self.assertEqual(r.config_file("scheduler", "extender.yaml"),
                         {"listen": "127.0.0.1:8888", "status_listen": "0.0.0.0:9091", "follow_lease": "kube-system/phalanx-scheduler", "slot_type": "gpu", "slot_resource": "nvidia.com/gpu",
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

    def test_port_ranges_reach_master_yaml(self):
        r = Rendered(COMBINATIONS["two-pools"])
        m = r.config_file("master", "master.yaml")
        self.assertEqual(m["task_container_defaults"], {"gloo_port_range": "20000-20999"})
        with self.assertRaises(Exception):
            Rendered({**REQUIRED, "taskContainerDefaults": {"ncclPortRange": "all"}})

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


if __name__ == "__main__":
    unittest.main()
