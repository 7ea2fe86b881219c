// How the pod-spec policy words its refusals, and the JSON lookups its rules share
// (pod_spec_policy.cc, pod_security_fields.cc, pod_volume_policy.cc): each refusal is
// InvalidArgument "path: refused by pod_spec_policy (<why>)", the why naming the key that would
// allow it and the pool, or saying that no key does.
#ifndef PHALANX_MASTER_POLICY_POLICY_REFUSAL_H_
#define PHALANX_MASTER_POLICY_POLICY_REFUSAL_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace phalanx::master {

class PolicyRefusal {
 public:
  explicit PolicyRefusal(absl::string_view pool) : pool_(pool) {}

  // "(<key> is false in pool "p")": a flag that would allow it.
  absl::Status Refuse(absl::string_view path, absl::string_view key) const;
  // "(<key> is true in pool "p"<detail>)": a flag that forbids it.
  absl::Status RefuseWhileTrue(absl::string_view path, absl::string_view key,
                               absl::string_view detail = "") const;
  // "("<value>" is not in <key> of pool "p")".
  absl::Status NotListed(absl::string_view path, absl::string_view value,
                         absl::string_view key) const;
  // "(<why>)": a rule no pool relaxes.
  static absl::Status Never(absl::string_view path, absl::string_view why);

 private:
  std::string pool_;
};

// A pod spec's container lists, which the rules check alike.
inline constexpr absl::string_view kContainerLists[] = {"containers", "initContainers",
                                                        "ephemeralContainers"};

// The member `key` of `parent`; null when `parent` is no object or has no such member.
const nlohmann::json& JsonField(const nlohmann::json& parent, absl::string_view key);

// The index of the first item of `list` whose `key` is `value` (not null), if any.
std::optional<size_t> FindItem(const nlohmann::json& list, absl::string_view key,
                               const nlohmann::json& value);

// A JSON value as an error shows it: a string's text, else its JSON.
std::string JsonText(const nlohmann::json& value);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_POLICY_POLICY_REFUSAL_H_
