// Parsing of db.sslmode (see db_sslmode.h).
#include "master/config/db_sslmode.h"

#include <optional>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kube/json.h"

namespace phalanx::master {

absl::StatusOr<std::string> ParseSslMode(const YamlMap& db) {
  static constexpr absl::string_view kModes[] = {"disable", "allow",     "prefer",
                                                 "require", "verify-ca", "verify-full"};
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> mode, db.String("sslmode"));
  if (!mode) return std::string("prefer");
  if (!absl::c_linear_search(kModes, *mode)) {
    return FieldError(db.FieldPath("sslmode"),
                      absl::StrCat("must be one of ", absl::StrJoin(kModes, ", "), ", got \"",
                                   mode->substr(0, 64), "\""));
  }
  return *mode;
}

}  // namespace phalanx::master
