// The pod-spec policy's refusal messages (see policy_refusal.h).
#include "master/policy/policy_refusal.h"

#include "absl/strings/str_cat.h"
#include "master/yaml/yaml.h"

namespace phalanx::master {

absl::Status PolicyRefusal::Refuse(absl::string_view path, absl::string_view key) const {
  return Never(path, absl::StrCat(key, " is false in pool \"", pool_, "\""));
}

absl::Status PolicyRefusal::RefuseWhileTrue(absl::string_view path, absl::string_view key,
                                            absl::string_view detail) const {
  return Never(path, absl::StrCat(key, " is true in pool \"", pool_, "\"", detail));
}

absl::Status PolicyRefusal::NotListed(absl::string_view path, absl::string_view value,
                                      absl::string_view key) const {
  return Never(path, absl::StrCat("\"", value, "\" is not in ", key, " of pool \"", pool_, "\""));
}

absl::Status PolicyRefusal::Never(absl::string_view path, absl::string_view why) {
  return FieldError(path, absl::StrCat("refused by pod_spec_policy (", why, ")"));
}

const nlohmann::json& JsonField(const nlohmann::json& parent, absl::string_view key) {
  static const nlohmann::json kNull;
  if (!parent.is_object()) return kNull;
  auto it = parent.find(key);
  return it == parent.end() ? kNull : *it;
}

std::optional<size_t> FindItem(const nlohmann::json& list, absl::string_view key,
                               const nlohmann::json& value) {
  if (!list.is_array() || value.is_null()) return std::nullopt;
  for (size_t i = 0; i < list.size(); ++i) {
    if (JsonField(list[i], key) == value) return i;
  }
  return std::nullopt;
}

std::string JsonText(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

}  // namespace phalanx::master
