// Parsing and validation of experiment configs (see experiment_config.h).
#include "master/spec/experiment_config.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "kube/json.h"
#include "master/spec/searcher.h"
#include "master/yaml/yaml.h"

namespace phalanx::master {
namespace {

using Type = Hyperparameter::Type;

// A bound on max_restarts that no real experiment needs, so that a count cannot overflow.
constexpr int kMaxRestarts = 1000000;

absl::StatusOr<Type> ParseType(const YamlMap& m) {
  KUBE_ASSIGN_OR_RETURN(std::string type, m.RequiredString("type"));
  if (type == "const") return Type::kConst;
  if (type == "int") return Type::kInt;
  if (type == "double") return Type::kDouble;
  if (type == "log") return Type::kLog;
  if (type == "categorical") return Type::kCategorical;
  return FieldError(
      m.FieldPath("type"),
      absl::StrCat("must be const, int, double, log or categorical, got \"", type, "\""));
}

// Whole and within +-2^53, where every integer is exactly a double (and an int64).
bool IsExactInteger(double v) {
  constexpr double kLimit = 9007199254740992.0;
  return std::abs(v) <= kLimit && v == std::trunc(v);
}

absl::Status ParseRange(const YamlMap& m, Hyperparameter& hp) {
  KUBE_RETURN_IF_ERROR(m.CheckKeys({"type", "minval", "maxval", "base", "count"}));
  KUBE_ASSIGN_OR_RETURN(std::optional<double> min, m.Double("minval"));
  KUBE_ASSIGN_OR_RETURN(std::optional<double> max, m.Double("maxval"));
  if (!min) return FieldError(m.FieldPath("minval"), "required");
  if (!max) return FieldError(m.FieldPath("maxval"), "required");
  if (*max < *min) {
    return FieldError(m.FieldPath("maxval"), absl::StrCat("must be >= minval (", *min, ")"));
  }
  if (hp.type == Type::kInt && (!IsExactInteger(*min) || !IsExactInteger(*max))) {
    return FieldError(m.path(), "minval and maxval must be integers within +-2^53 for type int");
  }
  hp.minval = *min;
  hp.maxval = *max;
  KUBE_ASSIGN_OR_RETURN(std::optional<double> base, m.Double("base"));
  if (base && (hp.type != Type::kLog || *base <= 0)) {
    return FieldError(m.FieldPath("base"), "only for type log, and > 0");
  }
  hp.base = base.value_or(10);
  KUBE_ASSIGN_OR_RETURN(std::optional<int64_t> count, m.Int("count"));
  if (count && (*count < 1 || *count > 1000)) {
    return FieldError(m.FieldPath("count"), "must be between 1 and 1000");
  }
  hp.count = static_cast<int>(count.value_or(0));
  return absl::OkStatus();
}

// A mapping with `type`, else a constant.
absl::StatusOr<Hyperparameter> ParseHyperparameter(const YamlMap& parent, const std::string& name) {
  Hyperparameter hp;
  YAML::Node node = parent.Get(name);
  if (!node.IsMap() || !node["type"]) {
    hp.val = YamlToJson(node);
    return hp;
  }
  KUBE_ASSIGN_OR_RETURN(YamlMap m, parent.Map(name));
  KUBE_ASSIGN_OR_RETURN(hp.type, ParseType(m));
  if (hp.type == Type::kConst) {
    KUBE_RETURN_IF_ERROR(m.CheckKeys({"type", "val"}));
    KUBE_ASSIGN_OR_RETURN(hp.val, m.Json("val"));
  } else if (hp.type == Type::kCategorical) {
    KUBE_RETURN_IF_ERROR(m.CheckKeys({"type", "vals"}));
    KUBE_ASSIGN_OR_RETURN(nlohmann::json vals, m.Json("vals"));
    if (!vals.is_array() || vals.empty()) {
      return FieldError(m.FieldPath("vals"), "expected a non-empty list");
    }
    hp.vals.assign(vals.begin(), vals.end());
  } else {
    KUBE_RETURN_IF_ERROR(ParseRange(m, hp));
  }
  return hp;
}

// The hyperparameters in `m`, at `path`, into `out`: a non-empty mapping without `type` holds
// nested ones.
absl::Status ParseHyperparametersIn(const YamlMap& m, const HyperparameterPath& path,
                                    Hyperparameters& out) {
  for (const std::string& name : m.Keys()) {
    HyperparameterPath at = path;
    at.push_back(name);
    const YAML::Node node = m.Get(name);
    if (node.IsMap() && node.size() > 0 && !node["type"]) {
      KUBE_ASSIGN_OR_RETURN(YamlMap nested, m.Map(name));
      KUBE_RETURN_IF_ERROR(ParseHyperparametersIn(nested, at, out));
      continue;
    }
    KUBE_ASSIGN_OR_RETURN(Hyperparameter hp, ParseHyperparameter(m, name));
    out.emplace_back(std::move(at), std::move(hp));
  }
  return absl::OkStatus();
}

absl::StatusOr<Hyperparameters> ParseHyperparameters(const YamlMap& root) {
  KUBE_ASSIGN_OR_RETURN(YamlMap m, root.Map("hyperparameters"));
  Hyperparameters out;
  KUBE_RETURN_IF_ERROR(ParseHyperparametersIn(m, {}, out));
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

// max_length of adaptive_asha: N, or {batches|records|epochs: N}, N from 1 to 10^12.
absl::StatusOr<int64_t> AshaLength(const YamlMap& m, const nlohmann::json& v) {
  const std::string field = m.FieldPath("max_length");
  nlohmann::json n = v;
  if (v.is_object() && v.size() == 1) {
    const std::string unit = v.begin().key();
    if (unit != "batches" && unit != "records" && unit != "epochs") {
      return FieldError(field, absl::StrCat("the unit must be batches, records or epochs, got \"",
                                            absl::CHexEscape(unit.substr(0, 64)), "\""));
    }
    n = v.begin().value();
  }
  if (!n.is_number_integer() || n.get<int64_t>() < 1 || n.get<int64_t>() > int64_t{1000000000000}) {
    return FieldError(field,
                      "required for adaptive_asha: an integer from 1 to 10^12, or one of "
                      "{batches: N}, {records: N}, {epochs: N}");
  }
  return n.get<int64_t>();
}

absl::Status ParseAsha(const YamlMap& m, SearcherConfig& s) {
  KUBE_ASSIGN_OR_RETURN(s.asha.max_length, AshaLength(m, s.max_length));
  s.asha.max_trials = s.max_trials;
  if (s.metric.empty()) return FieldError(m.FieldPath("metric"), "required for adaptive_asha");
  if (!IsMetricName(s.metric)) {
    return FieldError(m.FieldPath("metric"),
                      absl::StrCat("a metric name is 1-", kMaxMetricName, " of [A-Za-z0-9_./-]"));
  }
  KUBE_ASSIGN_OR_RETURN(std::optional<double> divisor, m.Double("divisor"));
  if (divisor && !(*divisor > 1 && *divisor <= 100)) {
    return FieldError(m.FieldPath("divisor"), "must be > 1 and at most 100");
  }
  s.asha.divisor = divisor.value_or(4);
  KUBE_ASSIGN_OR_RETURN(std::optional<int64_t> max_rungs, m.Int("max_rungs"));
  KUBE_ASSIGN_OR_RETURN(std::optional<int64_t> num_rungs, m.Int("num_rungs"));
  if (max_rungs && num_rungs) {
    return FieldError(m.FieldPath("num_rungs"), "another name for max_rungs: give one of them");
  }
  const std::string rungs_key = num_rungs ? "num_rungs" : "max_rungs";
  const int64_t rungs = max_rungs.value_or(num_rungs.value_or(5));
  if (rungs < 1 || rungs > 20) return FieldError(m.FieldPath(rungs_key), "must be 1 to 20");
  s.asha.max_rungs = static_cast<int>(rungs);
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> mode, m.String("mode"));
  if (!mode || *mode == "standard") {
    s.asha.mode = search::AshaMode::kStandard;
  } else if (*mode == "aggressive") {
    s.asha.mode = search::AshaMode::kAggressive;
  } else if (*mode == "conservative") {
    s.asha.mode = search::AshaMode::kConservative;
  } else {
    return FieldError(m.FieldPath("mode"),
                      absl::StrCat("must be aggressive, standard or conservative, got \"",
                                   absl::CHexEscape(mode->substr(0, 64)), "\""));
  }
  return absl::OkStatus();
}

absl::StatusOr<SearcherConfig::Kind> SearcherKind(const YamlMap& m) {
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> name, m.String("name"));
  if (!name || *name == "single") return SearcherConfig::Kind::kSingle;
  if (*name == "grid") return SearcherConfig::Kind::kGrid;
  if (*name == "random") return SearcherConfig::Kind::kRandom;
  if (*name == "adaptive_asha") return SearcherConfig::Kind::kAdaptiveAsha;
  return FieldError(m.FieldPath("name"),
                    absl::StrCat("must be single, grid, random or adaptive_asha, got \"",
                                 absl::CHexEscape(name->substr(0, 64)), "\""));
}

absl::StatusOr<SearcherConfig> ParseSearcher(const YamlMap& root) {
  KUBE_ASSIGN_OR_RETURN(YamlMap m, root.Map("searcher"));
  KUBE_RETURN_IF_ERROR(
      m.CheckKeys({"name", "metric", "smaller_is_better", "max_trials", "max_concurrent_trials",
                   "max_length", "divisor", "max_rungs", "num_rungs", "mode"}));
  SearcherConfig s;
  KUBE_ASSIGN_OR_RETURN(s.kind, SearcherKind(m));
  const bool samples =
      s.kind == SearcherConfig::Kind::kRandom || s.kind == SearcherConfig::Kind::kAdaptiveAsha;
  KUBE_ASSIGN_OR_RETURN(std::optional<int64_t> max_trials, m.Int("max_trials"));
  if (samples && !max_trials) {
    return FieldError(m.FieldPath("max_trials"),
                      "required for the random and adaptive_asha searchers");
  }
  if (!samples && max_trials) {
    return FieldError(
        m.FieldPath("max_trials"),
        "only for the random and adaptive_asha searchers (single runs one trial, grid "
        "one per point)");
  }
  if (max_trials && (*max_trials < 1 || *max_trials > 10000)) {
    return FieldError(m.FieldPath("max_trials"), "must be between 1 and 10000");
  }
  s.max_trials = static_cast<int>(max_trials.value_or(1));
  KUBE_ASSIGN_OR_RETURN(std::optional<int64_t> concurrent, m.Int("max_concurrent_trials"));
  if (concurrent && *concurrent < 1) {
    return FieldError(m.FieldPath("max_concurrent_trials"), "must be > 0");
  }
  if (concurrent) s.max_concurrent_trials = static_cast<int>(*concurrent);
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> metric, m.String("metric"));
  s.metric = metric.value_or("");
  KUBE_ASSIGN_OR_RETURN(std::optional<bool> smaller, m.Bool("smaller_is_better"));
  s.smaller_is_better = smaller.value_or(true);
  KUBE_ASSIGN_OR_RETURN(s.max_length, m.Json("max_length"));
  if (s.kind == SearcherConfig::Kind::kAdaptiveAsha) {
    KUBE_RETURN_IF_ERROR(ParseAsha(m, s));
  } else {
    for (const char* key : {"divisor", "max_rungs", "num_rungs", "mode"}) {
      if (m.Has(key)) return FieldError(m.FieldPath(key), "only for the adaptive_asha searcher");
    }
  }
  return s;
}

absl::Status ParseTopLevel(const YamlMap& root, ExperimentConfig& c) {
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> name, root.String("name"));
  KUBE_ASSIGN_OR_RETURN(std::optional<std::string> description, root.String("description"));
  c.name = name.value_or(description.value_or("experiment"));
  KUBE_ASSIGN_OR_RETURN(c.entrypoint, ParseEntrypoint(root));
  KUBE_ASSIGN_OR_RETURN(YamlMap repro, root.Map("reproducibility"));
  KUBE_RETURN_IF_ERROR(repro.CheckKeys({"experiment_seed"}));
  KUBE_ASSIGN_OR_RETURN(std::optional<int64_t> seed, repro.Int("experiment_seed"));
  if (seed && *seed < 0) return FieldError(repro.FieldPath("experiment_seed"), "must be >= 0");
  if (seed) c.seed = static_cast<uint64_t>(*seed);
  KUBE_ASSIGN_OR_RETURN(c.data, root.Json("data"));
  KUBE_ASSIGN_OR_RETURN(std::optional<int64_t> restarts, root.Int("max_restarts"));
  if (restarts && (*restarts < 0 || *restarts > kMaxRestarts)) {
    return FieldError(root.FieldPath("max_restarts"), absl::StrCat("must be 0 to ", kMaxRestarts));
  }
  if (restarts) c.max_restarts = static_cast<int>(*restarts);
  return absl::OkStatus();
}

}  // namespace

bool IsMetricName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxMetricName) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '_' && c != '.' && c != '/' && c != '-') return false;
  }
  return true;
}

nlohmann::json SearcherConfig::ForTrials() const {
  static constexpr const char* kNames[] = {"single", "grid", "random", "adaptive_asha"};
  return {{"name", kNames[static_cast<int>(kind)]},
          {"metric", metric},
          {"smaller_is_better", smaller_is_better},
          {"max_length", max_length}};
}

absl::StatusOr<SearcherConfig> ParseStoredSearcher(absl::string_view yaml) {
  KUBE_ASSIGN_OR_RETURN(YAML::Node node, ParseYaml(yaml));
  KUBE_ASSIGN_OR_RETURN(YamlMap root, YamlMap::Of(node, ""));
  return ParseSearcher(root);
}

absl::StatusOr<ExperimentConfig> ParseExperimentConfig(absl::string_view yaml,
                                                       const MasterConfig& master) {
  KUBE_ASSIGN_OR_RETURN(YAML::Node node, ParseYaml(yaml));
  KUBE_ASSIGN_OR_RETURN(YamlMap root, YamlMap::Of(node, ""));
  KUBE_RETURN_IF_ERROR(root.CheckKeys({"name", "description", "entrypoint", "hyperparameters",
                                       "searcher", "resources", "environment", "checkpoint_storage",
                                       "reproducibility", "data", "max_restarts"}));
  ExperimentConfig c;
  KUBE_RETURN_IF_ERROR(ParseTopLevel(root, c));
  KUBE_ASSIGN_OR_RETURN(c.hyperparameters, ParseHyperparameters(root));
  KUBE_ASSIGN_OR_RETURN(c.searcher, ParseSearcher(root));
  KUBE_ASSIGN_OR_RETURN(c.resources, ParseResources(root, "slots_per_trial", 1));
  KUBE_ASSIGN_OR_RETURN(c.environment, ParseEnvironment(root));
  KUBE_ASSIGN_OR_RETURN(c.checkpoint_storage, ParseCheckpointStorage(root, "checkpoint_storage",
                                                                     master.checkpoint_storage));
  absl::StatusOr<const ResourcePoolConfig*> pool =
      ResolvePool(master, c.resources, "resources.slots_per_trial");
  if (!pool.ok()) return pool.status();
  KUBE_RETURN_IF_ERROR(CheckTrials(c.searcher, c.hyperparameters));
  return c;
}

}  // namespace phalanx::master
