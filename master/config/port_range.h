// task_container_defaults' gloo_port_range and nccl_port_range: the ports a run's GLOO and NCCL
// traffic between its pods may use, passed to task pods (rendezvous.h).
#ifndef PHALANX_MASTER_CONFIG_PORT_RANGE_H_
#define PHALANX_MASTER_CONFIG_PORT_RANGE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "master/yaml/yaml.h"

namespace phalanx::master {

// The range at `key` of `m`: "MIN:MAX" or "MIN-MAX" (Determined's forms), or one port, with ports
// 1-65535 and MIN <= MAX; returned as "MIN:MAX", "" when absent. Anything else is an error naming
// the field.
absl::StatusOr<std::string> ParsePortRange(const YamlMap& m, absl::string_view key);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_CONFIG_PORT_RANGE_H_
