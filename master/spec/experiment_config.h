// Experiment configs (YAML): name, hyperparameters, searcher, resources, environment, checkpoint
// storage and the user's free-form data. ParseExperimentConfig validates against the master's
// config (resource pool, slots vs max_slots_per_pod) and that the searcher can make the trials
// (CheckTrials), so that a bad config is an INVALID_ARGUMENT at submit time naming the field, and
// validate_only checks what creating does.
#ifndef PHALANX_MASTER_SPEC_EXPERIMENT_CONFIG_H_
#define PHALANX_MASTER_SPEC_EXPERIMENT_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "master/config/config.h"
#include "master/config/config_parts.h"
#include "master/search/asha.h"
#include "nlohmann/json.hpp"

namespace phalanx::master {

// One hyperparameter: a constant, a numeric range or a list of choices.
struct Hyperparameter {
  enum class Type { kConst, kInt, kDouble, kLog, kCategorical };
  Type type = Type::kConst;
  nlohmann::json val;                // kConst.
  double minval = 0, maxval = 0;     // kInt, kDouble, kLog (exponents for kLog).
  double base = 10;                  // kLog.
  int count = 0;                     // Grid points of a range; 0 when unset.
  std::vector<nlohmann::json> vals;  // kCategorical.
};
// Where a hyperparameter sits under `hyperparameters`: {"lr"}, or {"optimizer", "lr"} inside a
// mapping without `type` (Determined's nested hyperparameters).
using HyperparameterPath = std::vector<std::string>;
// By path, sorted.
using Hyperparameters = std::vector<std::pair<HyperparameterPath, Hyperparameter>>;

struct SearcherConfig {
  // kSingle: one trial. kGrid: every grid point. kRandom: max_trials random samples.
  // kAdaptiveAsha: max_trials random samples, stopped and promoted at rungs (search/asha.h).
  enum class Kind { kSingle, kGrid, kRandom, kAdaptiveAsha };
  Kind kind = Kind::kSingle;
  int max_trials = 1;
  std::optional<int> max_concurrent_trials;
  std::string metric;
  bool smaller_is_better = true;
  nlohmann::json max_length;
  // kAdaptiveAsha: max_length is N or {batches|records|epochs: N}; asha.max_length is N.
  search::AshaParams asha;

  // What trials get in PHALANX_SEARCHER: {"name", "metric", "smaller_is_better", "max_length"}.
  nlohmann::json ForTrials() const;
};

struct ExperimentConfig {
  std::string name;
  std::vector<std::string> entrypoint;  // ParseEntrypoint's: a string runs with sh -c.
  Hyperparameters hyperparameters;
  SearcherConfig searcher;
  ResourcesConfig resources;  // resource_pool resolved.
  EnvironmentConfig environment;
  nlohmann::json checkpoint_storage;  // The experiment's, else the master's.
  std::optional<uint64_t> seed;       // reproducibility.experiment_seed.
  nlohmann::json data;                // The user's own `data` (any YAML), as written; or null.
  // How many failed runs are started again from their checkpoint, over all the trials (Determined's
  // max_restarts and default).
  int max_restarts = 5;
};

// A metric name trials may report (and a searcher's metric): 1-kMaxMetricName of [A-Za-z0-9_./-].
inline constexpr size_t kMaxMetricName = 128;
bool IsMetricName(absl::string_view name);

absl::StatusOr<ExperimentConfig> ParseExperimentConfig(absl::string_view yaml,
                                                       const MasterConfig& master);
// The `searcher` of a stored config alone: what reading its metrics needs, whatever master.yaml
// says now (a pool the experiment names may be gone).
absl::StatusOr<SearcherConfig> ParseStoredSearcher(absl::string_view yaml);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_SPEC_EXPERIMENT_CONFIG_H_
