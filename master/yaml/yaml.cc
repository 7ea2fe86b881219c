// Strict YAML field access and YAML -> JSON conversion (see yaml.h).
#include "master/yaml/yaml.h"

#include <cmath>
#include <exception>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "master/yaml/utf8.h"
#include "master/yaml/yaml_bounds.h"

namespace phalanx::master {
namespace {

bool IsQuoted(const YAML::Node& node) { return node.Tag() == "!"; }

bool IsNullText(const std::string& s) {
  return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

std::optional<bool> BoolText(const std::string& s) {
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  return std::nullopt;
}

std::optional<int64_t> IntText(const std::string& s) {
  int64_t v = 0;
  if (s.find_first_not_of("+-0123456789") != std::string::npos || !absl::SimpleAtoi(s, &v)) {
    return std::nullopt;
  }
  return v;
}

std::optional<double> DoubleText(const std::string& s) {
  double v = 0;
  if (s.find_first_not_of("+-0123456789.eE") != std::string::npos || !absl::SimpleAtod(s, &v) ||
      !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

bool IsAbsent(const YAML::Node& node) {
  return !node.IsDefined() || node.IsNull() ||
         (node.IsScalar() && !IsQuoted(node) && IsNullText(node.Scalar()));
}

std::string Kind(const YAML::Node& node) {
  if (node.IsMap()) return "a mapping";
  if (node.IsSequence()) return "a sequence";
  return absl::StrCat("\"", node.Scalar(), "\"");
}

absl::Status NotUtf8Error(const std::string& path, size_t byte) {
  return FieldError(path.empty() ? "config" : path,
                    absl::StrCat("invalid UTF-8 at byte ", byte,
                                 " once its escapes are read (write the character itself, not \\_ "
                                 "or \\N)"));
}

// In one walk, the first of: a key that appears twice in one mapping (yaml-cpp keeps both entries,
// and readers would each see a different one), or a key or string that is not valid UTF-8 once its
// escapes are read (yaml-cpp writes `\_` and `\N` as the single bytes 0xA0 and 0x85). Paths read
// "a.b", "a[0].b".
absl::Status Unreadable(const YAML::Node& node, const std::string& path) {
  if (node.IsScalar()) {
    const size_t at = FirstInvalidUtf8(node.Scalar());
    return at == absl::string_view::npos ? absl::OkStatus() : NotUtf8Error(path, at);
  }
  if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      if (absl::Status s = Unreadable(node[i], absl::StrCat(path, "[", i, "]")); !s.ok()) return s;
    }
  }
  if (!node.IsMap()) return absl::OkStatus();
  absl::flat_hash_set<std::string> seen;
  for (const auto& entry : node) {
    const std::string& key = entry.first.Scalar();
    std::string at = path.empty() ? key : absl::StrCat(path, ".", key);
    if (!seen.insert(key).second) {
      return FieldError(at, "duplicate key (a key may appear once in a mapping)");
    }
    if (absl::Status s = Unreadable(entry.first, at); !s.ok()) return s;
    if (absl::Status s = Unreadable(entry.second, at); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status FieldError(absl::string_view path, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", message));
}

absl::StatusOr<YAML::Node> ParseYaml(absl::string_view text) {
  if (absl::Status bounds = CheckYamlBounds(text); !bounds.ok()) return bounds;
  try {
    YAML::Node node = YAML::Load(std::string(text));
    if (!node.IsDefined() || node.IsNull()) return YAML::Node(YAML::NodeType::Map);
    if (absl::Status s = Unreadable(node, ""); !s.ok()) return s;
    return node;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("invalid YAML at line ", e.mark.line + 1,
                                                   ", column ", e.mark.column + 1, ": ", e.msg));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("invalid YAML: ", e.what()));
  }
}

absl::StatusOr<YamlMap> YamlMap::Of(const YAML::Node& node, std::string path) {
  if (IsAbsent(node)) return YamlMap(YAML::Node(YAML::NodeType::Map), std::move(path));
  if (!node.IsMap()) {
    return FieldError(path.empty() ? "config" : path,
                      absl::StrCat("expected a mapping, got ", Kind(node)));
  }
  return YamlMap(node, std::move(path));
}

std::string YamlMap::FieldPath(absl::string_view key) const {
  return path_.empty() ? std::string(key) : absl::StrCat(path_, ".", key);
}

absl::Status YamlMap::CheckKeys(absl::Span<const absl::string_view> known) const {
  for (const auto& entry : node_) {
    const std::string key = entry.first.Scalar();
    bool found = false;
    for (absl::string_view k : known) found = found || k == key;
    if (!found) {
      return FieldError(FieldPath(key),
                        absl::StrCat("unknown field (known: ", absl::StrJoin(known, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> YamlMap::Keys() const {
  std::vector<std::string> keys;
  for (const auto& entry : node_) keys.push_back(entry.first.Scalar());
  return keys;
}

bool YamlMap::Has(absl::string_view key) const { return !IsAbsent(Get(key)); }

YAML::Node YamlMap::Get(absl::string_view key) const {
  for (const auto& entry : node_) {
    if (entry.first.Scalar() == key) return entry.second;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

absl::StatusOr<YamlMap> YamlMap::Map(absl::string_view key) const {
  return Of(Get(key), FieldPath(key));
}

absl::StatusOr<std::optional<std::string>> YamlMap::String(absl::string_view key) const {
  YAML::Node node = Get(key);
  if (IsAbsent(node)) return std::nullopt;
  if (!node.IsScalar()) {
    return FieldError(FieldPath(key), absl::StrCat("expected a string, got ", Kind(node)));
  }
  return node.Scalar();
}

absl::StatusOr<std::optional<int64_t>> YamlMap::Int(absl::string_view key) const {
  YAML::Node node = Get(key);
  if (IsAbsent(node)) return std::nullopt;
  std::optional<int64_t> v =
      node.IsScalar() && !IsQuoted(node) ? IntText(node.Scalar()) : std::nullopt;
  if (!v) return FieldError(FieldPath(key), absl::StrCat("expected an integer, got ", Kind(node)));
  return v;
}

absl::StatusOr<std::optional<double>> YamlMap::Double(absl::string_view key) const {
  YAML::Node node = Get(key);
  if (IsAbsent(node)) return std::nullopt;
  std::optional<double> v =
      node.IsScalar() && !IsQuoted(node) ? DoubleText(node.Scalar()) : std::nullopt;
  if (!v) return FieldError(FieldPath(key), absl::StrCat("expected a number, got ", Kind(node)));
  return v;
}

absl::StatusOr<std::optional<bool>> YamlMap::Bool(absl::string_view key) const {
  YAML::Node node = Get(key);
  if (IsAbsent(node)) return std::nullopt;
  std::optional<bool> v =
      node.IsScalar() && !IsQuoted(node) ? BoolText(node.Scalar()) : std::nullopt;
  if (!v) {
    return FieldError(FieldPath(key), absl::StrCat("expected true or false, got ", Kind(node)));
  }
  return v;
}

absl::StatusOr<std::string> YamlMap::RequiredString(absl::string_view key) const {
  absl::StatusOr<std::optional<std::string>> v = String(key);
  if (!v.ok()) return v.status();
  if (!v->has_value() || (*v)->empty()) return FieldError(FieldPath(key), "required");
  return **v;
}

absl::StatusOr<std::vector<std::string>> YamlMap::StringList(absl::string_view key) const {
  YAML::Node node = Get(key);
  std::vector<std::string> out;
  if (IsAbsent(node)) return out;
  if (node.IsScalar()) return std::vector<std::string>{node.Scalar()};
  if (!node.IsSequence()) {
    return FieldError(FieldPath(key), absl::StrCat("expected a list of strings, got ", Kind(node)));
  }
  for (size_t i = 0; i < node.size(); ++i) {
    if (!node[i].IsScalar()) {
      return FieldError(absl::StrCat(FieldPath(key), "[", i, "]"),
                        absl::StrCat("expected a string, got ", Kind(node[i])));
    }
    out.push_back(node[i].Scalar());
  }
  return out;
}

absl::StatusOr<nlohmann::json> YamlMap::Json(absl::string_view key) const {
  YAML::Node node = Get(key);
  if (IsAbsent(node)) return nlohmann::json();
  return YamlToJson(node);
}

nlohmann::json YamlToJson(const YAML::Node& node) {
  if (node.IsMap()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& entry : node) out[entry.first.Scalar()] = YamlToJson(entry.second);
    return out;
  }
  if (node.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : node) out.push_back(YamlToJson(item));
    return out;
  }
  if (!node.IsScalar()) return nullptr;
  const std::string& s = node.Scalar();
  if (IsQuoted(node)) return s;
  if (IsNullText(s)) return nullptr;
  if (std::optional<bool> b = BoolText(s)) return *b;
  if (std::optional<int64_t> i = IntText(s)) return *i;
  if (std::optional<double> d = DoubleText(s)) return *d;
  return s;
}

}  // namespace phalanx::master
