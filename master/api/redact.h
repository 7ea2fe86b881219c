// Redaction of the secrets in a job's config (the YAML as submitted) for users who neither own the
// job nor are admins: the value of every mapping key that names a secret (access_key, secret_key,
// password, token, connection_string, credential(s), private_key, api_key, ... in any case, at any
// depth: checkpoint_storage and anywhere else), of every `{name: <such a name>, value: ...}` entry
// (pod env), and of every "NAME=value" string whose NAME is one (environment_variables) becomes
// "<redacted>".
#ifndef PHALANX_MASTER_API_REDACT_H_
#define PHALANX_MASTER_API_REDACT_H_

#include <string>

#include "absl/strings/string_view.h"

namespace phalanx::master {

// Whether a key or variable name names a secret.
bool NamesSecret(absl::string_view name);

// The config with its secrets redacted, as YAML (comments and layout are not kept); a config that
// does not parse is withheld whole.
std::string RedactSecrets(const std::string& yaml);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_API_REDACT_H_
