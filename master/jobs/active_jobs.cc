// ActiveJobs (see active_jobs.h).
#include "master/jobs/active_jobs.h"

namespace phalanx::master {

bool ActiveJobs::Less::operator()(const Entry& a, const Entry& b) const {
  if (a.job->resource_pool != b.job->resource_pool) {
    return a.job->resource_pool < b.job->resource_pool;
  }
  return preemption::QueueLess(a.key, b.key);
}
bool ActiveJobs::Less::operator()(const Entry& a, std::string_view pool) const {
  return a.job->resource_pool < pool;
}
bool ActiveJobs::Less::operator()(std::string_view pool, const Entry& b) const {
  return pool < b.job->resource_pool;
}

ActiveJobs::Entry ActiveJobs::EntryOf(const std::string& id, const JobRecord& job) {
  return Entry{.job = &job,
               .key = {.priority = job.priority,
                       .queue_position = job.queue_position,
                       .creation_ms = job.submit_ms,
                       .key = &id}};
}

void ActiveJobs::Put(const JobRecord& job) {
  auto [it, added] = by_id_.try_emplace(job.job_id, job);
  if (!added) {
    order_.erase(EntryOf(it->first, it->second));  // Before the record its order reads changes.
    --per_pool_.find(it->second.resource_pool)->second;
    it->second = job;
  }
  order_.insert(EntryOf(it->first, it->second));
  ++per_pool_[job.resource_pool];
}

void ActiveJobs::Erase(const std::string& job_id) {
  auto it = by_id_.find(job_id);
  if (it == by_id_.end()) return;
  order_.erase(EntryOf(it->first, it->second));
  --per_pool_.find(it->second.resource_pool)->second;
  by_id_.erase(it);
}

const JobRecord* ActiveJobs::Find(const std::string& job_id) const {
  auto it = by_id_.find(job_id);
  return it == by_id_.end() ? nullptr : &it->second;
}

void ActiveJobs::ForEach(std::string_view pool,
                         const std::function<bool(const JobRecord&)>& visit) const {
  auto [begin, end] =
      pool.empty() ? std::pair(order_.begin(), order_.end()) : order_.equal_range(pool);
  for (auto it = begin; it != end; ++it) {
    if (!visit(*it->job)) return;
  }
}

int ActiveJobs::Count(std::string_view pool) const {
  if (pool.empty()) return static_cast<int>(order_.size());
  auto it = per_pool_.find(pool);
  return it == per_pool_.end() ? 0 : it->second;
}

}  // namespace phalanx::master
