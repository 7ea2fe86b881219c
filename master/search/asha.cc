// ASHA brackets, trial state and promotions (see asha.h).
#include "master/search/asha.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace phalanx::master::search {
namespace {

// min(1 + floor(log_divisor(x)), limit) for x >= 1, by multiplying (exact where a logarithm
// would round); at most `limit` steps, however close to 1 the divisor is.
int RungsFor(double x, double divisor, int limit) {
  int rungs = 1;
  for (double p = divisor; p <= x && rungs < limit; p *= divisor) ++rungs;
  return rungs;
}

// Takes trials from the brackets with most until they hold `max_trials` in all (each keeps one).
void TrimTo(int max_trials, std::vector<Bracket>& brackets) {
  int total = 0;
  for (const Bracket& b : brackets) total += b.max_trials;
  while (total > max_trials) {
    auto most =
        std::max_element(brackets.begin(), brackets.end(),
                         [](const auto& a, const auto& b) { return a.max_trials < b.max_trials; });
    if (most->max_trials <= 1) break;
    --most->max_trials;
    --total;
  }
}

std::vector<int> BracketRungs(AshaMode mode, int max_rungs) {
  int first = 1;
  if (mode == AshaMode::kAggressive) first = max_rungs;
  if (mode == AshaMode::kStandard) first = (max_rungs - 1) / 2 + 1;
  std::vector<int> out;
  for (int n = max_rungs; n >= first; --n) out.push_back(n);
  return out;
}

double Oriented(std::optional<double> v) {
  return v ? *v : std::numeric_limits<double>::infinity();
}

// The trials with a result at `rung` of `in` (one bracket's), best first (value, then id): NaN
// after +inf.
std::vector<const SearchTrial*> RungOf(const std::vector<const SearchTrial*>& in, size_t rung) {
  std::vector<const SearchTrial*> out;
  for (const SearchTrial* t : in) {
    if (t->search.results.size() > rung) out.push_back(t);
  }
  std::sort(out.begin(), out.end(), [rung](const SearchTrial* a, const SearchTrial* b) {
    const std::optional<double>& x = a->search.results[rung];
    const std::optional<double>& y = b->search.results[rung];
    return std::make_tuple(!x.has_value(), Oriented(x), a->id) <
           std::make_tuple(!y.has_value(), Oriented(y), b->id);
  });
  return out;
}

// The trials of each bracket, by bracket.
std::vector<std::vector<const SearchTrial*>> ByBracket(const std::vector<SearchTrial>& trials) {
  std::vector<std::vector<const SearchTrial*>> out;
  for (const SearchTrial& t : trials) {
    if (static_cast<size_t>(t.search.bracket) >= out.size()) out.resize(t.search.bracket + 1);
    out[t.search.bracket].push_back(&t);
  }
  return out;
}

int Promotable(size_t n, double divisor) {
  return static_cast<int>(std::floor(static_cast<double>(n) / divisor));
}

void AppendPromotions(const std::vector<SearchTrial>& trials, double divisor,
                      std::vector<Start>& out) {
  const std::vector<std::vector<const SearchTrial*>> brackets = ByBracket(trials);
  // (rung, bracket, rank) of each promotion, to order them.
  std::vector<std::tuple<int, size_t, int, const SearchTrial*>> found;
  for (size_t b = 0; b < brackets.size(); ++b) {
    if (brackets[b].empty()) continue;
    const size_t rungs = brackets[b].front()->search.rungs.size();
    for (size_t k = 0; k + 1 < rungs; ++k) {
      const std::vector<const SearchTrial*> rung = RungOf(brackets[b], k);
      const int best = std::min<int>(Promotable(rung.size(), divisor), rung.size());
      for (int i = 0; i < best; ++i) {
        const SearchTrial& t = *rung[i];
        if (t.ended || t.running || t.search.target != static_cast<int>(k) ||
            !t.search.results[k].has_value()) {
          continue;  // A NaN result is never promoted.
        }
        found.emplace_back(-static_cast<int>(k), b, i, &t);
      }
    }
  }
  std::sort(found.begin(), found.end());
  for (const auto& [k, b, i, t] : found) out.push_back({.id = t->id, .target = 1 - k});
}

}  // namespace

std::vector<Bracket> PlanBrackets(const AshaParams& p) {
  const int max_rungs =
      std::max(1, std::min(RungsFor(static_cast<double>(p.max_length), p.divisor, p.max_rungs),
                           RungsFor(p.max_trials, p.divisor, p.max_rungs)));
  std::vector<int> counts = BracketRungs(p.mode, max_rungs);
  counts.resize(std::min<size_t>(counts.size(), std::max(p.max_trials, 1)));
  double total = 0;
  for (int n : counts) total += std::pow(p.divisor, n - 1) / n;
  std::vector<Bracket> out;
  int allocated = 0;
  for (int n : counts) {
    Bracket b;
    for (int i = 0; i < n; ++i) {
      const double rate = std::pow(p.divisor, n - 1 - i);
      b.rungs.push_back(
          std::max<int64_t>(static_cast<int64_t>(static_cast<double>(p.max_length) / rate), 1));
    }
    b.rungs.back() = p.max_length;
    b.rungs.erase(std::unique(b.rungs.begin(), b.rungs.end()), b.rungs.end());  // Divisor < 2.
    const double weight = std::pow(p.divisor, n - 1) / n;
    b.max_trials = std::max(static_cast<int>(weight / total * p.max_trials), 1);
    allocated += b.max_trials;
    out.push_back(std::move(b));
  }
  out.front().max_trials += std::max(p.max_trials - allocated, 0);
  TrimTo(p.max_trials, out);
  return out;
}

std::vector<int> AssignBrackets(const std::vector<Bracket>& brackets) {
  std::vector<int> left;
  for (const Bracket& b : brackets) left.push_back(b.max_trials);
  std::vector<int> out;
  for (bool any = true; any;) {
    any = false;
    for (size_t b = 0; b < left.size(); ++b) {
      if (left[b] == 0) continue;
      --left[b];
      out.push_back(static_cast<int>(b));
      any = true;
    }
  }
  return out;
}

int DefaultConcurrency(const AshaParams& p, const std::vector<Bracket>& brackets) {
  const int per_bracket =
      std::max(brackets.back().max_trials, static_cast<int>(std::floor(p.divisor)));
  return std::min(p.max_trials, per_bracket * static_cast<int>(brackets.size()));
}

std::string ToJson(const TrialSearch& s) {
  nlohmann::json results = nlohmann::json::array();
  for (const std::optional<double>& r : s.results) {
    results.push_back(r && std::isfinite(*r) ? nlohmann::json(*r)
                      : r                    ? nlohmann::json(*r > 0 ? "inf" : "-inf")
                                             : nlohmann::json());
  }
  return nlohmann::json{
      {"bracket", s.bracket}, {"rungs", s.rungs}, {"target", s.target}, {"results", results}}
      .dump();
}

std::string Progress(const TrialSearch& s, bool ended) {
  const int rung = std::min<int>(s.results.size(), s.rungs.size()) - (s.Reached() ? 1 : 0);
  const char* what = s.AtTop()      ? "done"
                     : !s.Reached() ? (ended ? "ended before it" : "training")
                     : ended        ? "not promoted"
                                    : "waiting for a promotion";
  return absl::StrCat("rung ", rung + 1, " of ", s.rungs.size(), " (", s.rungs[rung], "): ", what);
}

absl::StatusOr<TrialSearch> TrialSearchFromJson(absl::string_view text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  const auto bad = [&](absl::string_view why) {
    return absl::DataLossError(absl::StrCat("trial searcher state: ", why));
  };
  const auto small = [](const nlohmann::json& v, int64_t max) {
    return v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= max;
  };
  if (!j.is_object() || !small(j.value("bracket", nlohmann::json()), kMaxBrackets) ||
      !small(j.value("target", nlohmann::json()), kMaxBrackets) ||
      !j.value("rungs", nlohmann::json()).is_array() ||
      !j.value("results", nlohmann::json()).is_array()) {
    return bad("not an object with bracket, rungs, target and results");
  }
  TrialSearch s{.bracket = j["bracket"].get<int>(), .target = j["target"].get<int>()};
  for (const nlohmann::json& r : j["rungs"]) {
    if (!small(r, int64_t{1} << 62) || r.get<int64_t>() < 1 ||
        (!s.rungs.empty() && r.get<int64_t>() <= s.rungs.back())) {
      return bad("rungs are not ascending lengths");
    }
    s.rungs.push_back(r.get<int64_t>());
  }
  for (const nlohmann::json& r : j["results"]) {
    if (r.is_number()) {
      s.results.push_back(r.get<double>());
    } else if (r == "inf" || r == "-inf") {
      s.results.push_back(r == "inf" ? std::numeric_limits<double>::infinity()
                                     : -std::numeric_limits<double>::infinity());
    } else if (r.is_null()) {
      s.results.push_back(std::nullopt);
    } else {
      return bad("a result is not a number");
    }
  }
  const size_t target = static_cast<size_t>(s.target);
  if (s.rungs.empty() || s.rungs.size() > kMaxBrackets || target >= s.rungs.size() ||
      s.results.size() < target || s.results.size() > target + 1) {
    return bad("target or results out of range");
  }
  return s;
}

absl::StatusOr<Recorded> Record(const std::vector<SearchTrial>& trials, int64_t id, double value,
                                bool smaller_is_better, double divisor) {
  std::vector<SearchTrial> with = trials;
  auto it =
      std::find_if(with.begin(), with.end(), [id](const SearchTrial& t) { return t.id == id; });
  if (it == with.end()) return absl::NotFoundError(absl::StrCat("trial ", id, " is not searched"));
  TrialSearch& s = it->search;
  if (s.Reached()) {
    return absl::FailedPreconditionError(
        absl::StrCat("trial ", id, " already reported rung ", s.target));
  }
  const size_t rung = s.results.size();
  if (std::isnan(value)) {
    s.results.push_back(std::nullopt);
  } else {
    s.results.push_back(smaller_is_better ? value : -value);
  }
  const std::vector<const SearchTrial*> ranked = RungOf(ByBracket(with)[s.bracket], rung);
  Recorded out{.rung_size = static_cast<int>(ranked.size())};
  while (ranked[out.rank]->id != id) ++out.rank;
  if (s.AtTop()) {
    out.verdict = Verdict::kTop;
  } else if (!std::isnan(value) && out.rank < Promotable(ranked.size(), divisor)) {
    out.verdict = Verdict::kContinue;
    ++s.target;
  }
  out.search = s;
  return out;
}

std::vector<Start> NextRuns(const std::vector<SearchTrial>& trials, double divisor, int free) {
  std::vector<Start> out;
  for (const SearchTrial& t : trials) {
    if (t.started && !t.ended && !t.running && !t.search.Reached()) {
      out.push_back({.id = t.id, .target = t.search.target});
    }
  }
  AppendPromotions(trials, divisor, out);
  for (const SearchTrial& t : trials) {
    if (!t.started && !t.ended) out.push_back({.id = t.id, .target = t.search.target});
  }
  if (static_cast<int>(out.size()) > free) out.resize(std::max(free, 0));
  return out;
}

bool SearchOver(const std::vector<SearchTrial>& trials, double divisor) {
  for (const SearchTrial& t : trials) {
    if (t.running) return false;
  }
  return NextRuns(trials, divisor, 1).empty();
}

}  // namespace phalanx::master::search
