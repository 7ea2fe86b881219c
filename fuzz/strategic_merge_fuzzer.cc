// Fuzzes master::StrategicMergePod, which merges a user's pod_spec over the admin's default pod
// spec. The input is JSON: a two-element array is [base, patch]; any other object is a patch over
// a fixed default pod (containers, volumes, env, tolerations). Beyond no crash and no undefined
// behaviour it asserts: merging objects gives an object; the merge's output is already
// normalised (merging it over nothing gives it back: no nulls left to drop, no directives left to
// apply); and it serialises as the master sends it to the API server (dump() does not throw).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "master/policy/strategic_merge.h"
#include "nlohmann/json.hpp"

namespace {

const nlohmann::json& DefaultPod() {
  static const nlohmann::json* pod = new nlohmann::json(nlohmann::json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"labels": {"app": "phalanx"}, "annotations": {"a": "b"}},
    "spec": {
      "containers": [{"name": "determined-container", "image": "python:3.11-slim",
                      "env": [{"name": "A", "value": "1"}],
                      "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
                      "resources": {"limits": {"cpu": "1"}}}],
      "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}],
      "tolerations": [{"key": "k", "operator": "Exists"}]
    }
  })"));
  return *pod;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const nlohmann::json input =
      nlohmann::json::parse(data, data + size, /*cb=*/nullptr, /*allow_exceptions=*/false);
  if (input.is_discarded()) return 0;
  const bool pair = input.is_array() && input.size() == 2;
  const nlohmann::json& base = pair ? input[0] : DefaultPod();
  const nlohmann::json& patch = pair ? input[1] : input;
  // The contract: Pod objects or null (pod_spec_shape.h refuses anything else before a merge).
  auto pod_or_null = [](const nlohmann::json& j) { return j.is_object() || j.is_null(); };
  if (!pod_or_null(base) || !pod_or_null(patch)) return 0;

  const nlohmann::json merged = phalanx::master::StrategicMergePod(base, patch);
  if (!(base.is_null() && patch.is_null()) && !merged.is_object()) std::abort();
  if (phalanx::master::StrategicMergePod(merged, nullptr) != merged) std::abort();
  (void)merged.dump();
  return 0;
}
