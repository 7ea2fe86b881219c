// JobManager: the extender's forecast of a waiting job, read from its pods' annotations
// (phalanx.io/eta, phalanx.io/what-if, phalanx.io/expected-runtime-basis; see job_manager.h).
// The texts are the extender's; a text that does not read is left out, never an error.
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "master/jobs/job_manager.h"
#include "nlohmann/json.hpp"

namespace phalanx::master {
namespace {

constexpr size_t kMaxRefs = 16;

std::optional<int64_t> IntField(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

}  // namespace

GangRef JobManager::GangRefLocked(const std::string& gang) {
  GangRef ref{.gang = gang};
  const std::vector<absl::string_view> parts = absl::StrSplit(gang, absl::MaxSplits('/', 1));
  if (parts.size() != 2) return ref;
  const auto alloc = allocs_.find(std::string(parts[1]));
  if (alloc == allocs_.end() || alloc->second.rec.ns != parts[0]) return ref;
  ref.job_id = alloc->second.rec.job_id;
  if (const JobRecord* job = active_jobs_.Find(ref.job_id)) ref.username = job->username;
  return ref;
}

void JobManager::OutlookLocked(const PodState& pod, QueueEntry& entry) {
  entry.eta_basis = pod.expected_runtime_basis;
  absl::Time eta;
  std::string err;
  if (absl::StartsWith(pod.eta, "none: ")) {
    entry.eta_note = pod.eta.substr(6);
  } else if (absl::ParseTime(absl::RFC3339_full, pod.eta, &eta, &err)) {
    entry.eta_ms = absl::ToUnixMillis(eta);
  }
  const nlohmann::json w = nlohmann::json::parse(pod.what_if, nullptr, /*allow_exceptions=*/false);
  if (!w.is_object()) return;
  WhatIfAnswer& answer = entry.what_if.emplace();
  answer.slots = IntField(w, "slots");
  if (std::optional<int64_t> p = IntField(w, "priority"); p && *p >= INT32_MIN && *p <= INT32_MAX) {
    answer.priority = static_cast<int32_t>(*p);
  }
  // A pool is named only when it is one of this master's, other than the job's own.
  if (const auto pool = w.find("pool"); pool != w.end() && pool->is_string()) {
    const std::string& name = pool->get_ref<const std::string&>();
    if (name != entry.job.resource_pool && config_.FindPool(name) != nullptr) answer.pool = name;
  }
  for (auto [key, refs] :
       {std::pair{"victims", &answer.victims}, std::pair{"ahead", &answer.ahead}}) {
    const auto list = w.find(key);
    if (list == w.end() || !list->is_array()) continue;
    for (const nlohmann::json& g : *list) {
      if (refs->size() >= kMaxRefs) break;
      if (g.is_string()) refs->push_back(GangRefLocked(g.get<std::string>()));
    }
  }
}

}  // namespace phalanx::master
