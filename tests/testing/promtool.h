// Checks Prometheus text exposition with the real `promtool check metrics` (Debian `prometheus`).
#ifndef PHALANX_TESTS_TESTING_PROMTOOL_H_
#define PHALANX_TESTS_TESTING_PROMTOOL_H_

#include <string>

#include "absl/status/status.h"

namespace phalanx::testing {

// OK when promtool parses `exposition` and reports no lint problem; otherwise its output.
absl::Status PromtoolCheck(const std::string& exposition);

}  // namespace phalanx::testing

#endif  // PHALANX_TESTS_TESTING_PROMTOOL_H_
