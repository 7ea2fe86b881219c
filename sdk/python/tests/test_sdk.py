"""The SDK against a real phalanx-master (conftest.py): a trial process of a two-pod run uses every
part of phalanx.init()'s context with its pod's environment, is preempted and resumes from its
checkpoint; the plain client reads what it reported; bad input is refused with the field named."""
import json
import os
import pathlib
import subprocess
import sys
import time
import types

import grpc
import pytest

import phalanx

EXPERIMENT = """
name: sdk
hyperparameters: {lr: 0.1, layers: {type: categorical, vals: [4]}}
searcher: {name: single, metric: loss, smaller_is_better: true, max_length: {batches: 300}}
resources: {slots_per_trial: 16}
"""


def wait_for(predicate, what, timeout=60):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
    return value


def trial_context(kube, ns, allocation, rank, checkpoint_dir):
    """phalanx.Context as the trial process of pod `rank` gets it (its checkpoint mount, which the
    test cluster's fake nodes lack, is a local directory). A run is announced before its pods are
    all created, so this waits for the pod."""
    env = wait_for(lambda: kube.pod_env(ns, f"{allocation}-{rank}", missing_ok=True),
                   f"pod {allocation}-{rank}")
    env["PHALANX_CHECKPOINT_DIR"] = str(checkpoint_dir)
    return phalanx.Context(env)


def test_a_trial_reports_checkpoints_is_preempted_and_resumes(client, master, kube, tmp_path):
    _, ns, _ = master
    exp = client.create_experiment(EXPERIMENT)
    trial = client.get_experiment(exp.id).trials[0]
    alloc = trial.allocation_id

    with trial_context(kube, ns, alloc, 1, tmp_path) as ctx:
        d = ctx.distributed
        chief = f"{alloc}-0.{alloc}.{ns}.svc"
        assert (d.rank, d.size, d.local_size, d.world_size) == (1, 2, 8, 16)
        assert not d.is_chief
        assert (d.chief_addr, d.chief_port) == (chief, 12355)
        assert d.peers == [chief, f"{alloc}-1.{alloc}.{ns}.svc"]
        assert ctx.hparams == {"lr": 0.1, "layers": 4}
        assert ctx.trial_id == trial.id
        assert (ctx.searcher.metric, ctx.searcher.smaller_is_better) == ("loss", True)
        assert [(op.length, op.unit) for op in ctx.searcher.operations()] == [(300, "batches")]
        assert ctx.checkpoint.latest is None

        for step in range(1, 251):
            ctx.train.report_training_metrics(step, {"loss": 1.0 / step, "lr": 0.1})
        ctx.train.report_validation_metrics(250, {"loss": 0.25, "accuracy": 0.9})
        with ctx.checkpoint.store_path({"steps_completed": 250}) as (path, uuid):
            with open(os.path.join(path, "weights"), "w") as f:
                f.write("w")

        assert not ctx.preempt.should_preempt()
        running = phalanx.v1.common_pb2.ALLOCATION_STATE_RUNNING
        wait_for(lambda: client.get_experiment(exp.id).trials[0].allocation_state == running,
                 "the run to be running")
        for rank in (0, 1):
            kube.mark_preempted(ns, f"{alloc}-{rank}")
        wait_for(ctx.preempt.should_preempt, "the preemption signal", timeout=30)
        ctx.preempt.acknowledge()

    training = client.trial_metrics(trial.id, "training")
    assert [s for s, _ in training] == list(range(1, 251))
    assert training[-1][1] == {"loss": 1.0 / 250, "lr": 0.1}
    assert client.trial_metrics(trial.id, "validation") == [(250, {"loss": 0.25, "accuracy": 0.9})]
    with open(os.path.join(tmp_path, uuid, "metadata.json")) as f:
        assert json.load(f) == {"steps_completed": 250}

    # The next run resumes from the checkpoint, then completes.
    got = wait_for(lambda: (g := client.get_experiment(exp.id)).trials[0].allocation_id != alloc and g,
                   "the trial's next run")
    assert got.experiment.best_validation_metric == 0.25
    assert got.trials[0].latest_checkpoint == uuid
    nxt = got.trials[0].allocation_id
    with trial_context(kube, ns, nxt, 0, tmp_path) as ctx:
        assert ctx.distributed.is_chief
        assert ctx.checkpoint.latest == uuid
        assert os.path.exists(os.path.join(ctx.checkpoint.restore_path(), "weights"))
        ctx.train.report_validation_metrics(300, {"loss": 0.125})
        ctx.complete()
    got = client.get_experiment(exp.id)
    assert got.trials[0].state == phalanx.v1.experiment_pb2.TRIAL_STATE_COMPLETED
    assert got.trials[0].best_validation_metric == 0.125
    assert any(e.id == exp.id for e in client.list_experiments(name="sdk"))


def test_a_run_of_one_pod_is_its_own_chief(client, master, kube, tmp_path):
    _, ns, _ = master
    exp = client.create_experiment("name: one\nresources: {slots_per_trial: 4}\n")
    alloc = client.get_experiment(exp.id).trials[0].allocation_id
    with trial_context(kube, ns, alloc, 0, tmp_path) as ctx:
        d = ctx.distributed
        assert (d.rank, d.size, d.local_size, d.world_size, d.chief_addr) == (0, 1, 4, 4, "localhost")
        assert d.peers == ["localhost"]
    client.kill_experiment(exp.id)


def test_bad_input_is_refused_naming_the_field(client, master, kube, tmp_path):
    address, ns, _ = master
    with pytest.raises(grpc.RpcError) as e:
        phalanx.Client(address).login("admin", "wrong")
    assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
    with pytest.raises(RuntimeError, match="PHALANX_ALLOCATION_ID is not set"):
        phalanx.Context({})
    with pytest.raises(ValueError, match="group: training or validation"):
        client.trial_metrics(1, "test")

    exp = client.create_experiment("name: bad\nresources: {slots_per_trial: 1}\n")
    alloc = client.get_experiment(exp.id).trials[0].allocation_id
    with trial_context(kube, ns, alloc, 0, tmp_path) as ctx:
        # Refused before it joins a batch, which would otherwise be lost with it.
        with pytest.raises(ValueError, match=r"metric name 'bad name': 1-128 of \[A-Za-z0-9_./-\]"):
            ctx.train.report_training_metrics(1, {"bad name": 1})
        ctx.train.report_training_metrics(1, {"loss": 1})
        with pytest.raises(grpc.RpcError) as e:  # The master's own check.
            ctx.train._send(phalanx.v1.metrics_pb2.METRIC_GROUP_VALIDATION,
                            [phalanx.v1.metrics_pb2.MetricReport(steps_completed=1,
                                                                 metrics={"bad name": 1})])
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert 'reports[0].metrics: a name is 1-128 of [A-Za-z0-9_./-], got "bad name"' in e.value.details()
    trial_id = client.get_experiment(exp.id).trials[0].id
    assert client.trial_metrics(trial_id, "training") == [(1, {"loss": 1.0})]
    with pytest.raises(grpc.RpcError) as e:
        phalanx.Client(address, token="not-a-token").jobs()
    assert e.value.code() == grpc.StatusCode.UNAUTHENTICATED
    client.kill_experiment(exp.id)


def test_the_example_trains_checkpoints_and_completes(client, master, kube, tmp_path):
    """examples/train.py as the trial process of a one-pod trial: 250 batches, validated and
    checkpointed every 100 and at the end, then completed."""
    _, ns, _ = master
    exp = client.create_experiment(
        "name: example\nhyperparameters: {lr: 0.01}\n"
        "searcher: {name: single, metric: loss, max_length: {batches: 250}}\n"
        "resources: {slots_per_trial: 2}\n")
    trial = client.get_experiment(exp.id).trials[0]
    env = kube.pod_env(ns, f"{trial.allocation_id}-0")
    env["PHALANX_CHECKPOINT_DIR"] = str(tmp_path)
    example = pathlib.Path(__file__).parents[3] / "examples" / "train.py"
    run = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, **env})
    assert run.returncode == 0, run.stderr
    assert "completed at step 250" in run.stdout
    assert [s for s, _ in client.trial_metrics(trial.id, "validation")] == [100, 200, 250]
    assert len(client.trial_metrics(trial.id, "training")) == 250
    got = client.get_experiment(exp.id)
    assert got.trials[0].state == phalanx.v1.experiment_pb2.TRIAL_STATE_COMPLETED
    assert got.trials[0].best_validation_metric == pytest.approx(0.99 ** 250)
    latest = got.trials[0].latest_checkpoint
    with open(tmp_path / latest / "state.json") as f:
        assert json.load(f)["steps"] == 250


ASHA = """
name: asha
hyperparameters: {lr: {type: double, minval: 0.001, maxval: 0.05}}
searcher: {name: adaptive_asha, metric: loss, max_trials: 6, max_length: {batches: 300}, divisor: 3,
           max_rungs: 2, mode: aggressive, max_concurrent_trials: 2}
resources: {slots_per_trial: 1}
reproducibility: {experiment_seed: 7}
"""


def test_adaptive_asha_plays_the_example_as_its_trials(client, master, kube, tmp_path):
    """examples/train.py as every run of an adaptive_asha search (rungs of 100 and 300 batches,
    divisor 3, two runs at once): its loss falls faster with a larger lr, so the two best trials
    of rung 1 must reach rung 2; trials not promoted end their runs when told and release them."""
    _, ns, _ = master
    exp = client.create_experiment(ASHA)
    example = pathlib.Path(__file__).parents[3] / "examples" / "train.py"
    played = set()
    deadline = time.monotonic() + 240
    completed = phalanx.v1.experiment_pb2.EXPERIMENT_STATE_COMPLETED
    while (got := client.get_experiment(exp.id)).experiment.state != completed:
        assert time.monotonic() < deadline, f"the search did not end: {got}"
        runs = [t for t in got.trials if t.allocation_id and t.allocation_id not in played]
        if not runs:
            time.sleep(0.2)
            continue
        alloc = runs[0].allocation_id
        played.add(alloc)
        env = wait_for(lambda: kube.pod_env(ns, f"{alloc}-0", missing_ok=True), f"{alloc}'s pod")
        env["PHALANX_CHECKPOINT_DIR"] = str(tmp_path)
        run = subprocess.run([sys.executable, str(example)], capture_output=True, text=True,
                             timeout=120, env={**os.environ, **env})
        assert run.returncode == 0, run.stderr
        kube.finish_pods(ns, alloc)  # Exited: kwok's pods would run on.

    trials = sorted(got.trials, key=lambda t: -json.loads(t.hparams_json)["lr"])
    progress = [t.searcher_progress for t in trials]
    assert progress[:2] == ["rung 2 of 2 (300): done"] * 2, progress
    for t in trials:
        assert t.state == phalanx.v1.experiment_pb2.TRIAL_STATE_COMPLETED
        steps = [s for s, _ in client.trial_metrics(t.id, "validation")]
        if t.searcher_progress.endswith("done"):
            assert steps == [100, 200, 300]
        else:
            assert t.searcher_progress == "rung 1 of 2 (100): not promoted"
            assert steps == [100]
    best_lr = json.loads(trials[0].hparams_json)["lr"]
    assert got.experiment.best_validation_metric == pytest.approx((1 - best_lr) ** 300)
    assert any(t.runs == 2 for t in trials), "no trial was promoted after its run ended"


def test_asha_operations_name_a_missing_metric(monkeypatch):
    """A rung's validation report without the searcher's metric fails at once, naming it, rather
    than waiting for a result that cannot come."""
    from phalanx.context import SearcherContext, TrainContext

    monkeypatch.setattr(TrainContext, "_send", lambda self, group, reports: None)
    train = TrainContext(stub=None, allocation_id="exp-1-trial-1-r1", token="t")
    searcher = SearcherContext({"PHALANX_SEARCHER": json.dumps(
        {"name": "adaptive_asha", "metric": "loss", "max_length": {"batches": 9}})}, train=train)
    monkeypatch.setattr(SearcherContext, "_ask", lambda self: types.SimpleNamespace(length=3, done=False))
    ops = searcher.operations()
    assert (next(ops).length, searcher.unit) == (3, "batches")
    train.report_validation_metrics(3, {"accuracy": 0.5})
    with pytest.raises(ValueError, match="lacks the searcher's metric 'loss'"):
        next(ops)


def test_training_reports_survive_a_failed_send(monkeypatch):
    """A batch the master did not take stays buffered for the next flush."""
    from phalanx.context import TrainContext

    sent, fail = [], [True]

    def send(self, group, reports):
        if fail[0]:
            raise ConnectionError("master down")
        sent.append([r.steps_completed for r in reports])

    monkeypatch.setattr(TrainContext, "_send", send)
    train = TrainContext(stub=None, allocation_id="exp-1-trial-1-r1", token="t")
    train.report_training_metrics(1, {"loss": 1})
    with pytest.raises(ConnectionError):
        train.flush()
    train.report_training_metrics(2, {"loss": 0.5})
    fail[0] = False
    train.flush()
    assert sent == [[1, 2]]
