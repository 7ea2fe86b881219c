// The types of the pod spec fields phalanx merges or fills in (pod_builder.cc, strategic_merge.cc):
// a default pod spec in master.yaml or a task's environment.pod_spec with, say, a container name
// that is a number is refused with its path when the config is read, instead of failing while
// pods are built.
#ifndef PHALANX_MASTER_CONFIG_POD_SPEC_SHAPE_H_
#define PHALANX_MASTER_CONFIG_POD_SPEC_SHAPE_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace phalanx::master {

// OK when `pod` (a Pod object; `path` names it in errors) has Kubernetes' types where phalanx
// reads it: metadata labels and annotations map to strings (or null); spec.priorityClassName is a
// string; containers (also init and ephemeral), volumes and schedulingGates are lists of mappings,
// each with a string name; a container's env has string names, its volumeMounts string mountPaths,
// and its resources, requests and limits are mappings. Null anywhere is fine (it deletes in a
// merge). Of Kubernetes' patch directives only `$patch: replace` and `$patch: delete` apply
// (strategic_merge.h): any other `$` key is refused. Otherwise InvalidArgument
// "path.to.field: expected ..., got ...".
absl::Status CheckPodSpecShape(const nlohmann::json& pod, absl::string_view path);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_CONFIG_POD_SPEC_SHAPE_H_
