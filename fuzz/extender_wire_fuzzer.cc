// Fuzzes the extender's request parsing (scheduler_extender/wire.h): each input is parsed as the
// body of a filter/prioritize (ExtenderArgs), a preempt (ExtenderPreemptionArgs) and a bind
// (ExtenderBindingArgs) request, as kube-scheduler sends them. Beyond no crash and no undefined
// behaviour it asserts: errors are InvalidArgument; ExtenderArgs in NodeList mode keep one JSON
// item per node name, in NodeNames mode none; and the replies built from what parsed (every node
// passing, every victim kept, the pod's name as a bind error) are valid JSON.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kube/placement_key.h"
#include "scheduler_extender/verbs.h"
#include "scheduler_extender/wire.h"
#include "simdjson.h"

namespace {

void CheckJson(const std::string& reply) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(reply).get(root) != simdjson::SUCCESS) std::abort();
}

// The extender decodes request pods with its key, so signatures are checked as in production.
const phalanx::kube::PlacementKey& Key() {
  static const phalanx::kube::PlacementKey key = phalanx::kube::PlacementKey::Random();
  return key;
}

template <typename T>
void CheckError(const absl::StatusOr<T>& parsed) {
  if (!parsed.ok() && !absl::IsInvalidArgument(parsed.status())) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace phalanx::extender;
  const absl::string_view body(reinterpret_cast<const char*>(data), size);

  absl::StatusOr<ExtenderArgs> args = ParseExtenderArgs(body, &Key());
  CheckError(args);
  if (args.ok()) {
    if (args->node_names_mode ? !args->node_json.empty()
                              : args->node_json.size() != args->nodes.size()) {
      std::abort();
    }
    FilterOutcome all_pass;
    all_pass.passed = args->nodes;
    CheckJson(EncodeFilterResult(*args, all_pass));
    CheckJson(EncodeHostPriorities(args->nodes, std::vector<int64_t>(args->nodes.size(), 0)));
  }

  absl::StatusOr<PreemptArgs> preempt = ParsePreemptArgs(body, &Key());
  CheckError(preempt);
  if (preempt.ok()) CheckJson(EncodePreemptResult(preempt->victims));

  absl::StatusOr<BindArgs> bind = ParseBindArgs(body);
  CheckError(bind);
  if (bind.ok()) CheckJson(EncodeBindResult(bind->pod_name));
  return 0;
}
