// Priority classes and the seeded priority rule (see priority.h).
#include "bench/replay/priority.h"

#include <random>

namespace phalanx::replay {

PriorityClass ClassOf(int32_t priority) {
  if (priority >= kHighPriority) return PriorityClass::kHigh;
  if (priority >= kMediumPriority) return PriorityClass::kMedium;
  return PriorityClass::kLow;
}

const char* ClassName(PriorityClass c) {
  switch (c) {
    case PriorityClass::kHigh:
      return "high";
    case PriorityClass::kMedium:
      return "medium";
    case PriorityClass::kLow:
      return "low";
  }
  return "unknown";
}

void AssignPriorities(std::vector<TraceJob>& jobs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (TraceJob& job : jobs) {
    if (job.priority) continue;
    const uint64_t r = rng() % 100;
    job.priority = r < 10 ? kHighPriority : r < 70 ? kMediumPriority : kLowPriority;
  }
}

}  // namespace phalanx::replay
