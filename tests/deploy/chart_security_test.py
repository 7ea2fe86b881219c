#!/usr/bin/env python3
"""Checks the Helm chart's security with the real helm (shared values in chart_test.py): least
privilege RBAC, the generated secrets, the master's Service type, the security contexts of every pod
and container, and the network policies. Run one class with `chart_security_test.py ClassName`
(ctest registers one test per class)."""

import base64
import json
import unittest

from chart_test import COMBINATIONS, pod_specs
from deploylib import CHART, REPO, REQUIRED, Rendered


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

    def test_master_manages_pods_and_services_in_each_pool(self):
        for ns in ("phalanx-test-a100", "phalanx-test-t4"):
            role = self.r.get("Role", f"{self.r.fullname}-master", ns)
            pods = next(rule for rule in role["rules"] if rule["resources"] == ["pods"])
            self.assertEqual(set(pods["verbs"]), {"get", "list", "watch", "create", "delete", "patch"})
            services = next(rule for rule in role["rules"] if rule["resources"] == ["services"])
            self.assertEqual(set(services["verbs"]), {"list", "create", "delete"})
        self.assertIsNone(self.r.find("Role", f"{self.r.fullname}-master", "phalanx-test"))


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


if __name__ == "__main__":
    unittest.main()
