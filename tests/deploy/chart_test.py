#!/usr/bin/env python3
"""Checks the Helm chart deploy/helm/phalanx with the real helm: `helm lint --strict` and
`helm template` for the default values and the combinations of deploylib.combinations(), asserting on
the rendered objects and on the master.yaml / extender.yaml / KubeSchedulerConfiguration they carry.
Run one class with `chart_test.py ClassName` (ctest registers one test per class)."""

import json
import tarfile
import tempfile
import unittest
import urllib.parse
from pathlib import Path

from deploylib import (CHART, REQUIRED, SCHEDULER_CONFIG, Rendered, combinations, helm_run,
                       parse_yaml, phalanx_binaries, run)

COMBINATIONS = combinations()
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
        self.assertEqual(r.get("Service", f"{n}-master")["spec"]["type"], "LoadBalancer")
        self.assertEqual(r.get("PersistentVolumeClaim", f"{n}-db")["spec"]["resources"]["requests"]["storage"],
                         "30Gi")

    def test_master_yaml(self):
        m = self.r.config_file("master", "master.yaml")
        self.assertEqual(m["port"], 8080)
        self.assertEqual(m["task_master_address"],
                         f"{self.r.fullname}-master.{self.r.namespace}.svc:8080")
        self.assertEqual(m["db"], {"host": f"{self.r.fullname}-db", "port": 5432, "name": "phalanx",
                                   "user": "postgres", "password": "postgres"})
        self.assertEqual(m["max_slots_per_pod"], 8)
        self.assertEqual(m["slot_type"], "gpu")
        self.assertNotIn("slot_resource_requests", m)
        self.assertEqual(m["default_scheduler"], "phalanx")
        self.assertEqual(m["preemption_timeout"], "5m")
        self.assertEqual(m["pod_start_failure_timeout"], "5m")
        self.assertEqual(m["terminating_pod_timeout"], "5m")
        self.assertEqual(m["resource_pools"], [{"pool_name": "default", "kubernetes_namespace": "phalanx-test"}])
        self.assertEqual(m["checkpoint_storage"], {"type": "shared_fs", "host_path": "/tmp/checkpoints"})
        for absent in ("tls", "auth", "task_container_defaults"):
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
        self.assertEqual(ext["args"], ["--config", "/etc/phalanx-scheduler/extender.yaml"])
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

    def test_notes_tell_how_to_reach_the_load_balancer(self):
        notes = helm_run("install", "t", CHART, "--dry-run=client", "-n", "ns", values=REQUIRED).stdout
        self.assertIn("LoadBalancer Service t-phalanx-master", notes)
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
                          "password": "s3cret"})


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

    def test_s3_with_credentials_and_endpoint(self):
        self.assertEqual(self.checkpoint_storage({"type": "s3", "bucket": "ckpt", "accessKey": "AK", "secretKey": "SK",
                                                  "endpointUrl": "http://minio:9000", "prefix": "p"}),
                         {"type": "s3", "bucket": "ckpt", "access_key": "AK", "secret_key": "SK",
                          "endpoint_url": "http://minio:9000", "prefix": "p"})

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
            self.assertEqual(packaged, self.r.text)


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

    def test_cluster_wide_writes_are_the_masters_priority_classes_and_the_extenders_pods(self):
        n = self.r.fullname
        for o in self.r.all("ClusterRole"):
            for rule in o["rules"]:
                if rule["resources"] == ["priorityclasses"]:
                    self.assertEqual(o["metadata"]["name"], f"{n}-master")
                    self.assertEqual(rule["verbs"], ["get", "create"])
                    continue
                if o["metadata"]["name"] == f"{n}-scheduler-extender" and rule["resources"] == ["pods"]:
                    # Victims labelled phalanx.io/preemptible may be in any namespace.
                    self.assertEqual(set(rule["verbs"]), {"get", "list", "watch", "patch", "delete"})
                    continue
                self.assertLessEqual(set(rule["verbs"]), {"get", "list", "watch"}, o["metadata"]["name"])

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


if __name__ == "__main__":
    unittest.main()
