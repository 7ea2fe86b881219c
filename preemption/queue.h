// The admission queue order shared by the extender, the master's job list and the simulator.
//
// Order: higher priority first, then lower queue position, then earlier creation, then gang key.
#ifndef PHALANX_PREEMPTION_QUEUE_H_
#define PHALANX_PREEMPTION_QUEUE_H_

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "core/gang.h"

namespace phalanx::preemption {

// What the order compares; `key` must outlive the QueueKey.
struct QueueKey {
  int32_t priority = 0;
  double queue_position = 0;
  int64_t creation_ms = 0;
  const std::string* key = nullptr;
};
QueueKey KeyOf(const core::Gang& gang);
// Inline: sorts of thousands of jobs call it for every comparison.
inline bool QueueLess(const QueueKey& a, const QueueKey& b) {
  return std::forward_as_tuple(b.priority, a.queue_position, a.creation_ms, *a.key) <
         std::forward_as_tuple(a.priority, b.queue_position, b.creation_ms, *b.key);
}
bool QueueLess(const core::Gang& a, const core::Gang& b);

// The pending gangs of `gangs`, in queue order.
std::vector<const core::Gang*> PendingQueue(const std::vector<core::Gang>& gangs);

}  // namespace phalanx::preemption

#endif  // PHALANX_PREEMPTION_QUEUE_H_
