// Parsing of gloo_port_range and nccl_port_range (see port_range.h).
#include "master/config/port_range.h"

#include <optional>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kube/json.h"

namespace phalanx::master {
namespace {

constexpr int kMaxPort = 65535;

// A port 1-65535 written in decimal digits alone.
std::optional<int> Port(absl::string_view text) {
  int port = 0;
  if (text.empty() || text.size() > 5 || text.find_first_not_of("0123456789") != text.npos ||
      !absl::SimpleAtoi(text, &port) || port < 1 || port > kMaxPort) {
    return std::nullopt;
  }
  return port;
}

}  // namespace

absl::StatusOr<std::string> ParsePortRange(const YamlMap& m, absl::string_view key) {
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> text, m.String(key));
  if (!text) return std::string();
  const std::vector<absl::string_view> ends = absl::StrSplit(*text, absl::ByAnyChar(":-"));
  const std::optional<int> low = ends.size() <= 2 ? Port(ends.front()) : std::nullopt;
  const std::optional<int> high = ends.size() == 2 ? Port(ends.back()) : low;
  if (!low || !high || *low > *high) {
    return FieldError(
        m.FieldPath(key),
        absl::StrCat("must be \"MIN:MAX\" (or \"MIN-MAX\", or one port), ports 1-", kMaxPort,
                     " with MIN <= MAX, got \"", text->substr(0, 64), "\""));
  }
  return absl::StrCat(*low, ":", *high);
}

}  // namespace phalanx::master
