// A pod the master builds, as phalanx-extender decodes it (kube::DecodePod), with a uid as the API
// server gives one: what the extender reads of the master's labels and annotations.
#ifndef PHALANX_TESTS_MASTER_TESTING_DECODED_POD_H_
#define PHALANX_TESTS_MASTER_TESTING_DECODED_POD_H_

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "core/pod.h"
#include "kube/decode.h"
#include "simdjson.h"

namespace phalanx::testing {

inline core::PodInfo Decoded(nlohmann::json pod) {
  pod["metadata"]["uid"] = "uid-1";
  simdjson::dom::parser parser;
  simdjson::dom::element e;
  EXPECT_EQ(parser.parse(pod.dump()).get(e), simdjson::SUCCESS);
  absl::StatusOr<core::PodInfo> info = kube::DecodePod(e);
  EXPECT_TRUE(info.ok()) << info.status();
  return info.ok() ? *info : core::PodInfo{};
}

}  // namespace phalanx::testing

#endif  // PHALANX_TESTS_MASTER_TESTING_DECODED_POD_H_
