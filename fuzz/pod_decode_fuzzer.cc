// Fuzzes kube::DecodePod and kube::DecodeNode (Pod and Node JSON from the API server's watch
// streams, as the extender and the master's informers decode them). Beyond no crash and no
// undefined behaviour it asserts: a decoded pod requests exactly one of the node's "pods" and its
// gang size is at least 1; an error is InvalidArgument.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "absl/status/statusor.h"
#include "core/node.h"
#include "core/pod.h"
#include "kube/decode.h"
#include "simdjson.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(reinterpret_cast<const char*>(data), size).get(root) != simdjson::SUCCESS) {
    return 0;
  }
  absl::StatusOr<phalanx::core::PodInfo> pod = phalanx::kube::DecodePod(root);
  if (pod.ok()) {
    if (pod->requests.pods() != 1 || pod->gang_size < 1) std::abort();
  } else if (!absl::IsInvalidArgument(pod.status())) {
    std::abort();
  }
  absl::StatusOr<phalanx::core::Node> node = phalanx::kube::DecodeNode(root);
  if (!node.ok() && !absl::IsInvalidArgument(node.status())) std::abort();
  return 0;
}
