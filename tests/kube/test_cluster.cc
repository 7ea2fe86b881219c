// Reads the test cluster's env file (`export NAME=value` lines) for KUBECONFIG.
#include "tests/kube/test_cluster.h"

#include <cstdlib>
#include <random>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace phalanx::testing {

absl::StatusOr<kube::Config> TestClusterConfig() {
  const char* dir = std::getenv("PHALANX_TEST_CLUSTER_DIR");
  if (dir == nullptr || *dir == '\0') {
    return absl::FailedPreconditionError(
        "PHALANX_TEST_CLUSTER_DIR is not set: run e2e tests through ctest (fixture test_cluster)");
  }
  absl::StatusOr<std::string> env = kube::ReadFile(absl::StrCat(dir, "/env"));
  if (!env.ok()) return env.status();
  for (absl::string_view line : absl::StrSplit(*env, '\n')) {
    if (absl::ConsumePrefix(&line, "export KUBECONFIG=")) {
      return kube::LoadKubeconfig(std::string(absl::StripAsciiWhitespace(line)));
    }
  }
  return absl::NotFoundError(absl::StrCat(dir, "/env has no KUBECONFIG"));
}

std::string UniqueName(absl::string_view prefix) {
  static std::mt19937 rng{std::random_device{}()};
  return absl::StrFormat("%s-%08x", prefix, rng());
}

}  // namespace phalanx::testing
