// Gang keys for pods.
#include "core/pod.h"

#include "absl/strings/str_cat.h"

namespace phalanx::core {

std::string PodInfo::GangKey() const { return absl::StrCat(ns, "/", gang.empty() ? name : gang); }

}  // namespace phalanx::core
