// master.yaml's db.sslmode: the libpq sslmode the master connects to Postgres with.
#ifndef PHALANX_MASTER_CONFIG_DB_SSLMODE_H_
#define PHALANX_MASTER_CONFIG_DB_SSLMODE_H_

#include <string>

#include "absl/status/statusor.h"
#include "master/yaml/yaml.h"

namespace phalanx::master {

// `db`'s sslmode: one of disable, allow, prefer, require, verify-ca, verify-full; "prefer" (libpq's
// default) when absent; any other value is an error naming the field.
absl::StatusOr<std::string> ParseSslMode(const YamlMap& db);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_CONFIG_DB_SSLMODE_H_
