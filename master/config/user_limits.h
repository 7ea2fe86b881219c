// master.yaml keys of the multi-user boundary: `auth.allow_empty_password`, `quotas:` and
// `checkpoint_storage.credentials_secret` (the Secret that carries the master's storage
// credentials to task pods).
#ifndef PHALANX_MASTER_CONFIG_USER_LIMITS_H_
#define PHALANX_MASTER_CONFIG_USER_LIMITS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "master/yaml/yaml.h"
#include "nlohmann/json.hpp"

namespace phalanx::master {

// Per-user limits checked when work is submitted or activated; 0 = unlimited.
struct QuotaConfig {
  int max_active_experiments_per_user = 0;
  int max_active_trials_per_user = 0;
  int max_queued_pods_per_user = 0;
};

// `quotas:` of master.yaml (each 0..1000000).
absl::Status ParseQuotas(const YamlMap& root, QuotaConfig& quotas);

// The checkpoint storage fields that are credentials (s3: access_key, secret_key; azure:
// connection_string, credential): what a Secret named by credentials_secret holds, by these keys.
const std::vector<absl::string_view>& StorageCredentialFields();

// Takes `checkpoint_storage.credentials_secret` out of the document (the storage's own parser
// does not know it) and returns it, "" when unset; INVALID_ARGUMENT unless it is a Kubernetes
// Secret name.
absl::StatusOr<std::string> TakeCredentialsSecret(const YamlMap& root);

// With a credentials Secret, inline credentials in `storage` are refused (they would reach task
// pods as plain env); the Secret's name is recorded in the storage as "credentials_secret".
absl::Status ApplyCredentialsSecret(const std::string& secret, nlohmann::json& storage);

// Inline credentials in `storage` (master.yaml without credentials_secret): the fields, else "".
std::string InlineCredentials(const nlohmann::json& storage);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_CONFIG_USER_LIMITS_H_
