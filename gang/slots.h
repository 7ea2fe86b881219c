// Slot accounting: what a "slot" is (a GPU, or a number of CPUs) and maxSlotsPerPod, globally and
// per resource pool.
#ifndef PHALANX_GANG_SLOTS_H_
#define PHALANX_GANG_SLOTS_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/resources.h"

namespace phalanx::gang {

struct SlotPolicy {
  enum class Type { kGpu, kCpu };
  Type type = Type::kGpu;
  std::string gpu_resource = std::string(core::kNvidiaGpu);  // Counted when type is kGpu.
  int64_t milli_cpu_per_slot = 1000;                         // Used when type is kCpu.
  int32_t max_slots_per_pod = 0;                             // 0: no limit.
  // Resource pool (core::PodInfo::pool) -> its own maxSlotsPerPod, replacing the global one.
  absl::flat_hash_map<std::string, int32_t> pool_max_slots_per_pod;

  // maxSlotsPerPod of the gangs of `pool` (0: no limit).
  int32_t MaxSlotsPerPod(absl::string_view pool) const {
    auto it = pool_max_slots_per_pod.find(pool);
    return it == pool_max_slots_per_pod.end() ? max_slots_per_pod : it->second;
  }

  // Slots that `r` requests (or offers): whole GPUs, or whole multiples of milli_cpu_per_slot.
  // Inline: counted for every node of a request.
  int64_t SlotsOf(const core::Resources& r) const {
    if (type == Type::kGpu) return r.Get(gpu_resource);
    return milli_cpu_per_slot > 0 ? r.milli_cpu() / milli_cpu_per_slot : 0;
  }
  // "1 GPU", "4 GPUs", "2 CPU slots": `n` slots, for reasons shown to people.
  std::string Count(int64_t n) const {
    return absl::StrCat(n, type == Type::kGpu ? " GPU" : " CPU slot", n == 1 ? "" : "s");
  }
};

}  // namespace phalanx::gang

#endif  // PHALANX_GANG_SLOTS_H_
