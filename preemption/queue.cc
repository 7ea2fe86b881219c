// Queue order.
#include "preemption/queue.h"

#include <algorithm>
#include <tuple>

namespace phalanx::preemption {

QueueKey KeyOf(const core::Gang& gang) {
  return QueueKey{.priority = gang.priority,
                  .queue_position = gang.queue_position,
                  .creation_ms = gang.creation_ms,
                  .key = &gang.key};
}

bool QueueLess(const core::Gang& a, const core::Gang& b) { return QueueLess(KeyOf(a), KeyOf(b)); }

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
