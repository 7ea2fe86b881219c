"""Step 3 of bench/replay_fidelity: the slice on the real system (private Postgres and test cluster,
phalanx-extender, phalanx-master and the CLI), watched pod by pod."""
import collections
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

from fidelity.common import (NAMESPACE, PASSWORD, PRIORITY_CLASSES, RESTART_OVERHEAD_MS, log,
                             script, wait_for)


# --- 3. the real system ------------------------------------------------------------------------

# The pod annotation a slice job's duration travels in, copied to phalanx.io/sim-duration.
DURATION_KEY = "fidelity/duration"


class Api:
    """The test cluster's kube-apiserver (bearer token of its state file)."""

    def __init__(self, cluster_dir):
        state = dict(line.split("=", 1) for line in open(f"{cluster_dir}/state").read().split())
        self.port, self.token = int(state["API_PORT"]), state["TOKEN"]
        self.ctx = ssl.create_default_context(cafile=f"{cluster_dir}/pki/ca.crt")

    def request(self, method, path, body=None, content_type="application/json"):
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx)
        conn.request(method, path, body=body and json.dumps(body),
                     headers={"Authorization": f"Bearer {self.token}",
                              "Content-Type": content_type})
        return conn

    def create(self, path, obj):
        resp = self.request("POST", path, obj).getresponse()
        if resp.status >= 300 and resp.status != 409:
            sys.exit(f"replay_fidelity: POST {path}: {resp.status} {resp.read()[:300]!r}")


class Run:
    """One allocation (a run of a trial): its gang of pods as the watch saw them."""

    def __init__(self, job_id, size):
        self.job_id, self.size = job_id, size
        self.seen, self.nodes, self.succeeded, self.deleted = set(), {}, set(), set()
        self.all_seen = self.admitted = self.marked = self.done = self.gone = None


class Watcher:
    """Watches the namespace's pods; records runs on time.monotonic() and acks victims at once."""

    def __init__(self, api, cli):
        self.api, self.cli = api, cli
        self.runs = {}  # allocation -> Run
        self.lock = threading.Lock()
        self.ack_failures = []
        self.patch_failures = []
        self.stopped = threading.Event()
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        version = ""
        while not self.stopped.is_set():
            try:
                resp = self.api.request("GET", f"/api/v1/namespaces/{NAMESPACE}/pods?watch=1&"
                                        f"resourceVersion={version}&timeoutSeconds=3600")
                for line in resp.getresponse():
                    event = json.loads(line)
                    if event["type"] == "ERROR":  # Expired version: start over from now.
                        version = ""
                        break
                    version = event["object"]["metadata"]["resourceVersion"]
                    self.on_pod(event["type"], event["object"], time.monotonic())
            except (http.client.HTTPException, OSError, ValueError):
                time.sleep(0.1)

    def set_duration(self, name, seconds):
        """What kwok's pod-complete stage reads; only phalanx may write phalanx.io/ through a
        pod_spec, so the experiment carries DURATION_KEY and the admin's token copies it."""
        resp = self.api.request(
            "PATCH", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}",
            {"metadata": {"annotations": {"phalanx.io/sim-duration": seconds}}},
            content_type="application/merge-patch+json").getresponse()
        if resp.status != 200:
            with self.lock:
                self.patch_failures.append(f"{name}: {resp.status}")

    def on_pod(self, kind, pod, now):
        meta, labels = pod["metadata"], pod["metadata"].get("labels", {})
        gang = labels.get("phalanx.io/gang")
        if not gang:
            return
        with self.lock:
            run = self.runs.get(gang)
            if run is None:
                run = self.runs[gang] = Run(labels["phalanx.io/job-id"],
                                            int(labels["phalanx.io/gang-size"]))
            if kind == "ADDED" and DURATION_KEY in meta.get("annotations", {}):
                threading.Thread(target=self.set_duration, daemon=True,
                                 args=(meta["name"], meta["annotations"][DURATION_KEY])).start()
            run.seen.add(meta["name"])
            if kind == "DELETED":
                run.deleted.add(meta["name"])
                if run.gone is None and len(run.deleted) == run.size:
                    run.gone = now
                return
            if run.all_seen is None and len(run.seen) == run.size:
                run.all_seen = now
            if run.admitted is None and "phalanx.io/placement" in meta.get("annotations", {}):
                run.admitted = now
            if pod["spec"].get("nodeName"):
                run.nodes[meta["name"]] = pod["spec"]["nodeName"]
            # A victim whose pods all succeed before they are deleted completes its trial (the
            # master does not run it again): the run is done, not preempted.
            if pod.get("status", {}).get("phase") == "Succeeded":
                run.succeeded.add(meta["name"])
                if run.done is None and len(run.succeeded) == run.size:
                    run.done = now
            if run.marked is None and labels.get("phalanx.io/preempt") == "requested":
                run.marked = now
                token = next(e["value"] for c in pod["spec"]["containers"]
                             for e in c.get("env", []) if e["name"] == "PHALANX_ALLOCATION_TOKEN")
                threading.Thread(target=self.ack, args=(gang, token), daemon=True).start()

    def ack(self, allocation, token):
        """Acks until the master accepts: it may not have seen the mark yet (FailedPrecondition),
        or have ended a run that was not running yet itself (NotFound)."""
        for _ in range(100):
            r = self.cli(["trial", "ack", allocation], token=token)
            if r.returncode == 0 or "NOT_FOUND" in r.stderr:
                return
            time.sleep(0.05)
        self.ack_failures.append(allocation)

    def snapshot(self):
        with self.lock:
            return {k: vars(v).copy() for k, v in self.runs.items()}


class RealSystem:
    """Postgres, the test cluster, phalanx-extender and phalanx-master under `run_dir`."""

    def __init__(self, a, run_dir):
        self.a, self.dir, self.procs = a, run_dir, []
        self.pg_dir, self.cluster_dir = f"{run_dir}/pg", f"{run_dir}/cluster"
        self.token_file = f"{run_dir}/cli-token"

    def spawn(self, name, argv, env=None):
        with open(os.path.join(self.dir, f"{name}.log"), "w") as out:
            self.procs.append(subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                               env={**os.environ, **(env or {})}))

    def cli(self, argv, token=None):
        env = {**os.environ, "PHALANX_MASTER": self.master, "PHALANX_TOKEN_FILE": self.token_file}
        if token:
            env["PHALANX_ALLOCATION_TOKEN"] = token
        return subprocess.run([os.path.join(self.a.build, "cli/phalanx"), *argv], env=env,
                              capture_output=True, text=True)

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def start(self):
        a = self.a
        script("pg-temp", "up", "--dir", self.pg_dir)
        env = dict(re.findall(r"export (\w+)=(\S+)", open(f"{self.pg_dir}/env").read()))
        db = re.match(r"postgresql://([^@]+)@([^:]+):(\d+)/(\w+)", env["PHALANX_TEST_PG_URL"])
        nodes, gpus = (int(x) for x in a.cluster.split("x"))
        for attempt in range(3):  # A component can lose its free port to another process.
            try:
                script("test-cluster", "up", "--dir", self.cluster_dir, "--nodes", "0")
                break
            except subprocess.CalledProcessError:
                if attempt == 2:
                    raise
        script("test-cluster", "add-nodes", "--dir", self.cluster_dir, "--prefix", "n",
                    "--nodes", str(nodes), "--gpus", str(gpus))
        self.api = Api(self.cluster_dir)
        self.api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": NAMESPACE}})
        for name, value in PRIORITY_CLASSES.items():
            self.api.create("/apis/scheduling.k8s.io/v1/priorityclasses", {
                "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": name}, "value": value, "preemptionPolicy": "Never"})
        kubeconfig = os.path.join(self.cluster_dir, "kubeconfig")
        extender = re.search(r"PHALANX_EXTENDER_URL=\W?http://([\d.:]+)",
                             open(f"{self.cluster_dir}/env").read()).group(1)
        self.spawn("extender", [os.path.join(a.build, "scheduler_extender/phalanx-extender"),
                                "--kubeconfig", kubeconfig, "--listen", extender,
                                f"--max-slots-per-pod={a.max_slots_per_pod}",
                                f"--restart-overhead-ms={RESTART_OVERHEAD_MS}"])
        wait_for("phalanx-extender /readyz", lambda: ready(f"http://{extender}/readyz"))
        config = os.path.join(self.dir, "master.yaml")
        with open(config, "w") as f:
            f.write(f"db: {{user: {db[1]}, host: {db[2]}, port: {db[3]}, name: {db[4]}}}\n"
                    f"max_slots_per_pod: {a.max_slots_per_pod}\npreemption_timeout: 5m\n"
                    f"auth: {{default_password: {PASSWORD}}}\nresource_pools:\n"
                    f"  - {{pool_name: gpu, kubernetes_namespace: {NAMESPACE}}}\n")
        self.master = f"127.0.0.1:{free_port()}"
        self.spawn("master", [os.path.join(a.build, "master/phalanx-master"), "--config", config,
                              "--listen", self.master], env={"KUBECONFIG": kubeconfig})
        wait_for("phalanx-master login", lambda: self.cli(
            ["login", "admin", "--password", PASSWORD]).returncode == 0)

    def __exit__(self, *_):
        for p in reversed(self.procs):
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
        if not self.a.keep:
            script("test-cluster", "down", "--dir", self.cluster_dir)
            script("pg-temp", "down", "--dir", self.pg_dir)


def ready(url):
    try:
        return urllib.request.urlopen(url, timeout=2).status == 200
    except OSError:
        return False


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def experiment_yaml(index, gpus, priority, duration):
    return (f"name: j{index:03d}\nsearcher: {{name: single}}\n"
            f"resources: {{slots_per_trial: {gpus}, priority: {priority}}}\n"
            f"environment: {{pod_spec: {{metadata: {{annotations: "
            f"{{{DURATION_KEY}: \"{duration:g}\"}}}}}}}}\n")


def run_real(a, run_dir, slice_jobs, accepted):
    """Submits the accepted jobs at their slice times; returns {job index: real record} (times
    since slice time 0) and how late the submit calls were. Writes every run to real-runs.csv."""
    # What a --keep run left there, then its data.
    script("test-cluster", "down", "--dir", f"{run_dir}/cluster", check=False)
    script("pg-temp", "down", "--dir", f"{run_dir}/pg", check=False)
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    with RealSystem(a, run_dir) as system:
        watcher = Watcher(system.api, system.cli)
        job_of = {}  # master job id -> job index
        os.makedirs(os.path.join(run_dir, "experiments"), exist_ok=True)
        time.sleep(1)  # The watch is open before the first pod.
        t0 = time.monotonic() + 1
        lateness = []
        for i in accepted:
            submit, duration, gpus = slice_jobs[i]
            path = os.path.join(run_dir, "experiments", f"j{i:03d}.yaml")
            with open(path, "w") as f:
                f.write(experiment_yaml(i, gpus, accepted[i], duration))
            delay = t0 + submit - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            lateness.append(time.monotonic() - t0 - submit)
            r = system.cli(["experiment", "create", path])
            m = re.search(r"Created experiment (\d+)", r.stdout)
            if not m:
                sys.exit(f"replay_fidelity: job {i} refused: {r.stdout}{r.stderr}")
            job_of[f"exp-{m[1]}"] = i
        log(f"submitted {len(accepted)} jobs")
        deadline = time.monotonic() + a.timeout

        def finished():
            done = {r["job_id"] for r in watcher.snapshot().values() if r["done"] is not None}
            return len(done) >= len(accepted) or time.monotonic() > deadline

        while not finished():
            time.sleep(1)
        watcher.stopped.set()
        runs = watcher.snapshot()
        if watcher.ack_failures:
            log(f"acks that never went through: {watcher.ack_failures}")
        if watcher.patch_failures:
            log(f"sim-duration patches that failed (those pods ran on): {watcher.patch_failures}")
    with open(os.path.join(run_dir, "real-runs.csv"), "w") as f:
        f.write("allocation,job,all_seen_s,admitted_s,marked_s,gone_s,done_s,nodes\n")
        for name, r in sorted(runs.items(), key=lambda x: x[1]["all_seen"] or 0):
            times = ("" if r[k] is None else f"{r[k] - t0:.3f}"
                     for k in ("all_seen", "admitted", "marked", "gone", "done"))
            f.write(f"{name},{job_of.get(r['job_id'], '')},{','.join(times)},"
                    f"{';'.join(sorted(r['nodes'].values()))}\n")
    timing = {"late_median": statistics.median(lateness), "late_max": max(lateness)}
    return real_jobs(runs, job_of, t0), timing


def real_jobs(runs, job_of, t0):
    """Per job index, from the watched runs: submit, first start, end (s since t0), the hold of
    its last run (admission to all pods Succeeded), that run's nodes, its preemptions, and per
    victim run its exit (mark to all pods deleted) and requeue (deleted to the next run's pods)."""
    by_job = collections.defaultdict(list)
    for name, r in runs.items():
        if r["job_id"] in job_of:
            by_job[job_of[r["job_id"]]].append((int(name.rsplit("-r", 1)[1]), r))
    out = {}
    for i, rs in by_job.items():
        rs = [r for _, r in sorted(rs, key=lambda x: x[0])]
        last = rs[-1]
        starts = [r["admitted"] for r in rs if r["admitted"] is not None]
        done = last["done"] is not None
        out[i] = {
            "submit": rs[0]["all_seen"] - t0,
            "start": min(starts) - t0 if starts else None,
            "end": last["done"] - t0 if done else None,
            "hold": last["done"] - last["admitted"] if done else None,
            "nodes": sorted(last["nodes"].values()) if done else None,
            "preemptions": sum(r["marked"] is not None and r["done"] is None for r in rs),
            "exits": [r["gone"] - r["marked"] for r in rs
                      if r["marked"] is not None and r["done"] is None and r["gone"] is not None],
            "requeues": [nxt["all_seen"] - r["gone"] for r, nxt in zip(rs, rs[1:])
                         if r["gone"] is not None and nxt["all_seen"] is not None],
        }
    return out
