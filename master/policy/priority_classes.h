// Phalanx's PriorityClasses (deploy/helm/phalanx/templates/priority-classes.yaml) and the classes
// of the seeds' pod specs that map to them: which class a pod of a given priority takes, and which
// classes a user's pod spec may name (pod_spec_policy.h).
#ifndef PHALANX_MASTER_POLICY_PRIORITY_CLASSES_H_
#define PHALANX_MASTER_POLICY_PRIORITY_CLASSES_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace phalanx::master {

inline constexpr absl::string_view kPriorityClassPrefix = "phalanx-priority-";

// The priority class of `priority`: the chart's class of that value (phalanx-high-priority 100,
// phalanx-medium-priority 50, phalanx-low-priority 1), else "phalanx-priority-<priority>", which
// KubePodClient creates before the first pod that names it.
std::string PriorityClassFor(int priority);
// The value of a class PriorityClassFor names, for the job queue; nullopt for other classes
// (phalanx-system-priority, which is for phalanx's own pods, included).
std::optional<int> PriorityOfClass(absl::string_view name);

// Determined's class names as the seeds' pod specs write them (determined-high-priority,
// determined-medium-priority, determined-low-priority) become phalanx's class of the same level;
// any other name is returned as it is.
std::string MapSeedPriorityClass(absl::string_view name);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_POLICY_PRIORITY_CLASSES_H_
