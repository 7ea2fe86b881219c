// Priority classes of the replay and the seeded rule that gives priorities to traces without any.
//
// Rule: jobs are visited in trace order (submit time, then line); each job whose trace gives no
// priority draws r = mt19937_64(seed)() % 100 (one draw per such job, none for the others):
// r < 10 -> high (90), r < 70 -> medium (50), else low (10). So 10% / 60% / 30% of the jobs, the
// same ones for the same seed on every platform (mt19937_64's sequence is fixed by the standard).
// Alibaba's qos maps to classes in trace.cc: LS and Guaranteed high, Burstable medium, BE low.
// Any integer priority is put in a class for reporting by bins: >= 90 high, >= 50 medium, else low.
#ifndef PHALANX_BENCH_REPLAY_PRIORITY_H_
#define PHALANX_BENCH_REPLAY_PRIORITY_H_

#include <cstdint>
#include <vector>

#include "bench/replay/trace.h"

namespace phalanx::replay {

inline constexpr int32_t kHighPriority = 90;
inline constexpr int32_t kMediumPriority = 50;
inline constexpr int32_t kLowPriority = 10;

enum class PriorityClass { kHigh = 0, kMedium = 1, kLow = 2 };
inline constexpr int kPriorityClasses = 3;

PriorityClass ClassOf(int32_t priority);
const char* ClassName(PriorityClass c);

// Fills in the priority of every job that has none, by the rule above.
void AssignPriorities(std::vector<TraceJob>& jobs, uint64_t seed);

}  // namespace phalanx::replay

#endif  // PHALANX_BENCH_REPLAY_PRIORITY_H_
