// JobManager: the pod requests it makes without its lock (see job_manager.h). Calls under the lock
// queue creations, deletions, relabels and annotations; StartLaunches and DoQueuedPodWork send them
// to the API server, kApiRequestsAtOnce at a time, and record what failed for the next tick.
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kube/decode.h"
#include "master/jobs/job_manager.h"
#include "master/jobs/parallel.h"
#include "master/pods/pod_builder.h"

namespace phalanx::master {
namespace {

// The status of `call` on each of `items` (an API request, made without the manager's lock,
// kApiRequestsAtOnce at a time), in their order.
template <typename T, typename Call>
std::vector<absl::Status> CallEach(const std::vector<T>& items, Call call) {
  std::vector<absl::Status> done(items.size());
  ForEachIndexAtOnce(items.size(), kApiRequestsAtOnce, [&](size_t i) { done[i] = call(items[i]); });
  return done;
}

// CallEach's failures, with their errors. NotFound counts as done: the pod is gone.
template <typename T, typename Call>
std::vector<std::pair<const T*, absl::Status>> Failures(const std::vector<T>& items, Call call) {
  const std::vector<absl::Status> done = CallEach(items, call);
  std::vector<std::pair<const T*, absl::Status>> failed;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!done[i].ok() && !absl::IsNotFound(done[i])) failed.emplace_back(&items[i], done[i]);
  }
  return failed;
}

}  // namespace

absl::Status JobManager::StartLaunches(const std::vector<Launch>& launches) {
  const std::vector<absl::Status> created = CreatePods(launches);
  absl::MutexLock lock(&mu_);
  absl::Status first;
  for (size_t i = 0; i < launches.size(); ++i) {
    absl::Status s = StartedLocked(launches[i].alloc, created[i]);
    if (!s.ok()) EventLocked(std::string(s.message()));
    first.Update(s);
    // A queue move made while the pods were being created relabelled only the pods that existed.
    const JobRecord* job = active_jobs_.Find(launches[i].alloc.rec.job_id);
    if (s.ok() && job != nullptr && job->queue_position != launches[i].queue_position) {
      RelabelLaterLocked(*job);
    }
  }
  return first;
}

void JobManager::DoQueuedPodWork() {
  while (true) {
    std::vector<Launch> launches;
    std::vector<PodRef> deletions;
    std::vector<Relabel> labels;
    std::vector<CheckpointTime> checkpoint_times;
    std::vector<StuckPod> stuck;
    {
      absl::MutexLock lock(&mu_);
      launches.swap(queued_launches_);
      deletions.swap(queued_deletions_);
      labels.swap(queued_labels_);
      checkpoint_times.swap(queued_checkpoint_times_);
      stuck.swap(queued_stuck_);
    }
    if (launches.empty() && deletions.empty() && labels.empty() && checkpoint_times.empty() &&
        stuck.empty()) {
      return;
    }
    DeletePods(deletions);
    ForceDeleteStuck(stuck);
    SetQueueLabels(labels);
    SetCheckpointTimes(checkpoint_times);
    // Failures are logged and retried; an undone run queues its pods' deletion.
    if (!launches.empty()) (void)StartLaunches(launches);
  }
}

void JobManager::DeleteLaterLocked(const std::string& ns, const std::string& name) {
  queued_deletions_.push_back({.ns = ns, .name = name});
}

void JobManager::RelabelLaterLocked(const JobRecord& job) {
  const std::string position = FormatQueuePosition(job.queue_position);
  for (const Alloc* a : AllocsOfJobLocked(job.job_id)) {
    for (const std::string& name : a->pod_names) {
      queued_labels_.push_back(
          {.pod = {.ns = a->rec.ns, .name = name}, .job_id = job.job_id, .position = position});
    }
  }
}

void JobManager::SetQueueLabels(const std::vector<Relabel>& labels) {
  auto failed = Failures(labels, [this](const Relabel& l) {
    return pods_.SetPodLabel(l.pod.ns, l.pod.name, std::string(kube::kQueuePositionLabel),
                             l.position);
  });
  if (failed.empty()) return;
  absl::MutexLock lock(&mu_);
  for (const auto& [l, s] : failed) {
    EventLocked(absl::StrCat("labelling pod ", l->pod.ns, "/", l->pod.name, " with its queue ",
                             "position: ", s.message(), "; tried again at the next tick"));
    relabel_jobs_.insert(l->job_id);
  }
}

void JobManager::AnnotateCheckpointLaterLocked(const Alloc& a, int64_t ms) {
  if (a.rec.state == AllocState::kTerminating) return;
  const std::string at = FormatPodTime(ms);
  for (const std::string& name : a.pod_names) {
    queued_checkpoint_times_.push_back({.pod = {.ns = a.rec.ns, .name = name}, .at = at});
  }
}

void JobManager::SetCheckpointTimes(const std::vector<CheckpointTime>& times) {
  auto failed = Failures(times, [this](const CheckpointTime& t) {
    return pods_.SetPodAnnotation(t.pod.ns, t.pod.name,
                                  std::string(kube::kCheckpointedAtAnnotation), t.at);
  });
  if (failed.empty()) return;
  absl::MutexLock lock(&mu_);
  stats_.checkpoint_annotation_failures += static_cast<int64_t>(failed.size());
  for (const auto& [t, s] : failed) {
    EventLocked(absl::StrCat("annotating pod ", t->pod.ns, "/", t->pod.name, " with its ",
                             "checkpoint time: ", s.message(), "; written again at the run's ",
                             "next checkpoint"));
  }
}

void JobManager::DeletePods(const std::vector<PodRef>& pods) {
  auto failed = Failures(pods, [this](const PodRef& pod) {
    return pod.service ? pods_.DeleteService(pod.ns, pod.name) : pods_.DeletePod(pod.ns, pod.name);
  });
  if (failed.empty()) return;
  absl::MutexLock lock(&mu_);
  for (const auto& [pod, s] : failed) {
    EventLocked(absl::StrCat("deleting ", pod->service ? "Service " : "pod ", pod->ns, "/",
                             pod->name, ": ", s.message(), "; tried again at the next tick"));
    failed_deletions_.push_back(*pod);
  }
}

std::vector<absl::Status> JobManager::CreatePods(const std::vector<Launch>& launches) {
  std::vector<absl::Status> first = CreateServices(launches);
  std::vector<std::pair<size_t, const nlohmann::json*>> pods;  // Launch index, pod.
  for (size_t i = 0; i < launches.size(); ++i) {
    if (!first[i].ok()) continue;  // No pod of a run its peers cannot find.
    for (const nlohmann::json& pod : launches[i].pods) pods.emplace_back(i, &pod);
  }
  const std::vector<absl::Status> created =
      CallEach(pods, [this](const auto& pod) { return pods_.CreatePod(*pod.second); });
  for (size_t k = 0; k < pods.size(); ++k) {
    absl::Status& s = first[pods[k].first];
    if (s.ok() && !absl::IsAlreadyExists(created[k])) s = created[k];
  }
  return first;
}

}  // namespace phalanx::master
