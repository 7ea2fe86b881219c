// The admission queue order shared by the extender, the master's job list and the simulator.
//
// Order: higher priority first, then lower queue position, then earlier creation, then gang key.
#ifndef PHALANX_PREEMPTION_QUEUE_H_
#define PHALANX_PREEMPTION_QUEUE_H_

#include <vector>

#include "core/gang.h"

namespace phalanx::preemption {

bool QueueLess(const core::Gang& a, const core::Gang& b);

// The pending gangs of `gangs`, in queue order.
std::vector<const core::Gang*> PendingQueue(const std::vector<core::Gang>& gangs);

}  // namespace phalanx::preemption

#endif  // PHALANX_PREEMPTION_QUEUE_H_
