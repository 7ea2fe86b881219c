"""phalanx.init(): the context of a trial process inside its task pod, from the environment the
master gives every task pod (docs/reference.md, "What task pods get" and "Rendezvous"). It talks to
phalanx-master with the allocation's own token."""
import contextlib
import json
import os
import re
import threading
import time
import uuid as uuidlib

import grpc

from phalanx import _channel
from phalanx.v1 import allocation_pb2, allocation_pb2_grpc, metrics_pb2

TRAINING_BATCH = 100  # Training reports sent together; validation reports go at once.
TRAINING_FLUSH_S = 10.0  # Buffered training reports wait at most this long (checked per report).
WATCH_S = 10  # Seconds of each WatchPreemption long poll.
METRIC_NAME = re.compile(r"[A-Za-z0-9_./-]{1,128}")  # What the master takes (docs/reference.md).


def _env(env, name):
    value = env.get(name)
    if not value:
        raise RuntimeError(f"phalanx.init: {name} is not set: run inside a phalanx task pod")
    return value


class DistributedContext:
    """The run's shape: one pod per rank, `local_size` processes per pod at one per slot."""

    def __init__(self, env):
        self.rank = int(env.get("PHALANX_POD_RANK", "0"))
        self.size = int(env.get("PHALANX_NUM_PODS", "1"))
        self.local_size = max(int(env.get("PHALANX_SLOTS_PER_POD", "1")), 1)
        self.world_size = int(env.get("PHALANX_WORLD_SIZE", str(self.size * self.local_size)))
        self.chief_addr = env.get("PHALANX_CHIEF_ADDR", "localhost")
        self.chief_port = int(env.get("PHALANX_CHIEF_PORT", "12355"))
        self.peers = env.get("PHALANX_PEER_ADDRS", self.chief_addr).split(",")

    @property
    def is_chief(self):
        return self.rank == 0


class PreemptContext:
    """Whether the master asked this run to stop: a background thread long-polls WatchPreemption,
    so should_preempt() never blocks."""

    def __init__(self, stub, allocation_id, token):
        self._stub, self._id, self._token = stub, allocation_id, token
        self._signal = threading.Event()
        self._stop = threading.Event()
        self.error = None  # Why watching stopped, when the master refused it.
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self):
        req = allocation_pb2.WatchPreemptionRequest(allocation_id=self._id, timeout_seconds=WATCH_S)
        while not self._stop.is_set() and not self._signal.is_set():
            try:
                resp = _channel.call(self._stub.WatchPreemption, req, self._token,
                                     timeout=WATCH_S + 30)
                if resp.preempt:
                    self._signal.set()
            except grpc.RpcError as e:
                if e.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                    self._stop.wait(1.0)
                    continue
                self.error = e
                return

    def should_preempt(self):
        return self._signal.is_set()

    def acknowledge(self):
        """Tells the master the run checkpointed and stops: its pods are deleted."""
        _channel.call(self._stub.AckPreemption,
                      allocation_pb2.AckPreemptionRequest(allocation_id=self._id), self._token)

    def close(self):
        self._stop.set()


class CheckpointContext:
    """Checkpoints in the master's storage. store_path() works on shared_fs storage (a directory
    every pod mounts, PHALANX_CHECKPOINT_DIR); with object storage, upload yourself and report()."""

    def __init__(self, stub, allocation_id, token, env):
        self._stub, self._id, self._token = stub, allocation_id, token
        self.latest = env.get("PHALANX_LATEST_CHECKPOINT") or None
        self.directory = env.get("PHALANX_CHECKPOINT_DIR") or None
        self.storage = json.loads(env.get("PHALANX_CHECKPOINT_STORAGE") or "null")

    def _dir(self):
        if self.directory is None:
            raise RuntimeError("checkpoint storage is not shared_fs: no PHALANX_CHECKPOINT_DIR")
        return self.directory

    @contextlib.contextmanager
    def store_path(self, metadata):
        """Yields (path, uuid) of a new checkpoint directory; on a clean exit writes
        metadata.json there and reports it at metadata["steps_completed"]."""
        uuid = str(uuidlib.uuid4())
        path = os.path.join(self._dir(), uuid)
        os.makedirs(path)
        yield path, uuid
        with open(os.path.join(path, "metadata.json"), "w") as f:
            json.dump(metadata, f)
        self.report(uuid, int(metadata.get("steps_completed", 0)))

    def restore_path(self, uuid=None):
        """The directory of checkpoint `uuid` (the trial's latest by default); None when none."""
        uuid = uuid or self.latest
        return None if uuid is None else os.path.join(self._dir(), uuid)

    def report(self, uuid, steps_completed):
        req = allocation_pb2.ReportCheckpointRequest(allocation_id=self._id, uuid=uuid,
                                                     steps_completed=steps_completed)
        _channel.call(self._stub.ReportCheckpoint, req, self._token)
        self.latest = uuid


class TrainContext:
    """Training and validation metrics. Training reports are sent in batches (TRAINING_BATCH, or
    after TRAINING_FLUSH_S, or before a validation report and at close); validation at once."""

    def __init__(self, stub, allocation_id, token):
        self._stub, self._id, self._token = stub, allocation_id, token
        self._pending = []
        self._since = time.monotonic()
        self.last_validation = (-1, set())  # (steps, names) of this process's last report.

    @staticmethod
    def _report(steps_completed, metrics):
        """ValueError for a name the master would refuse, before it joins a batch."""
        for name in metrics:
            if not isinstance(name, str) or not METRIC_NAME.fullmatch(name):
                raise ValueError(f"metric name {name!r}: 1-128 of [A-Za-z0-9_./-]")
        return metrics_pb2.MetricReport(steps_completed=steps_completed,
                                        metrics={k: float(v) for k, v in metrics.items()})

    def _send(self, group, reports):
        req = allocation_pb2.ReportMetricsRequest(allocation_id=self._id, group=group,
                                                  reports=reports)
        _channel.call(self._stub.ReportMetrics, req, self._token)

    def report_training_metrics(self, steps_completed, metrics):
        self._pending.append(self._report(steps_completed, metrics))
        if len(self._pending) >= TRAINING_BATCH or time.monotonic() - self._since > TRAINING_FLUSH_S:
            self.flush()

    def report_validation_metrics(self, steps_completed, metrics):
        self.flush()
        self._send(metrics_pb2.METRIC_GROUP_VALIDATION, [self._report(steps_completed, metrics)])
        self.last_validation = (steps_completed, set(metrics))

    def flush(self):
        """Sends the buffered training reports; kept for the next flush when sending fails."""
        if not self._pending:
            return
        self._send(metrics_pb2.METRIC_GROUP_TRAINING, self._pending)
        self._pending = []
        self._since = time.monotonic()


class SearcherOperation:
    """Train until `length` (in the searcher's max_length unit, `unit`)."""

    def __init__(self, length, unit):
        self.length, self.unit = length, unit


class SearcherContext:
    """The experiment's searcher as trials see it (PHALANX_SEARCHER): name, metric,
    smaller_is_better and max_length ({"batches": N}, {"epochs": N}, {"records": N}, or N)."""

    POLL_S = 1.0  # Between asks while the run's operation has not changed.

    def __init__(self, env, stub=None, allocation_id=None, token=None, train=None):
        searcher = json.loads(env.get("PHALANX_SEARCHER") or "{}")
        self.name = searcher.get("name", "single")
        self.metric = searcher.get("metric", "")
        self.smaller_is_better = searcher.get("smaller_is_better", True)
        max_length = searcher.get("max_length")
        if isinstance(max_length, dict) and len(max_length) == 1:
            (self.unit, self.max_length), = max_length.items()
        else:
            self.unit, self.max_length = "batches", max_length
        self._stub, self._id, self._token, self._train = stub, allocation_id, token, train

    def _ask(self):
        self._train.flush()
        req = allocation_pb2.GetSearcherOperationRequest(allocation_id=self._id)
        return _channel.call(self._stub.GetSearcherOperation, req, self._token)

    def operations(self):
        """How far to train. single, grid and random ask for max_length, once. adaptive_asha asks
        for its rungs one by one: train to op.length, report a validation value of `metric` at
        that many steps or more, and ask again; the iteration ends when the run is to stop (the
        trial waits for a promotion, reached its last rung, or is preempted): checkpoint and exit.
        A rank that asks before the chief reported waits for the report; a process that reported
        validation metrics at that length without `metric` gets a ValueError."""
        if self.name != "adaptive_asha":
            if self.max_length is not None:
                yield SearcherOperation(int(self.max_length), self.unit)
            return
        last = None
        while True:
            op = self._ask()
            if op.done:
                return
            if op.length != last:
                last = op.length
                yield SearcherOperation(op.length, self.unit)
                continue
            steps, names = self._train.last_validation
            if steps >= op.length and self.metric not in names:
                raise ValueError(f"the validation report at {steps} steps lacks the searcher's "
                                 f"metric {self.metric!r}: the searcher cannot rank the trial")
            time.sleep(self.POLL_S)


class Context:
    """What phalanx.init() gives a trial process; close() (or a `with` block) flushes metrics and
    stops watching for preemption."""

    def __init__(self, env):
        self.allocation_id = _env(env, "PHALANX_ALLOCATION_ID")
        token = _env(env, "PHALANX_ALLOCATION_TOKEN")
        ch = _channel.channel(_env(env, "PHALANX_MASTER"), env.get("PHALANX_MASTER_CA"))
        stub = allocation_pb2_grpc.AllocationServiceStub(ch)
        self._stub, self._token = stub, token
        self.trial_id = int(env["PHALANX_TRIAL_ID"]) if env.get("PHALANX_TRIAL_ID") else None
        self.hparams = json.loads(env.get("PHALANX_HPARAMS") or "{}")
        self.distributed = DistributedContext(env)
        self.checkpoint = CheckpointContext(stub, self.allocation_id, token, env)
        self.train = TrainContext(stub, self.allocation_id, token)
        self.searcher = SearcherContext(env, stub, self.allocation_id, token, self.train)
        self.preempt = PreemptContext(stub, self.allocation_id, token)

    def complete(self, success=True, error=""):
        """Reports the trial's end: success, or failure with `error` (not restarted)."""
        self.train.flush()
        req = allocation_pb2.ReportCompletionRequest(allocation_id=self.allocation_id,
                                                     success=success, error=error)
        _channel.call(self._stub.ReportCompletion, req, self._token)

    def close(self):
        try:
            self.train.flush()
        finally:
            self.preempt.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self.close()
        except Exception:
            if exc_type is None:
                raise  # Else the block's own exception goes on, not this one.


def init():
    """The trial's context, from its pod's environment."""
    return Context(os.environ)
