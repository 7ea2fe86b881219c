// ActiveJobs: the ACTIVE jobs by id and in queue order, kept in step with every job write, so
// that reading a page of the queue walks only up to the page instead of sorting every job.
// Order: pools by name, then the extender's order (preemption/queue.h): priority desc, queue
// position asc, submission time asc, job id.
#ifndef PHALANX_MASTER_JOBS_ACTIVE_JOBS_H_
#define PHALANX_MASTER_JOBS_ACTIVE_JOBS_H_

#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "master/store/records.h"
#include "preemption/queue.h"

namespace phalanx::master {

class ActiveJobs {
 public:
  ActiveJobs() = default;
  ActiveJobs(const ActiveJobs&) = delete;
  ActiveJobs& operator=(const ActiveJobs&) = delete;

  // Adds `job`, or replaces the job of its id (and its place in the order).
  void Put(const JobRecord& job);
  void Erase(const std::string& job_id);
  // The job of that id, or null.
  const JobRecord* Find(const std::string& job_id) const;

  // Jobs of `pool` (every pool when empty) in queue order until `visit` returns false.
  void ForEach(std::string_view pool, const std::function<bool(const JobRecord&)>& visit) const;
  // How many jobs ForEach(pool) visits.
  int Count(std::string_view pool) const;

 private:
  struct Entry {
    const JobRecord* job;  // In by_id_.
    preemption::QueueKey key;
  };
  struct Less {
    using is_transparent = void;
    bool operator()(const Entry& a, const Entry& b) const;
    bool operator()(const Entry& a, std::string_view pool) const;
    bool operator()(std::string_view pool, const Entry& b) const;
  };
  static Entry EntryOf(const std::string& id, const JobRecord& job);

  std::map<std::string, JobRecord> by_id_;  // Nodes stay put: entries point into them.
  std::set<Entry, Less> order_;
  std::map<std::string, int, std::less<>> per_pool_;
};

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_JOBS_ACTIVE_JOBS_H_
