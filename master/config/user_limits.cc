// master.yaml keys of the multi-user boundary (see user_limits.h).
#include "master/config/user_limits.h"

#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kube/json.h"

namespace phalanx::master {
namespace {

constexpr int64_t kMaxQuota = 1000000;

// A DNS-1123 subdomain, as Kubernetes names Secrets.
bool IsSecretName(absl::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  for (char c : name) {
    if (!absl::ascii_islower(c) && !absl::ascii_isdigit(c) && c != '-' && c != '.') return false;
  }
  return absl::ascii_isalnum(name.front()) && absl::ascii_isalnum(name.back());
}

}  // namespace

absl::Status ParseQuotas(const YamlMap& root, QuotaConfig& quotas) {
  KUBE_ASSIGN_OR_RETURN(YamlMap m, root.Map("quotas"));
  const std::pair<absl::string_view, int*> keys[] = {
      {"max_active_experiments_per_user", &quotas.max_active_experiments_per_user},
      {"max_active_trials_per_user", &quotas.max_active_trials_per_user},
      {"max_queued_pods_per_user", &quotas.max_queued_pods_per_user},
  };
  KUBE_RETURN_IF_ERROR(m.CheckKeys({keys[0].first, keys[1].first, keys[2].first}));
  for (const auto& [key, out] : keys) {
    KUBE_ASSIGN_OR_RETURN(std::optional<int64_t> v, m.Int(key));
    if (!v) continue;
    if (*v < 0 || *v > kMaxQuota) {
      return FieldError(m.FieldPath(key), absl::StrCat("must be between 0 (unlimited) and ",
                                                       kMaxQuota, ", got ", *v));
    }
    *out = static_cast<int>(*v);
  }
  return absl::OkStatus();
}

const std::vector<absl::string_view>& StorageCredentialFields() {
  static const auto* fields = new std::vector<absl::string_view>{"access_key", "secret_key",
                                                                 "connection_string", "credential"};
  return *fields;
}

absl::StatusOr<std::string> TakeCredentialsSecret(const YamlMap& root) {
  if (!root.Has("checkpoint_storage")) return "";
  KUBE_ASSIGN_OR_RETURN(YamlMap storage, root.Map("checkpoint_storage"));
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> secret, storage.String("credentials_secret"));
  if (!secret) return "";
  if (!IsSecretName(*secret)) {
    return FieldError(storage.FieldPath("credentials_secret"),
                      absl::StrCat("must be a Kubernetes Secret name (lowercase letters, digits, "
                                   "'-' and '.', at most 253), got \"",
                                   absl::CEscape(secret->substr(0, 64)), "\""));
  }
  YAML::Node node = root.Get("checkpoint_storage");
  node.remove("credentials_secret");
  return *secret;
}

absl::Status ApplyCredentialsSecret(const std::string& secret, nlohmann::json& storage) {
  if (secret.empty()) return absl::OkStatus();
  if (const std::string inline_fields = InlineCredentials(storage); !inline_fields.empty()) {
    return FieldError(
        "checkpoint_storage",
        absl::StrCat(inline_fields, ": not allowed with credentials_secret; put them in Secret \"",
                     secret, "\" under those keys"));
  }
  storage["credentials_secret"] = secret;
  return absl::OkStatus();
}

std::string InlineCredentials(const nlohmann::json& storage) {
  std::vector<absl::string_view> found;
  for (absl::string_view field : StorageCredentialFields()) {
    if (storage.is_object() && storage.contains(std::string(field))) found.push_back(field);
  }
  return absl::StrJoin(found, ", ");
}

}  // namespace phalanx::master
