// Configuration parsing and validation.
#include "scheduler_extender/config.h"

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "yaml-cpp/yaml.h"

namespace phalanx::extender {
namespace {

using Setter = std::function<absl::Status(absl::string_view, ExtenderConfig&)>;

absl::Status Bad(absl::string_view key, absl::string_view what, absl::string_view value) {
  return absl::InvalidArgumentError(absl::StrCat(key, ": ", what, ", got \"", value, "\""));
}

Setter Int(int64_t min, int64_t ExtenderConfig::*field, absl::string_view key) {
  return [=](absl::string_view v, ExtenderConfig& c) {
    int64_t n;
    if (!absl::SimpleAtoi(v, &n) || n < min) {
      return Bad(key, absl::StrCat("must be an integer >= ", min), v);
    }
    c.*field = n;
    return absl::OkStatus();
  };
}

Setter Bool(bool ExtenderConfig::*field, absl::string_view key) {
  return [=](absl::string_view v, ExtenderConfig& c) {
    if (!absl::SimpleAtob(v, &(c.*field))) return Bad(key, "must be true or false", v);
    return absl::OkStatus();
  };
}

Setter Str(std::string ExtenderConfig::*field) {
  return [=](absl::string_view v, ExtenderConfig& c) {
    c.*field = std::string(v);
    return absl::OkStatus();
  };
}

absl::Status SetListen(absl::string_view v, ExtenderConfig& c) {
  size_t colon = v.rfind(':');
  int port;
  if (colon == absl::string_view::npos || !absl::SimpleAtoi(v.substr(colon + 1), &port) ||
      port < 0 || port > 65535) {
    return Bad("listen", "must be host:port", v);
  }
  c.listen_host = std::string(v.substr(0, colon));
  c.listen_port = port;
  return absl::OkStatus();
}

absl::Status SetSlotType(absl::string_view v, ExtenderConfig& c) {
  if (v == "gpu") {
    c.slots.type = gang::SlotPolicy::Type::kGpu;
  } else if (v == "cpu") {
    c.slots.type = gang::SlotPolicy::Type::kCpu;
  } else {
    return Bad("slot_type", "must be gpu or cpu", v);
  }
  return absl::OkStatus();
}

absl::Status SetCpusPerSlot(absl::string_view v, ExtenderConfig& c) {
  double cpus;
  if (!absl::SimpleAtod(v, &cpus) || !(cpus > 0) || std::isinf(cpus)) {
    return Bad("cpus_per_slot", "must be a positive number", v);
  }
  c.slots.milli_cpu_per_slot = static_cast<int64_t>(std::llround(cpus * 1000));
  return absl::OkStatus();
}

absl::Status SetMaxSlots(absl::string_view v, ExtenderConfig& c) {
  int32_t n;
  if (!absl::SimpleAtoi(v, &n) || n < 0) {
    return Bad("max_slots_per_pod", "must be an integer >= 0", v);
  }
  c.slots.max_slots_per_pod = n;
  return absl::OkStatus();
}

const std::map<std::string, Setter, std::less<>>& Setters() {
  static const auto* setters = new std::map<std::string, Setter, std::less<>>{
      {"listen", SetListen},
      {"tls_cert_file", Str(&ExtenderConfig::tls_cert_file)},
      {"tls_key_file", Str(&ExtenderConfig::tls_key_file)},
      {"max_body_bytes", Int(1024, &ExtenderConfig::max_body_bytes, "max_body_bytes")},
      {"kubeconfig", Str(&ExtenderConfig::kubeconfig)},
      {"bind", Bool(&ExtenderConfig::bind, "bind")},
      {"preemption", Bool(&ExtenderConfig::preemption, "preemption")},
      {"backfill", Bool(&ExtenderConfig::backfill, "backfill")},
      {"reservation_ttl_ms", Int(1, &ExtenderConfig::reservation_ttl_ms, "reservation_ttl_ms")},
      {"resync_ms", Int(10, &ExtenderConfig::resync_ms, "resync_ms")},
      {"best_fit_candidates", Int(0, &ExtenderConfig::best_fit_candidates, "best_fit_candidates")},
      {"slot_type", SetSlotType},
      {"slot_resource",
       [](absl::string_view v, ExtenderConfig& c) {
         if (v.empty()) return Bad("slot_resource", "must not be empty", v);
         if (v != "cpu") c.slots.gpu_resource = std::string(v);
         return absl::OkStatus();
       }},
      {"cpus_per_slot", SetCpusPerSlot},
      {"max_slots_per_pod", SetMaxSlots},
  };
  return *setters;
}

}  // namespace

absl::Status ApplySetting(absl::string_view key, absl::string_view value, ExtenderConfig& config) {
  auto it = Setters().find(key);
  if (it == Setters().end()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown setting \"", key, "\""));
  }
  return it->second(value, config);
}

absl::Status ApplyYaml(absl::string_view yaml, absl::string_view source, ExtenderConfig& config) {
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    if (root.IsNull()) return absl::OkStatus();
    if (!root.IsMap()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": must be a mapping"));
    }
    for (const auto& kv : root) {
      std::string key = kv.first.as<std::string>();
      if (!kv.second.IsScalar()) {
        return absl::InvalidArgumentError(absl::StrCat(source, ": ", key, ": must be a scalar"));
      }
      absl::Status st = ApplySetting(key, kv.second.Scalar(), config);
      if (!st.ok()) return absl::InvalidArgumentError(absl::StrCat(source, ": ", st.message()));
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": invalid YAML: ", e.what()));
  }
  return absl::OkStatus();
}

absl::StatusOr<ExtenderConfig> LoadConfig(const std::vector<std::string>& args) {
  ExtenderConfig config;
  std::vector<std::pair<std::string, std::string>> flags;
  for (size_t i = 0; i < args.size(); ++i) {
    absl::string_view a = args[i];
    if (a.substr(0, 2) != "--") {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", a, "\""));
    }
    a.remove_prefix(2);
    size_t eq = a.find('=');
    std::string key = absl::StrReplaceAll(a.substr(0, eq), {{"-", "_"}});
    if (eq != absl::string_view::npos) {
      flags.push_back({key, std::string(a.substr(eq + 1))});
    } else if (i + 1 < args.size()) {
      flags.push_back({key, args[++i]});
    } else {
      return absl::InvalidArgumentError(absl::StrCat("flag --", a, " needs a value"));
    }
  }
  for (const auto& [key, value] : flags) {
    if (key != "config") continue;
    std::ifstream in(value);
    if (!in) return absl::NotFoundError(absl::StrCat("config file ", value, " cannot be read"));
    std::stringstream text;
    text << in.rdbuf();
    if (absl::Status st = ApplyYaml(text.str(), value, config); !st.ok()) return st;
  }
  for (const auto& [key, value] : flags) {
    if (key == "config") continue;
    if (absl::Status st = ApplySetting(key, value, config); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("flag --", key, ": ", st.message()));
    }
  }
  if (config.tls_cert_file.empty() != config.tls_key_file.empty()) {
    return absl::InvalidArgumentError("tls_cert_file and tls_key_file must be set together");
  }
  return config;
}

}  // namespace phalanx::extender
