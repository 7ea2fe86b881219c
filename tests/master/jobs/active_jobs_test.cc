// ActiveJobs against a full sort: random adds, priority / position / pool changes and removals
// (fixed seed); after each, every pool's walk and count match sorting the jobs from scratch.
#include "master/jobs/active_jobs.h"

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace phalanx::master {
namespace {

std::vector<std::string> Walk(const ActiveJobs& jobs, const std::string& pool) {
  std::vector<std::string> out;
  jobs.ForEach(pool, [&](const JobRecord& j) {
    out.push_back(j.job_id);
    return true;
  });
  return out;
}

std::vector<std::string> Sorted(const std::map<std::string, JobRecord>& model,
                                const std::string& pool) {
  std::vector<const JobRecord*> jobs;
  for (const auto& [id, j] : model) {
    if (pool.empty() || j.resource_pool == pool) jobs.push_back(&j);
  }
  std::sort(jobs.begin(), jobs.end(), [](const JobRecord* a, const JobRecord* b) {
    return std::tie(a->resource_pool, b->priority, a->queue_position, a->submit_ms, a->job_id) <
           std::tie(b->resource_pool, a->priority, b->queue_position, b->submit_ms, b->job_id);
  });
  std::vector<std::string> out;
  for (const JobRecord* j : jobs) out.push_back(j->job_id);
  return out;
}

TEST(ActiveJobsTest, WalkMatchesAFullSortThroughRandomChanges) {
  std::mt19937 rng(7);
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  const std::vector<std::string> pools = {"a", "b", "gpu"};
  ActiveJobs jobs;
  std::map<std::string, JobRecord> model;
  for (int step = 0; step < 3000; ++step) {
    const std::string id = absl::StrCat("exp-", pick(300));
    if (pick(5) == 0) {
      jobs.Erase(id);
      model.erase(id);
    } else {
      JobRecord j = model.contains(id) ? model[id] : JobRecord{.job_id = id};
      j.resource_pool = pools[pick(3)];
      j.priority = 10 * pick(4);
      j.queue_position = pick(4) * 0.5;  // Ties on position fall to submission time, then id.
      if (j.submit_ms == 0) j.submit_ms = 1 + pick(20);
      jobs.Put(j);
      model[id] = j;
    }
    for (const std::string& pool : {std::string(), pools[pick(3)], std::string("none")}) {
      ASSERT_EQ(Walk(jobs, pool), Sorted(model, pool)) << "pool '" << pool << "', step " << step;
      ASSERT_EQ(jobs.Count(pool), static_cast<int>(Sorted(model, pool).size())) << pool;
    }
  }
}

TEST(ActiveJobsTest, WalkStopsWhenTheVisitorSaysSo) {
  ActiveJobs jobs;
  for (int i = 0; i < 5; ++i) jobs.Put({.job_id = absl::StrCat("exp-", i), .resource_pool = "a"});
  int seen = 0;
  jobs.ForEach("a", [&](const JobRecord&) { return ++seen < 2; });
  EXPECT_EQ(seen, 2);
}

}  // namespace
}  // namespace phalanx::master
