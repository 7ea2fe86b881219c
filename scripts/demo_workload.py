#!/usr/bin/env python3
"""The seven-step example under "Task Priority" in the seeds, through phalanx-master and its CLI.

scripts/demo starts Postgres, the real test cluster (two 4-GPU kwok nodes), phalanx-extender and
phalanx-master (maxSlotsPerPod 4). This script submits the workload with the `phalanx` CLI. Trials
and notebooks only exist as kwok pods here, so it also plays the trial processes: a preempted trial
checkpoints and acknowledges through `phalanx trial` with its allocation's own token (read from its
pod), and a finishing trial reports success and its containers exit (annotation
phalanx.io/sim-duration=0, which kwok turns into phase Succeeded). Determined's priorities 1, 2, 3
(lower runs first) are the chart's classes high (100), medium (50) and low (1). After each step it
prints the master's job queue (`phalanx job list`, with the forecast start) and where every gang
runs; at step 5, `phalanx job why` for the experiment that cannot run.
"""
import json
import os
import subprocess
import sys
import time

KUBECTL = os.environ["KUBECTL"]
PHALANX = os.environ["PHALANX_CLI"]
SPECS = os.path.join(os.environ["PHALANX_DEMO_DIR"], "specs")  # Kept with the demo's logs.


def run(cmd, env=None, check=True):
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if check and out.returncode != 0:
        sys.exit(f"demo: {' '.join(cmd)}: {out.stderr.strip() or out.stdout.strip()}")
    return out.stdout


def cli(*args, env=None):
    return run([PHALANX, *args], env=env)


def kubectl(*args):
    return run([KUBECTL, *args])


def pods():
    return json.loads(kubectl("get", "pods", "-o", "json"))["items"]


def live(p):
    return not p["metadata"].get("deletionTimestamp") and p["status"].get("phase") not in (
        "Succeeded", "Failed")


def gang(p):
    return p["metadata"]["labels"]["phalanx.io/gang"]


def allocations(job, running=False):
    """Live allocations of a job ("exp-3"), sorted; only fully bound ones when `running`."""
    by = {}
    for p in pods():
        if live(p) and gang(p).startswith(job + "-"):
            by.setdefault(gang(p), []).append(bool(p["spec"].get("nodeName")))
    return sorted(a for a, bound in by.items() if not running or all(bound))


def experiment(name, searcher, slots, priority):
    path = os.path.join(SPECS, f"{name}.yaml")
    with open(path, "w") as f:
        f.write(f"name: {name}\nsearcher: {searcher}\n"
                "hyperparameters: {lr: {type: double, minval: 0.001, maxval: 0.1}}\n"
                f"resources: {{slots_per_trial: {slots}, priority: {priority}}}\n")
    print("  $ phalanx experiment create", os.path.basename(path))
    out = cli("experiment", "create", path)
    print("   ", out.strip())
    return "exp-" + out.split()[2]


def pod_env(allocation, name):
    pod = json.loads(kubectl("get", "pod", f"{allocation}-0", "-o", "json"))
    for c in pod["spec"]["containers"]:
        for e in c.get("env", []):
            if e["name"] == name:
                return e["value"]
    sys.exit(f"demo: {allocation} has no {name}")


def token_env(allocation):
    return {"PHALANX_ALLOCATION_TOKEN": pod_env(allocation, "PHALANX_ALLOCATION_TOKEN")}


def checkpoint_victims():
    """Every allocation the master signalled checkpoints and acknowledges, as its trial would,
    until no pod is left marked (the extender labels a round's victims one pod at a time)."""
    handled = []
    for _ in range(150):
        marked = sorted({gang(p) for p in pods() if live(p) and
                         p["metadata"]["labels"].get("phalanx.io/preempt") == "requested"})
        if handled and not marked:
            break
        for a in marked:
            if a in handled:
                continue
            handled.append(a)
            env = token_env(a)
            signal = run([PHALANX, "trial", "preemption", a], env=env, check=False).strip()
            print(f"  trial {a}: `phalanx trial preemption` says {signal}; checkpoints and "
                  "acknowledges")
            cli("trial", "checkpoint", a, f"ckpt-{a}", "--steps", "100", env=env)
            cli("trial", "ack", a, env=env)
        time.sleep(0.2)
    return handled


def complete(allocation):
    cli("trial", "complete", allocation, env=token_env(allocation))
    complete_pods(allocation)


def complete_pods(allocation):
    """The run's containers exit; waits until its pods are gone."""
    kubectl("annotate", "pods", "-l", f"phalanx.io/gang={allocation}", "--overwrite",
            "phalanx.io/sim-duration=0")
    for _ in range(150):
        if allocation not in {gang(p) for p in pods() if live(p)}:
            return
        time.sleep(0.2)


def example(allocation):
    """examples/train.py (the Python SDK) as the run's trial process, with its pod's environment;
    its output. A checkpoint the CLI reported above has no files: the trial then starts at step 0."""
    pod = json.loads(kubectl("get", "pod", f"{allocation}-0", "-o", "json"))
    (container,) = [c for c in pod["spec"]["containers"] if c["name"] == "phalanx-container"]
    env = {e["name"]: e["value"] for e in container.get("env", []) if "value" in e}
    env.update(PHALANX_CHECKPOINT_DIR=os.path.join(os.environ["PHALANX_DEMO_DIR"], "checkpoints"),
               PYTHONPATH=os.environ["PHALANX_SDK_PATH"])
    os.makedirs(env["PHALANX_CHECKPOINT_DIR"], exist_ok=True)
    script = os.path.join(os.path.dirname(__file__), "..", "examples", "train.py")
    out = run(["/usr/bin/python3", script], env=env)
    complete_pods(allocation)  # Its process is done (a run the searcher stops is gone already).
    return out


def play_asha(allocation):
    """One run of an ASHA trial, played by examples/train.py: it trains to its rung and goes on while
    the searcher promotes it, else stops."""
    out = example(allocation).splitlines()
    print(f"  {allocation}: {out[-1].strip() if out else 'no output'}")


def play_asha_until(asha, done, failure):
    """Plays the ASHA search's running runs, one at a time, until done() (at most 200 rounds)."""
    print("  ASHA's runs, played by examples/train.py (its last line):")
    for _ in range(200):
        if done():
            return
        running = allocations(asha, running=True)
        if running:
            play_asha(running[0])
        settle()
    sys.exit(f"demo: {failure}")


def finished(experiment_job):
    """Whether the experiment ("exp-3") is COMPLETED."""
    return "state COMPLETED" in cli("experiment", "describe", experiment_job.split("-")[1])


def run_example(allocation):
    trial = pod_env(allocation, "PHALANX_TRIAL_ID")  # Before its pods go.
    print(f"\n== 8. examples/train.py runs as {allocation}'s trial process (Python SDK)")
    print("  $ python3 examples/train.py")
    for line in example(allocation).splitlines():
        print("   ", line)
    print(f"  $ phalanx trial metrics {trial} --group validation")
    for line in cli("trial", "metrics", trial, "--group", "validation").splitlines():
        print("   ", line)


def settle():
    """Waits until the extender's and master's decisions have landed."""
    for _ in range(150):
        time.sleep(0.3)
        ps = pods()
        busy = [p for p in ps if live(p) and not p["spec"].get("schedulingGates")
                and not p["spec"].get("nodeName")]
        marked = [p for p in ps if live(p) and
                  p["metadata"]["labels"].get("phalanx.io/preempt") == "requested"]
        if not busy and not marked:
            time.sleep(1.5)  # One more admission round.
            return
    sys.exit("demo: pods did not settle")


def show(title):
    settle()
    print(f"\n== {title}")
    print("  $ phalanx job list")
    for line in cli("job", "list").splitlines():
        print("   ", line)
    running = {}
    for p in pods():
        if live(p) and p["spec"].get("nodeName"):
            running.setdefault(gang(p), []).append(p["spec"]["nodeName"])
    print("  running gangs:")
    for g, nodes in sorted(running.items()):
        print(f"    {g:<22} on {', '.join(sorted(nodes))}")


def why(job):
    """Prints `phalanx job why JOB` once the extender's forecast has reached the job."""
    print(f"  $ phalanx job why {job}")
    deadline = time.time() + 60
    out = cli("job", "why", job)
    while "no forecast made" in out and time.time() < deadline:
        time.sleep(1)
        out = cli("job", "why", job)
    for line in out.splitlines():
        print("   ", line)


def main():
    os.makedirs(SPECS, exist_ok=True)
    cli("login", "admin", "--password", os.environ["PHALANX_PASSWORD"])
    asha = experiment("asha", "{name: adaptive_asha, metric: loss, max_trials: 20, "
                      "max_length: {batches: 300}, max_concurrent_trials: 20}", 1, 50)
    show("1. priority-2 ASHA experiment, 20 one-slot trials: 8 run on all 8 GPUs")

    dist1 = experiment("dist-1", "{name: single}", 4, 100)
    checkpoint_victims()
    show("2. priority-1 4-slot experiment: 4 ASHA trials checkpoint and requeue; it runs")

    nb_config = os.path.join(SPECS, "notebook.yaml")
    with open(nb_config, "w") as f:
        f.write("resources: {slots: 1, priority: 1, expected_runtime: 2h}\n")
    print("  $ phalanx notebook start --config notebook.yaml")
    notebook = cli("notebook", "start", "--config", nb_config).split()[2]
    show("3. priority-3 notebook: waits behind the queued trials")
    play_asha_until(asha, lambda: allocations(notebook, running=True), "the notebook never ran")
    show("3. ... ASHA trials stop at their rungs or finish; once the experiments need at most 7 GPUs "
         "the notebook runs")

    for a in allocations(dist1, running=True):
        complete(a)
    play_asha_until(asha, lambda: finished(asha), f"the ASHA search {asha} did not end")
    print(f"  $ phalanx experiment describe {asha.split('-')[1]}")
    for line in cli("experiment", "describe", asha.split("-")[1]).splitlines():
        print("   ", line)
    show("4. ASHA and dist-1 complete; the notebook keeps running")

    dist2 = experiment("dist-2", "{name: single}", 8, 100)
    show("5. priority-1 8-slot experiment: cannot run (the notebook holds 1 GPU, not preemptible)")
    why(dist2)

    dist3 = experiment("dist-3", "{name: single, metric: loss, max_length: {batches: 300}}", 4, 50)
    show("6. priority-2 4-slot experiment: backfills onto the idle 4 GPUs")

    print(f"  $ phalanx notebook kill {notebook}")
    cli("notebook", "kill", notebook)
    checkpoint_victims()
    show("7. the notebook is killed: dist-3 checkpoints and requeues; dist-2 runs")
    complete(allocations(dist2, running=True)[0])
    show("7. ... dist-2 completes; dist-3 restarts from its checkpoint")
    resumed = allocations(dist3, running=True)[0]
    print(f"  {resumed} resumes from checkpoint {pod_env(resumed, 'PHALANX_LATEST_CHECKPOINT')}")
    run_example(resumed)
    print("\n  $ phalanx experiment list")
    for line in cli("experiment", "list").splitlines():
        print("   ", line)


if __name__ == "__main__":
    main()
