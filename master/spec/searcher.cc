// Trial generation for the single, grid, random and adaptive_asha searchers (see searcher.h).
#include "master/spec/searcher.h"

#include <cmath>
#include <random>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace phalanx::master {
namespace {

using Type = Hyperparameter::Type;
constexpr size_t kMaxGridTrials = 10000;

// A range value from its position t in [0, 1].
nlohmann::json RangeValue(const Hyperparameter& hp, double t) {
  const double x = hp.minval + t * (hp.maxval - hp.minval);
  switch (hp.type) {
    case Type::kInt:
      return static_cast<int64_t>(std::llround(x));
    case Type::kLog:
      return std::pow(hp.base, x);
    default:
      return x;
  }
}

nlohmann::json SingleValue(const Hyperparameter& hp) {
  if (hp.type == Type::kConst) return hp.val;
  if (hp.type == Type::kCategorical) return hp.vals.front();
  return RangeValue(hp, 0.5);
}

// Sets `value` at `path` in `trial`, making the mappings on the way.
void SetAt(nlohmann::json& trial, const HyperparameterPath& path, nlohmann::json value) {
  nlohmann::json* at = &trial;
  for (const std::string& key : path) at = &(*at)[key];
  *at = std::move(value);
}

absl::StatusOr<std::vector<nlohmann::json>> GridPoints(const HyperparameterPath& path,
                                                       const Hyperparameter& hp) {
  if (hp.type == Type::kConst) return std::vector<nlohmann::json>{hp.val};
  if (hp.type == Type::kCategorical) return hp.vals;
  if (hp.count == 0) {
    return absl::InvalidArgumentError(absl::StrCat("hyperparameters.", absl::StrJoin(path, "."),
                                                   ".count: required for the grid searcher"));
  }
  std::vector<nlohmann::json> points;
  for (int i = 0; i < hp.count; ++i) {
    nlohmann::json v =
        RangeValue(hp, hp.count == 1 ? 0.0 : static_cast<double>(i) / (hp.count - 1));
    if (points.empty() || points.back() != v) points.push_back(std::move(v));
  }
  return points;
}

// Each hyperparameter's grid points, in the order of `hps`.
absl::StatusOr<std::vector<std::vector<nlohmann::json>>> GridAxes(const Hyperparameters& hps) {
  std::vector<std::vector<nlohmann::json>> axes;
  size_t trials = 1;
  for (const auto& [path, hp] : hps) {
    absl::StatusOr<std::vector<nlohmann::json>> points = GridPoints(path, hp);
    if (!points.ok()) return points.status();
    trials *= points->size();
    if (trials > kMaxGridTrials) {
      return absl::InvalidArgumentError(
          absl::StrCat("hyperparameters: the grid has more than ", kMaxGridTrials, " trials"));
    }
    axes.push_back(*std::move(points));
  }
  return axes;
}

absl::StatusOr<std::vector<nlohmann::json>> Grid(const Hyperparameters& hps) {
  absl::StatusOr<std::vector<std::vector<nlohmann::json>>> axes = GridAxes(hps);
  if (!axes.ok()) return axes.status();
  std::vector<nlohmann::json> trials = {nlohmann::json::object()};
  for (size_t i = 0; i < hps.size(); ++i) {
    std::vector<nlohmann::json> next;
    for (const nlohmann::json& trial : trials) {
      for (const nlohmann::json& point : (*axes)[i]) {
        nlohmann::json t = trial;
        SetAt(t, hps[i].first, point);
        next.push_back(std::move(t));
      }
    }
    trials = std::move(next);
  }
  return trials;
}

nlohmann::json Sample(const Hyperparameter& hp, std::mt19937_64& rng) {
  switch (hp.type) {
    case Type::kConst:
      return hp.val;
    case Type::kCategorical:
      return hp.vals[std::uniform_int_distribution<size_t>(0, hp.vals.size() - 1)(rng)];
    case Type::kInt:
      return std::uniform_int_distribution<int64_t>(static_cast<int64_t>(hp.minval),
                                                    static_cast<int64_t>(hp.maxval))(rng);
    default:
      return RangeValue(hp, std::uniform_real_distribution<double>(0.0, 1.0)(rng));
  }
}

}  // namespace

absl::Status CheckTrials(const SearcherConfig& searcher, const Hyperparameters& hyperparameters) {
  if (searcher.kind != SearcherConfig::Kind::kGrid) return absl::OkStatus();
  return GridAxes(hyperparameters).status();
}

absl::StatusOr<std::vector<nlohmann::json>> GenerateTrials(const SearcherConfig& searcher,
                                                           const Hyperparameters& hyperparameters,
                                                           uint64_t seed) {
  switch (searcher.kind) {
    case SearcherConfig::Kind::kGrid:
      return Grid(hyperparameters);
    case SearcherConfig::Kind::kRandom:
    case SearcherConfig::Kind::kAdaptiveAsha: {
      std::mt19937_64 rng(seed);
      std::vector<nlohmann::json> trials;
      for (int i = 0; i < searcher.max_trials; ++i) {
        nlohmann::json t = nlohmann::json::object();
        for (const auto& [path, hp] : hyperparameters) SetAt(t, path, Sample(hp, rng));
        trials.push_back(std::move(t));
      }
      return trials;
    }
    case SearcherConfig::Kind::kSingle:
      break;
  }
  nlohmann::json t = nlohmann::json::object();
  for (const auto& [path, hp] : hyperparameters) SetAt(t, path, SingleValue(hp));
  return std::vector<nlohmann::json>{t};
}

}  // namespace phalanx::master
