// Trials of an experiment from its searcher and hyperparameters; each trial runs as one gang. The
// searchers search every typed hyperparameter, nested ones included, as one flat space.
//   single: one trial; a range takes its midpoint (for log: base^midpoint of the exponents), a
//           categorical its first value.
//   grid:   the cartesian product of every hyperparameter's points: `count` evenly spaced points
//           per range (required), every value of a categorical. At most 10000 trials.
//   random: max_trials samples, uniform per range (uniform exponent for log), from a PRNG seeded
//           with `seed`: the same seed gives the same trials.
//   adaptive_asha: max_trials samples as for random; master/search/asha.h decides how far each
//           trains.
#ifndef PHALANX_MASTER_SPEC_SEARCHER_H_
#define PHALANX_MASTER_SPEC_SEARCHER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "master/spec/experiment_config.h"
#include "nlohmann/json.hpp"

namespace phalanx::master {

// OK when GenerateTrials makes the trials: a grid's ranges have counts and it has at most 10000
// points. Makes none of them.
absl::Status CheckTrials(const SearcherConfig& searcher, const Hyperparameters& hyperparameters);

// Each trial's hyperparameters as a JSON object {name: value}, nested hyperparameters nested as
// in the config ({"optimizer": {"lr": 0.01}}).
absl::StatusOr<std::vector<nlohmann::json>> GenerateTrials(const SearcherConfig& searcher,
                                                           const Hyperparameters& hyperparameters,
                                                           uint64_t seed);

}  // namespace phalanx::master

#endif  // PHALANX_MASTER_SPEC_SEARCHER_H_
