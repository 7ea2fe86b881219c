// Redaction of secrets in job configs and hyperparameters (see redact.h).
#include "master/api/redact.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "master/yaml/yaml.h"
#include "nlohmann/json.hpp"

namespace phalanx::master {
namespace {

constexpr char kRedacted[] = "<redacted>";
// Deeper subtrees are withheld whole (accepted configs are far shallower).
constexpr int kMaxDepth = 64;

// `name` split into lower-case words at separators and lower-to-upper case changes.
std::vector<std::string> Words(absl::string_view name) {
  std::vector<std::string> words(1);
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (!absl::ascii_isalnum(c)) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    if (absl::ascii_isupper(c) && i > 0 && absl::ascii_islower(name[i - 1]) &&
        !words.back().empty()) {
      words.emplace_back();
    }
    words.back().push_back(absl::ascii_tolower(c));
  }
  return words;
}


// A flag word (`-x`, `--x`) whose name names a secret.
bool SecretFlag(absl::string_view word) {
  return word.size() > 1 && word[0] == '-' && NamesSecret(word.substr(word[1] == '-' ? 2 : 1));
}

// `text` with the values of its secret `NAME=value` words and the words after secret flags
// redacted; other text (spacing included) is kept.
std::string RedactText(const std::string& text) {
  std::vector<std::string> words = absl::StrSplit(text, ' ');
  bool changed = false;
  for (size_t i = 0; i < words.size(); ++i) {
    const size_t eq = words[i].find('=');
    if (eq != std::string::npos && eq > 0 && NamesSecret(words[i].substr(0, eq))) {
      words[i] = words[i].substr(0, eq + 1) + kRedacted;
      changed = true;
    } else if (SecretFlag(words[i]) && i + 1 < words.size() && !words[i + 1].empty()) {
      words[++i] = kRedacted;
      changed = true;
    }
  }
  return changed ? absl::StrJoin(words, " ") : text;
}

void Redact(YAML::Node node, int depth) {
  if (depth > kMaxDepth) {
    node = kRedacted;
    return;
  }
  if (node.IsScalar()) {
    const std::string text = RedactText(node.Scalar());
    if (text != node.Scalar()) node = text;
  } else if (node.IsMap()) {
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
    bool after_flag = false;
    for (YAML::Node item : node) {
      if (after_flag && item.IsScalar()) {
        item = kRedacted;
        after_flag = false;
        continue;
      }
      after_flag = item.IsScalar() && SecretFlag(item.Scalar());
      Redact(item, depth + 1);
    }
  }
}

void RedactJson(nlohmann::json& node, int depth) {
  if (depth > kMaxDepth) {
    node = kRedacted;
  } else if (node.is_string()) {
    node = RedactText(node.get<std::string>());
  } else if (node.is_object()) {
    for (auto& [key, value] : node.items()) {
      if (NamesSecret(key)) {
        value = kRedacted;
      } else {
        RedactJson(value, depth + 1);
      }
    }
  } else if (node.is_array()) {
    bool after_flag = false;
    for (nlohmann::json& item : node) {
      if (after_flag && item.is_string()) {
        item = kRedacted;
        after_flag = false;
        continue;
      }
      after_flag = item.is_string() && SecretFlag(item.get<std::string>());
      RedactJson(item, depth + 1);
    }
  }
}

}  // namespace

bool NamesSecret(absl::string_view name) {
  const std::vector<std::string> words = Words(name);
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    for (absl::string_view secret : {"password", "passwords", "passwd", "secret", "secrets",
                                     "token", "credential", "credentials", "apikey", "accesskey"}) {
      if (w == secret) return true;
    }
    if (i + 1 == words.size()) break;
    const std::string& next = words[i + 1];
    for (absl::string_view first : {"access", "api", "private", "account", "auth", "encryption"}) {
      if (w == first && next == "key") return true;
    }
    if (w == "connection" && next == "string") return true;
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

std::string RedactJsonSecrets(const std::string& json) {
  nlohmann::json root = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return "{}";
  RedactJson(root, 0);
  return root.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace phalanx::master
