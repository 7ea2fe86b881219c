// Strict YAML reading for master.yaml and task configs: typed fields whose errors name the field
// path ("resources.slots_per_trial: expected an integer, got \"four\""), unknown keys rejected, and
// YAML subtrees (pod specs, hyperparameters) converted to JSON. Never throws.
#ifndef PHALANX_MASTER_YAML_YAML_H_
#define PHALANX_MASTER_YAML_YAML_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "nlohmann/json.hpp"
#include "yaml-cpp/yaml.h"

namespace phalanx::master {

// Parses a whole document; syntax errors carry the line and column, a key repeated in one mapping
// is an error naming its path. An empty document is an empty map. Depth, alias expansion and NUL
// characters are bounded first (yaml_bounds.h).
absl::StatusOr<YAML::Node> ParseYaml(absl::string_view text);

// A YAML mapping (an absent or null node reads as an empty one) and its path for errors.
class YamlMap {
 public:
  // InvalidArgument unless `node` is a mapping, null or undefined.
  static absl::StatusOr<YamlMap> Of(const YAML::Node& node, std::string path);

  const std::string& path() const { return path_; }
  // "path.key", or "key" at the root.
  std::string FieldPath(absl::string_view key) const;
  // Every key must be one of `known`; the error names the first unknown one and lists the others.
  absl::Status CheckKeys(absl::Span<const absl::string_view> known) const;

  // The keys in document order.
  std::vector<std::string> Keys() const;
  bool Has(absl::string_view key) const;
  // The raw node; undefined when absent.
  YAML::Node Get(absl::string_view key) const;
  absl::StatusOr<YamlMap> Map(absl::string_view key) const;
  // Absent or null fields read as nullopt.
  absl::StatusOr<std::optional<std::string>> String(absl::string_view key) const;
  absl::StatusOr<std::optional<int64_t>> Int(absl::string_view key) const;
  absl::StatusOr<std::optional<double>> Double(absl::string_view key) const;
  absl::StatusOr<std::optional<bool>> Bool(absl::string_view key) const;
  // Missing is an error naming the field.
  absl::StatusOr<std::string> RequiredString(absl::string_view key) const;
  // A sequence of strings, or one string read as a one-element sequence.
  absl::StatusOr<std::vector<std::string>> StringList(absl::string_view key) const;
  // The field as JSON (objects, arrays and typed scalars); null when absent.
  absl::StatusOr<nlohmann::json> Json(absl::string_view key) const;

 private:
  YamlMap(YAML::Node node, std::string path) : node_(std::move(node)), path_(std::move(path)) {}

  YAML::Node node_;
  std::string path_;
};

// A YAML node as JSON: quoted scalars are strings; plain ones are null, bool, integer, number or
// string by their text, as YAML 1.2's core schema reads them.
nlohmann::json YamlToJson(const YAML::Node& node);

// An InvalidArgument error "path: message".
absl::Status FieldError(absl::string_view path, absl::string_view message);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_YAML_YAML_H_
