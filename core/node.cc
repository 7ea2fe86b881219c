// Toleration matching (Kubernetes semantics) and label look-up.
#include "core/node.h"

#include <algorithm>

namespace phalanx::core {

bool Toleration::Tolerates(const Taint& t) const {
  if (!any_effect && effect != t.effect) return false;
  if (key.empty()) return op == Operator::kExists;
  if (key != t.key) return false;
  return op == Operator::kExists || value == t.value;
}

const std::string* FindLabel(const Labels& labels, absl::string_view key) {
  auto it = std::lower_bound(labels.begin(), labels.end(), key,
                             [](const auto& kv, absl::string_view k) { return kv.first < k; });
  if (it == labels.end() || it->first != key) return nullptr;
  return &it->second;
}

}  // namespace phalanx::core
