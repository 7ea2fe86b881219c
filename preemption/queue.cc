// Queue order.
#include "preemption/queue.h"

#include <algorithm>
#include <tuple>

namespace phalanx::preemption {

bool QueueLess(const core::Gang& a, const core::Gang& b) {
  return std::forward_as_tuple(b.priority, a.queue_position, a.creation_ms, a.key) <
         std::forward_as_tuple(a.priority, b.queue_position, b.creation_ms, b.key);
}

std::vector<const core::Gang*> PendingQueue(const std::vector<core::Gang>& gangs) {
  std::vector<const core::Gang*> queue;
  for (const core::Gang& g : gangs) {
    if (g.Pending()) queue.push_back(&g);
  }
  std::sort(queue.begin(), queue.end(),
            [](const core::Gang* a, const core::Gang* b) { return QueueLess(*a, *b); });
  return queue;
}

}  // namespace phalanx::preemption
