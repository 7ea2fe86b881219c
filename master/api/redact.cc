// Redaction of secrets in job configs (see redact.h).
#include "master/api/redact.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "master/config/yaml.h"

namespace phalanx::master {
namespace {

constexpr char kRedacted[] = "<redacted>";
// Deeper subtrees are withheld whole (accepted configs are far shallower).
constexpr int kMaxDepth = 64;

void Redact(YAML::Node node, int depth) {
  if (depth > kMaxDepth) {
    node = kRedacted;
    return;
  }
  if (node.IsMap()) {
    const YAML::Node name = node["name"];
    const bool secret_env = name.IsScalar() && NamesSecret(name.Scalar()) && node["value"];
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string key = it->first.IsScalar() ? it->first.Scalar() : "";
      if (NamesSecret(key) || (secret_env && key == "value")) {
        it->second = kRedacted;
      } else {
        Redact(it->second, depth + 1);
      }
    }
  } else if (node.IsSequence()) {
    for (YAML::Node item : node) {
      if (item.IsScalar()) {
        const std::string& text = item.Scalar();
        const size_t eq = text.find('=');
        if (eq != std::string::npos && NamesSecret(text.substr(0, eq))) {
          item = text.substr(0, eq + 1) + kRedacted;
        }
      } else {
        Redact(item, depth + 1);
      }
    }
  }
}

}  // namespace

bool NamesSecret(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (absl::string_view word :
       {"password", "passwd", "secret", "token", "access_key", "accesskey", "access_key_id",
        "connection_string", "credential", "private_key", "api_key", "apikey", "account_key"}) {
    if (absl::StrContains(lower, word)) return true;
  }
  return false;
}

std::string RedactSecrets(const std::string& yaml) {
  absl::StatusOr<YAML::Node> root = ParseYaml(yaml);
  if (!root.ok()) return "# config withheld: it holds no parseable YAML\n";
  Redact(*root, 0);
  YAML::Emitter out;
  out << *root;
  return std::string(out.c_str()) + "\n";
}

}  // namespace phalanx::master
