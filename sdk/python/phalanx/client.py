"""A plain client of phalanx-master for notebooks and scripts: login, experiments, their trials'
metrics, and the job queue."""
from phalanx import _channel
from phalanx.v1 import (auth_pb2, auth_pb2_grpc, experiment_pb2, experiment_pb2_grpc, job_pb2,
                        job_pb2_grpc, metrics_pb2)

GROUPS = {"training": metrics_pb2.METRIC_GROUP_TRAINING,
          "validation": metrics_pb2.METRIC_GROUP_VALIDATION}


class Client:
    """Calls phalanx-master at `master` ("host:port" or "https://host:port") with `token` (set by
    login()). Refusals raise grpc.RpcError with the master's status and message."""

    def __init__(self, master, token=None, ca_pem=None):
        ch = _channel.channel(master, ca_pem)
        self.token = token
        self._auth = auth_pb2_grpc.AuthServiceStub(ch)
        self._experiments = experiment_pb2_grpc.ExperimentServiceStub(ch)
        self._jobs = job_pb2_grpc.JobServiceStub(ch)

    def _call(self, method, request):
        return _channel.call(method, request, self.token)

    def login(self, username, password):
        self.token = self._call(self._auth.Login,
                                auth_pb2.LoginRequest(username=username, password=password)).token
        return self.token

    def create_experiment(self, config_yaml, activate=True):
        """Not retried: a submission whose answer was lost may have been stored."""
        req = experiment_pb2.CreateExperimentRequest(config=config_yaml, activate=activate)
        return _channel.call(self._experiments.CreateExperiment, req, self.token,
                             retry_for=0).experiment

    def get_experiment(self, experiment_id):
        """The experiment and its trials (GetExperimentResponse)."""
        return self._call(self._experiments.GetExperiment,
                          experiment_pb2.GetExperimentRequest(id=experiment_id))

    def list_experiments(self, name="", limit=0):
        req = experiment_pb2.ListExperimentsRequest(name=name, limit=limit)
        return list(self._call(self._experiments.ListExperiments, req).experiments)

    def kill_experiment(self, experiment_id):
        self._call(self._experiments.KillExperiment,
                   experiment_pb2.KillExperimentRequest(id=experiment_id))

    def trial_metrics(self, trial_id, group="training"):
        """Every report of the group as [(steps, {name: value})], in steps order."""
        if group not in GROUPS:
            raise ValueError(f"group: training or validation, got {group!r}")
        out, after = [], -1
        while True:
            req = experiment_pb2.GetTrialMetricsRequest(trial_id=trial_id, group=GROUPS[group],
                                                        after_steps=after)
            resp = self._call(self._experiments.GetTrialMetrics, req)
            out += [(r.steps_completed, dict(r.metrics)) for r in resp.reports]
            if not resp.more or not resp.reports:
                return out
            after = resp.reports[-1].steps_completed

    def jobs(self):
        """The job queue (GetJobs)."""
        return list(self._call(self._jobs.GetJobs, job_pb2.GetJobsRequest()).jobs)
