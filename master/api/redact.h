// Redaction of the secrets in what a job shows to users who neither own it nor are admins, its
// config (the YAML as submitted) and its trials' hyperparameters (JSON). A name names a secret when
// one of its words (split at non-alphanumerics and lower-to-upper case changes) is password(s),
// passwd, secret(s), token, credential(s), apikey or accesskey, or two adjacent words are
// access/api/private/account/auth/encryption + key or connection + string (`max_tokens` and
// `tokenizer` are not secrets). Redacted ("<redacted>"), at any depth: the value of every mapping
// key that names a secret; the value of every `{name: <such a name>, value: ...}` entry (pod env);
// in every string, the value of a `NAME=value` word whose NAME names a secret and the word after a
// flag (`-x`, `--x`) that does (`--password hunter2`), and in a list of strings (an entrypoint), the
// item after such a flag item.
#ifndef PHALANX_MASTER_API_REDACT_H_
#define PHALANX_MASTER_API_REDACT_H_

#include <string>

#include "absl/strings/string_view.h"

namespace phalanx::master {

// Whether a key, variable or flag name names a secret.
bool NamesSecret(absl::string_view name);

// The config with its secrets redacted, as YAML (comments and layout are not kept); a config that
// does not parse is withheld whole.
std::string RedactSecrets(const std::string& yaml);

// A JSON document (a trial's hyperparameters) with its secrets redacted; one that does not parse
// is withheld whole (an empty object).
std::string RedactJsonSecrets(const std::string& json);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_API_REDACT_H_
