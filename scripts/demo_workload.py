#!/usr/bin/env python3
"""The seven-step example under "Task Priority" in the seeds, on the real test cluster.

Determined's priorities 1, 2, 3 (lower runs first) become Kubernetes priorities 60, 50, 40 (higher
runs first). The cluster has 8 GPUs as two 4-GPU nodes; maxSlotsPerPod is 4. This script creates
gangs of gated pods the way phalanx-master does, completes trials by deleting their pods, and, like
the master, deletes pods marked phalanx.io/preempt=requested and recreates them gated. After each
step it prints the admission queue (phalanx-extender's /debug/queue) and where every gang runs.
"""
import json
import os
import subprocess
import sys
import time
import urllib.request

KUBECTL = os.environ["KUBECTL"]
EXTENDER = os.environ["PHALANX_EXTENDER_URL"].rstrip("/")
runs = {}  # gang -> how many times it was (re)created
positions = {}  # gang -> queue position, kept across requeues as the master keeps it


def kubectl(*args, stdin=None):
    out = subprocess.run([KUBECTL, *args], input=stdin, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"kubectl {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout


def priority_classes():
    docs = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
             "metadata": {"name": f"demo-p{v}"}, "value": v, "preemptionPolicy": "Never"}
            for v in (40, 50, 60)]
    kubectl("apply", "-f", "-", stdin="\n---\n".join(json.dumps(d) for d in docs))


def submit(gang, pods, gpus, priority, task="experiment"):
    run = runs.get(gang, 0)
    runs[gang] = run + 1
    position = positions.setdefault(gang, len(positions) + 1)
    docs = []
    for i in range(pods):
        docs.append({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": f"{gang}-r{run}-{i}",
                "labels": {"phalanx.io/gang": gang, "phalanx.io/gang-size": str(pods),
                           "phalanx.io/task-type": task,
                           "phalanx.io/preemptible": "true" if task == "experiment" else "false",
                           "phalanx.io/queue-position": str(position)}},
            "spec": {
                "schedulerName": "phalanx", "priorityClassName": f"demo-p{priority}",
                "schedulingGates": [{"name": "phalanx.io/admission"}],
                "tolerations": [{"operator": "Exists"}],
                "containers": [{"name": "phalanx-container", "image": "trial",
                                "resources": {"requests": {"nvidia.com/gpu": str(gpus), "cpu": "1"},
                                              "limits": {"nvidia.com/gpu": str(gpus)}}}]}})
    kubectl("apply", "-f", "-", stdin="\n---\n".join(json.dumps(d) for d in docs))


def pods():
    return json.loads(kubectl("get", "pods", "-o", "json"))["items"]


def finish(gang):
    kubectl("delete", "pods", "-l", f"phalanx.io/gang={gang}", "--wait=false")


def requeue_victims():
    """The master's part of preemption: victims go and come back gated, keeping their place."""
    victims = {}
    for p in pods():
        if p["metadata"].get("labels", {}).get("phalanx.io/preempt") == "requested":
            victims.setdefault(p["metadata"]["labels"]["phalanx.io/gang"], []).append(p)
    for gang, members in sorted(victims.items()):
        by = members[0]["metadata"]["annotations"].get("phalanx.io/preempted-by", "?")
        print(f"  master: {gang} preempted by {by}: checkpoint, delete, requeue")
        finish(gang)
        spec = members[0]["spec"]
        gpus = spec["containers"][0]["resources"]["requests"]["nvidia.com/gpu"]
        submit(gang, len(members), gpus, spec["priority"])
    return sorted(victims)


def settle():
    """Waits until the extender's decisions have landed: no ungated pod is still unbound."""
    for _ in range(100):
        time.sleep(0.3)
        ps = pods()
        unbound = [p for p in ps if not p["spec"].get("schedulingGates")
                   and not p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")]
        if not unbound:
            time.sleep(1.5)  # one more admission round
            return
    sys.exit("demo: pods did not settle")


def running_gangs():
    gangs = {}
    for p in pods():
        if p["metadata"].get("deletionTimestamp"):
            continue
        gang = p["metadata"]["labels"]["phalanx.io/gang"]
        node = p["spec"].get("nodeName")
        if node:
            gangs.setdefault(gang, []).append(node)
    return gangs


def show(title):
    settle()
    print(f"\n== {title}")
    queue = json.load(urllib.request.urlopen(f"{EXTENDER}/debug/queue"))["gangs"]
    if queue:
        print("  queue (extender /debug/queue):")
        for g in queue:
            print(f"    {g['position']:>2}. {g['gang']:<20} prio {g['priority']:<3} "
                  f"{g['slots']} GPUs  {g['state']:<10} {g['reason']}")
    else:
        print("  queue: empty")
    marked = [p["metadata"]["name"] for p in pods()
              if p["metadata"].get("labels", {}).get("phalanx.io/preempt") == "requested"]
    if marked:
        print(f"  marked for preemption: {', '.join(sorted(marked))}")
    print("  running:")
    backfilled = {p["metadata"]["labels"]["phalanx.io/gang"] for p in pods()
                  if p["metadata"].get("annotations", {}).get("phalanx.io/backfilled") == "true"}
    for gang, nodes in sorted(running_gangs().items()):
        note = "  (backfilled)" if gang in backfilled else ""
        print(f"    {gang:<20} on {', '.join(sorted(nodes))}{note}")


def main():
    priority_classes()
    for i in range(20):
        submit(f"asha-{i:02d}", 1, 1, 50)
    show("1. priority-2 (k8s 50) ASHA experiment, 20 one-slot trials: 8 run on all 8 GPUs")

    submit("dist-1", 1, 4, 60)
    show("2. priority-1 (k8s 60) 4-slot experiment arrives: 4 ASHA trials are marked")
    requeue_victims()
    show("2. ... the victims are requeued; dist-1 runs on the freed node")

    submit("notebook", 1, 1, 40, task="notebook")
    show("3. priority-3 (k8s 40) notebook, not preemptible: waits behind the queued trials")
    while "notebook" not in running_gangs():
        trial = sorted(g for g in running_gangs() if g.startswith("asha-"))[0]
        finish(trial)
        settle()
    show("3. ... trials complete; once the experiments need at most 7 GPUs the notebook runs")

    for gang in running_gangs():
        if gang != "notebook":
            finish(gang)
    for p in pods():
        gang = p["metadata"]["labels"]["phalanx.io/gang"]
        if gang.startswith("asha-"):
            finish(gang)
    show("4. ASHA and dist-1 complete; the notebook keeps running")

    submit("dist-2", 2, 4, 60)
    show("5. priority-1 8-slot experiment: cannot run (notebook holds 1 GPU, not preemptible)")

    submit("dist-3", 1, 4, 50)
    show("6. priority-2 4-slot experiment: backfills onto the idle 4 GPUs")

    finish("notebook")
    show("7. the notebook is killed: the backfilled dist-3 is marked for dist-2")
    requeue_victims()
    show("7. ... dist-3 is requeued; dist-2 runs on both nodes")
    finish("dist-2")
    show("7. ... dist-2 completes; dist-3 restarts")


if __name__ == "__main__":
    main()
