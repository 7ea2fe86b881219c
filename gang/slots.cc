// Slot counting.
#include "gang/slots.h"

namespace phalanx::gang {

int64_t SlotPolicy::SlotsOf(const core::Resources& r) const {
  if (type == Type::kGpu) return r.Get(gpu_resource);
  if (milli_cpu_per_slot <= 0) return 0;
  return r.milli_cpu() / milli_cpu_per_slot;
}

}  // namespace phalanx::gang
