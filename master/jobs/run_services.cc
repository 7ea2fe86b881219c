// JobManager: the headless Service of each run of several pods (rendezvous.h), created before its
// pods, deleted with them, and set straight at start (see job_manager.h, 7.).
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "kube/json.h"
#include "master/jobs/job_manager.h"
#include "master/jobs/parallel.h"
#include "master/pods/rendezvous.h"

namespace phalanx::master {

std::vector<absl::Status> JobManager::CreateServices(const std::vector<Launch>& launches) {
  std::vector<absl::Status> done(launches.size());
  ForEachIndexAtOnce(launches.size(), kApiRequestsAtOnce, [&](size_t i) {
    if (launches[i].service.is_null()) return;
    absl::Status s = pods_.CreateService(launches[i].service);
    if (!s.ok() && !absl::IsAlreadyExists(s)) {
      // The API server's HTTP code (a payload) stays: it decides whether the run is refused for
      // good (StartedLocked).
      done[i] = absl::Status(s.code(), absl::StrCat("its Service: ", s.message()));
      s.ForEachPayload([&](absl::string_view url, const absl::Cord& payload) {
        done[i].SetPayload(url, payload);
      });
    }
  });
  return done;
}

void JobManager::DeleteRunLaterLocked(const Alloc& a) {
  for (const std::string& name : a.pod_names) DeleteLaterLocked(a.rec.ns, name);
  if (a.pod_names.size() > 1) {
    queued_deletions_.push_back({.ns = a.rec.ns, .name = a.rec.id, .service = true});
  }
}

absl::Status JobManager::RecoverServicesLocked(const std::string& ns) {
  KUBE_ASSIGN_OR_RETURN(std::vector<std::string> listed, pods_.ListServices(ns));
  const std::set<std::string> existing(listed.begin(), listed.end());
  for (const std::string& name : existing) {
    auto it = allocs_.find(name);
    if (it == allocs_.end() || it->second.rec.ns != ns) {
      KUBE_RETURN_IF_ERROR(pods_.DeleteService(ns, name));  // An orphan.
    }
  }
  for (const auto& [id, a] : allocs_) {
    if (a.rec.ns != ns || a.rec.pods < 2 || a.rec.state == AllocState::kTerminating ||
        existing.contains(id)) {
      continue;
    }
    absl::Status s = pods_.CreateService(RunService(ns, id, a.rec.job_id));
    if (!s.ok() && !absl::IsAlreadyExists(s)) return s;
  }
  return absl::OkStatus();
}

}  // namespace phalanx::master
