// Integer resource vectors: CPU in millicores, memory in bytes, GPUs, node pods and any extended
// resource.
#ifndef PHALANX_CORE_RESOURCES_H_
#define PHALANX_CORE_RESOURCES_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace phalanx::core {

inline constexpr absl::string_view kCpu = "cpu";
inline constexpr absl::string_view kMemory = "memory";
inline constexpr absl::string_view kNvidiaGpu = "nvidia.com/gpu";
// A node's pod count limit (allocatable "pods"); every decoded pod requests 1 (kube/decode.h).
inline constexpr absl::string_view kPods = "pods";

// A named integer amount of a resource other than cpu, memory, nvidia.com/gpu and pods.
struct Scalar {
  std::string name;
  int64_t value = 0;
  bool operator==(const Scalar&) const = default;
};

class Resources {
 public:
  Resources() = default;
  Resources(int64_t milli_cpu, int64_t memory, int64_t gpu)
      : milli_cpu_(milli_cpu), memory_(memory), gpu_(gpu) {}

  // Parses a Kubernetes resource list ({"cpu": "500m", "memory": "1Gi", ...}). Errors name the
  // resource and the value.
  static absl::StatusOr<Resources> FromQuantities(
      const std::vector<std::pair<std::string, std::string>>& list);

  int64_t milli_cpu() const { return milli_cpu_; }
  int64_t memory() const { return memory_; }
  int64_t gpu() const { return gpu_; }
  int64_t pods() const { return pods_; }
  // Any resource by its Kubernetes name; "cpu" answers millicores. Absent resources are 0.
  // Inline: slot counting reads GPUs this way for every node of a request.
  int64_t Get(absl::string_view name) const {
    if (name == kNvidiaGpu) return gpu_;
    if (name == kCpu) return milli_cpu_;
    if (name == kMemory) return memory_;
    if (name == kPods) return pods_;
    return GetScalar(name);
  }
  void Set(absl::string_view name, int64_t value);

  Resources& operator+=(const Resources& o);
  Resources& operator-=(const Resources& o);
  friend Resources operator+(Resources a, const Resources& b) { return a += b; }
  friend Resources operator-(Resources a, const Resources& b) { return a -= b; }
  bool operator==(const Resources&) const = default;

  // True when every amount requested here is available in `avail`; as kube-scheduler's
  // NodeResourcesFit, a resource not requested fits even where overcommitted. Inline: the planner
  // asks it for every member on every node.
  bool FitsIn(const Resources& avail) const {
    if (Exceeds(milli_cpu_, avail.milli_cpu_) || Exceeds(memory_, avail.memory_) ||
        Exceeds(gpu_, avail.gpu_) || Exceeds(pods_, avail.pods_)) {
      return false;
    }
    return scalars_.empty() || ScalarsFitIn(avail);
  }
  // How many copies of this request fit in `avail` (a large number for an empty request).
  int64_t CopiesThatFit(const Resources& avail) const;
  bool IsZero() const;
  // True when no amount is negative.
  bool IsNonNegative() const;
  // Each amount as min(a, b), or max(a, b).
  static Resources Min(const Resources& a, const Resources& b);
  static Resources Max(const Resources& a, const Resources& b);
  // These amounts of the resources `mask` has a positive amount of; 0 for the others.
  Resources Where(const Resources& mask) const;

  // "cpu=500m memory=1073741824 nvidia.com/gpu=2 pods=1".
  std::string ToString() const;

 private:
  static bool Exceeds(int64_t need, int64_t have) { return need > 0 && need > have; }
  bool ScalarsFitIn(const Resources& avail) const;
  template <typename Op>
  void Combine(const Resources& o, Op op);
  int64_t GetScalar(absl::string_view name) const;

  int64_t milli_cpu_ = 0;
  int64_t memory_ = 0;
  int64_t gpu_ = 0;
  // A field, not a scalar: every decoded pod and node has it, and scalars cost a string compare
  // each (and spill past one) in the planner's inner loop.
  int64_t pods_ = 0;
  absl::InlinedVector<Scalar, 1> scalars_;  // Sorted by name, no zero entries.
};

}  // namespace phalanx::core

#endif  // PHALANX_CORE_RESOURCES_H_
