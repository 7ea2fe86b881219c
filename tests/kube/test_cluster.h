// Access to the e2e test cluster (tests/cluster/CMakeLists.txt): the KUBECONFIG that
// $PHALANX_TEST_CLUSTER_DIR/env exports, and names that do not collide between runs.
#ifndef PHALANX_TESTS_KUBE_TEST_CLUSTER_H_
#define PHALANX_TESTS_KUBE_TEST_CLUSTER_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kube/config.h"

namespace phalanx::testing {

// The config of the running test cluster; an error says what is missing.
absl::StatusOr<kube::Config> TestClusterConfig();

// "<prefix>-<8 random hex digits>", a valid object name and label value.
std::string UniqueName(absl::string_view prefix);

}  // namespace phalanx::testing

#endif  // PHALANX_TESTS_KUBE_TEST_CLUSTER_H_
