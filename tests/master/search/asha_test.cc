// adaptive_asha's pure searcher (master/search/asha.h): Determined's brackets, a search worked by
// hand rung by rung, and, over random curves, worker counts and completion orders, ASHA's rule
// (Li et al.) checked by an oracle that ranks the results itself.
#include "master/search/asha.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace phalanx::master::search {
namespace {

TEST(AshaBracketsTest, StandardModeAsDetermined) {
  // R = min(5, 1 + floor(log4 1000) = 5, 1 + floor(log4 16) = 3) = 3; standard: brackets of 3 and 2
  // rungs, weights 4^2/3 and 4/2: 11 and 4 trials, the remainder to the first.
  const AshaParams p{.max_trials = 16, .max_length = 1000, .divisor = 4, .max_rungs = 5};
  const std::vector<Bracket> b = PlanBrackets(p);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].rungs, (std::vector<int64_t>{62, 250, 1000}));
  EXPECT_EQ(b[0].max_trials, 12);
  EXPECT_EQ(b[1].rungs, (std::vector<int64_t>{250, 1000}));
  EXPECT_EQ(b[1].max_trials, 4);
  EXPECT_EQ(DefaultConcurrency(p, b), 8);  // max(4 trials, divisor 4) per bracket.
  const std::vector<int> dealt = AssignBrackets(b);
  ASSERT_EQ(dealt.size(), 16u);
  EXPECT_EQ(std::vector<int>(dealt.begin(), dealt.begin() + 9),
            (std::vector<int>{0, 1, 0, 1, 0, 1, 0, 1, 0}));
  EXPECT_EQ(std::count(dealt.begin(), dealt.end(), 0), 12);
}

TEST(AshaBracketsTest, ModesAndBounds) {
  AshaParams p{.max_trials = 1000, .max_length = 10000, .divisor = 3, .max_rungs = 4};
  p.mode = AshaMode::kAggressive;
  ASSERT_EQ(PlanBrackets(p).size(), 1u);
  EXPECT_EQ(PlanBrackets(p)[0].rungs, (std::vector<int64_t>{370, 1111, 3333, 10000}));
  EXPECT_EQ(PlanBrackets(p)[0].max_trials, 1000);
  p.mode = AshaMode::kConservative;
  std::vector<Bracket> b = PlanBrackets(p);
  ASSERT_EQ(b.size(), 4u);
  int total = 0;
  for (const Bracket& x : b) total += x.max_trials;
  EXPECT_EQ(total, 1000);
  EXPECT_EQ(b[3].rungs, (std::vector<int64_t>{10000}));
  // A short max_length caps the rungs (1 + floor(log3 5) = 2), and no rung is shorter than 1.
  p = {.max_trials = 50,
       .max_length = 5,
       .divisor = 3,
       .max_rungs = 5,
       .mode = AshaMode::kAggressive};
  EXPECT_EQ(PlanBrackets(p)[0].rungs, (std::vector<int64_t>{1, 5}));
  // Fewer trials than brackets: one trial each for the brackets with the most rungs.
  p = {.max_trials = 2,
       .max_length = 100,
       .divisor = 1.5,
       .max_rungs = 5,
       .mode = AshaMode::kConservative};
  b = PlanBrackets(p);
  total = 0;
  for (const Bracket& x : b) total += x.max_trials;
  EXPECT_EQ(total, 2);
}

TEST(AshaBracketsTest, DivisorsNearOneStayBoundedAndRungsAscend) {
  // 1 + floor(log_d(10^12)) would be ~10^16 steps for this divisor: max_rungs bounds the count.
  AshaParams p{.max_trials = 10000,
               .max_length = 1000000000000,
               .divisor = 1.0000000000000002,
               .max_rungs = 20,
               .mode = AshaMode::kConservative};
  std::vector<Bracket> b = PlanBrackets(p);
  EXPECT_EQ(b.size(), 20u);
  // A short max_length and a divisor under 2 would repeat rung lengths: they are merged.
  p = {.max_trials = 10,
       .max_length = 3,
       .divisor = 1.2,
       .max_rungs = 5,
       .mode = AshaMode::kAggressive};
  b = PlanBrackets(p);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].rungs, (std::vector<int64_t>{1, 2, 3}));
  // Minimums of 1 that pass max_trials are taken back from the largest bracket.
  p = {.max_trials = 8,
       .max_length = 2,
       .divisor = 1.1,
       .max_rungs = 20,
       .mode = AshaMode::kConservative};
  b = PlanBrackets(p);
  int total = 0;
  for (const Bracket& x : b) {
    total += x.max_trials;
    EXPECT_GE(x.max_trials, 1);
    EXPECT_TRUE(std::is_sorted(x.rungs.begin(), x.rungs.end()));
    EXPECT_EQ(std::adjacent_find(x.rungs.begin(), x.rungs.end()), x.rungs.end());
  }
  EXPECT_EQ(total, 8);
}

TEST(AshaStateTest, JsonRoundTripAndHostileState) {
  TrialSearch s{.bracket = 1, .rungs = {3, 9}, .target = 1, .results = {0.5, std::nullopt}};
  absl::StatusOr<TrialSearch> back = TrialSearchFromJson(ToJson(s));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->bracket, 1);
  EXPECT_EQ(back->rungs, s.rungs);
  EXPECT_EQ(back->target, 1);
  EXPECT_EQ(back->results, s.results);
  s.results = {-std::numeric_limits<double>::infinity()};
  EXPECT_EQ(TrialSearchFromJson(ToJson(s))->results, s.results);
  for (const char* bad : {"", "[]", "{\"bracket\":0}",
                          "{\"bracket\":0,\"rungs\":[],\"target\":0,"
                          "\"results\":[]}",
                          "{\"bracket\":0,\"rungs\":[1],\"target\":1,"
                          "\"results\":[]}",
                          "{\"bracket\":0,\"rungs\":[1],\"target\":0,"
                          "\"results\":[1,2]}",
                          "{\"bracket\":0,\"rungs\":[\"x\"],\"target\":0,"
                          "\"results\":[]}",
                          "{\"bracket\":2147483647,\"rungs\":[1],\"target\":0,\"results\":[]}",
                          "{\"bracket\":0,\"rungs\":[1],\"target\":0,\"results\":[\"x\"]}",
                          "{\"bracket\":0,\"rungs\":[3,2],\"target\":0,\"results\":[]}",
                          "{\"bracket\":0,\"rungs\":[0],\"target\":0,\"results\":[]}",
                          "{\"bracket\":0,\"rungs\":[1,2,3],\"target\":2,\"results\":[]}"}) {
    EXPECT_EQ(TrialSearchFromJson(bad).status().code(), absl::StatusCode::kDataLoss) << bad;
  }
}

// A search driven the way the job manager drives it: `workers` runs at most at once, each run
// trains to its target rung and reports curve(trial, rung); which open run reports next is
// `pick`'s choice. Writes one line per step to `log`.
struct Driver {
  double divisor = 3;
  bool smaller_is_better = true;
  std::vector<SearchTrial> trials;
  std::vector<std::string> log;

  SearchTrial& Get(int64_t id) {
    for (SearchTrial& t : trials) {
      if (t.id == id) return t;
    }
    ADD_FAILURE() << "no trial " << id;
    return trials.front();
  }
  void StartRuns(int workers) {
    int open = 0;
    for (const SearchTrial& t : trials) open += t.running ? 1 : 0;
    for (const Start& s : NextRuns(trials, divisor, workers - open)) {
      SearchTrial& t = Get(s.id);
      if (t.search.target != s.target) log.push_back(absl::StrCat("promote ", s.id));
      t.search.target = s.target;
      t.started = t.running = true;
    }
  }
  // The open run `id` reports `value` at its target rung.
  Recorded Report(int64_t id, double value) {
    absl::StatusOr<Recorded> r = Record(trials, id, value, smaller_is_better, divisor);
    EXPECT_TRUE(r.ok()) << r.status();
    SearchTrial& t = Get(id);
    t.search = r->search;
    const char* what = r->verdict == Verdict::kTop        ? "top"
                       : r->verdict == Verdict::kContinue ? "continue"
                                                          : "wait";
    log.push_back(absl::StrCat(id, "@", r->search.results.size() - 1, " ", what));
    if (r->verdict != Verdict::kContinue) t.running = false;
    if (r->verdict == Verdict::kTop) t.ended = true;
    return *r;
  }
  void EndIfOver() {
    if (!SearchOver(trials, divisor)) return;
    for (SearchTrial& t : trials) t.ended = true;
    log.push_back("over");
  }
};

std::vector<SearchTrial> OneBracket(int n, std::vector<int64_t> rungs) {
  std::vector<SearchTrial> out;
  for (int i = 1; i <= n; ++i) out.push_back({.id = i, .search = {.rungs = rungs}});
  return out;
}

TEST(AshaRuleTest, OneWorkerByHand) {
  // Nine trials, divisor 3, rungs 1, 3, 9; each trial's metric is the same at every rung.
  Driver d{.trials = OneBracket(9, {1, 3, 9})};
  const std::map<int64_t, double> value = {{1, 5}, {2, 3}, {3, 8}, {4, 1}, {5, 9},
                                           {6, 2}, {7, 7}, {8, 4}, {9, 6}};
  for (int step = 0; step < 40; ++step) {
    d.StartRuns(1);
    int64_t running = 0;
    for (const SearchTrial& t : d.trials) running = t.running ? t.id : running;
    if (running == 0) break;
    while (d.Get(running).running) d.Report(running, value.at(running));
  }
  d.EndIfOver();
  // Rung 0 promotes its best floor(n/3) as n grows: trial 2 once 3 reported (late: it waited),
  // trial 4 on arrival (n=4), trial 6 on arrival (n=6); rung 1 promotes trial 4 once it holds 3.
  const std::vector<std::string> want = {"1@0 wait",     "2@0 wait",     "3@0 wait",  "promote 2",
                                         "2@1 wait",     "4@0 continue", "4@1 wait",  "5@0 wait",
                                         "6@0 continue", "6@1 wait",     "promote 4", "4@2 top",
                                         "7@0 wait",     "8@0 wait",     "9@0 wait",  "over"};
  EXPECT_EQ(d.log, want);
}

TEST(AshaRuleTest, LargerIsBetterAndNanLast) {
  Driver d{.smaller_is_better = false, .trials = OneBracket(3, {1, 3})};
  d.StartRuns(3);
  EXPECT_EQ(d.Report(1, std::nan("")).verdict, Verdict::kWait);
  EXPECT_EQ(d.Report(2, 0.9).verdict, Verdict::kWait);  // n=2: floor(2/3) = 0 promotable.
  const Recorded r = d.Report(3, 0.5);
  EXPECT_EQ(r.verdict, Verdict::kWait);
  EXPECT_EQ(r.rank, 1);  // 0.9 is better when larger is; NaN ranks last.
  d.StartRuns(3);
  EXPECT_EQ(d.log.back(), "promote 2");
  EXPECT_FALSE(Record(d.trials, 1, 1.0, false, 3).ok());  // Rung 0 was reported already.
}

TEST(AshaRuleTest, NanIsNeverPromoted) {
  Driver d{.trials = OneBracket(3, {1, 3})};
  d.StartRuns(3);
  for (int64_t id : {1, 2, 3}) EXPECT_EQ(d.Report(id, std::nan("")).verdict, Verdict::kWait);
  EXPECT_TRUE(NextRuns(d.trials, 3, 3).empty());
  EXPECT_TRUE(SearchOver(d.trials, 3));
}

TEST(AshaRuleTest, LostRunsResumeFirstAndRunningTrialsAreNotPromoted) {
  std::vector<SearchTrial> t = OneBracket(4, {1, 3});
  t[0].search.results = {1.0};  // Best of rung 0, still running (its run has not ended yet).
  t[0].running = t[0].started = true;
  t[1].search.results = {2.0};
  t[1].started = true;
  t[2].search.results = {3.0};
  t[2].started = true;
  t[3].started = true;  // Its run was lost before rung 0.
  EXPECT_EQ(NextRuns(t, 3, 5).size(), 1u);
  EXPECT_EQ(NextRuns(t, 3, 5)[0].id, 4);
  EXPECT_FALSE(SearchOver(t, 3));
  t[0].running = false;
  const std::vector<Start> s = NextRuns(t, 3, 5);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].id, 4);
  EXPECT_EQ(s[1].id, 1);
  EXPECT_EQ(s[1].target, 1);
  EXPECT_TRUE(NextRuns(t, 3, 0).empty());
}

// The oracle: trial ids of `bracket` with a result at `rung`, best first, ranked here.
std::vector<int64_t> Ranked(const std::vector<SearchTrial>& trials, int bracket, size_t rung) {
  std::vector<std::pair<double, int64_t>> r;
  for (const SearchTrial& t : trials) {
    if (t.search.bracket != bracket || t.search.results.size() <= rung) continue;
    const std::optional<double>& v = t.search.results[rung];
    r.push_back({v ? *v : std::numeric_limits<double>::max(), t.id});
  }
  std::sort(r.begin(), r.end());
  std::vector<int64_t> out;
  for (const auto& x : r) out.push_back(x.second);
  return out;
}

bool InTop(const std::vector<SearchTrial>& trials, int bracket, size_t rung, int64_t id,
           double divisor) {
  const std::vector<int64_t> r = Ranked(trials, bracket, rung);
  const size_t top = static_cast<size_t>(std::floor(r.size() / divisor));
  return std::find(r.begin(), r.begin() + std::min(top, r.size()), id) !=
         r.begin() + std::min(top, r.size());
}

TEST(AshaRuleTest, PropertiesOverRandomSearches) {
  std::mt19937_64 rng(20261129);
  int promotions = 0, continues = 0, tops = 0;
  for (int round = 0; round < 300; ++round) {
    const AshaParams p{.max_trials = 1 + static_cast<int>(rng() % 40),
                       .max_length = 1 + static_cast<int64_t>(rng() % 200),
                       .divisor = std::vector<double>{1.3, 2.0, 3.0, 4.0}[rng() % 4],
                       .max_rungs = 1 + static_cast<int>(rng() % 5),
                       .mode = static_cast<AshaMode>(rng() % 3)};
    const int workers = 1 + static_cast<int>(rng() % 8);
    const std::vector<Bracket> brackets = PlanBrackets(p);
    const std::vector<int> dealt = AssignBrackets(brackets);
    ASSERT_EQ(static_cast<int>(dealt.size()), p.max_trials);
    Driver d{.divisor = p.divisor};
    std::map<int64_t, double> quality;
    for (int i = 0; i < p.max_trials; ++i) {
      d.trials.push_back(
          {.id = i + 1, .search = {.bracket = dealt[i], .rungs = brackets[dealt[i]].rungs}});
      quality[i + 1] = std::uniform_real_distribution<double>(0, 1)(rng);
    }
    // A noisy curve per trial: its quality plus noise that shrinks at later rungs; 5% NaN.
    const auto curve = [&](int64_t id, size_t rung) {
      if (rng() % 20 == 0) return std::nan("");
      return quality[id] + std::normal_distribution<double>(0, 0.2 / (1 + rung))(rng);
    };
    for (int step = 0; step < 100000; ++step) {
      d.StartRuns(workers);
      std::vector<int64_t> open;
      for (const SearchTrial& t : d.trials) {
        if (t.running) open.push_back(t.id);
      }
      ASSERT_LE(static_cast<int>(open.size()), workers);
      if (open.empty()) break;
      const int64_t id = open[rng() % open.size()];  // Any open run may report next.
      SearchTrial before = d.Get(id);
      const Recorded r = d.Report(id, curve(id, before.search.results.size()));
      const size_t rung = r.search.results.size() - 1;
      ASSERT_EQ(rung, static_cast<size_t>(before.search.target));
      if (r.verdict == Verdict::kContinue) {
        ++continues;
        EXPECT_TRUE(r.search.results[rung].has_value()) << "a NaN result continued";
        EXPECT_TRUE(InTop(d.trials, before.search.bracket, rung, id, p.divisor))
            << "trial " << id << " continued past rung " << rung << " outside the top 1/divisor";
      }
      tops += r.verdict == Verdict::kTop ? 1 : 0;
      // Every promotion NextRuns makes is of a trial in the top of its rung, not promoted before.
      for (const Start& s : NextRuns(d.trials, p.divisor, workers)) {
        const SearchTrial& t = d.Get(s.id);
        if (s.target == t.search.target) continue;
        ++promotions;
        EXPECT_EQ(s.target, t.search.target + 1);
        EXPECT_TRUE(t.search.Reached());
        EXPECT_TRUE(InTop(d.trials, t.search.bracket, t.search.target, s.id, p.divisor));
      }
    }
    EXPECT_TRUE(SearchOver(d.trials, p.divisor)) << "round " << round << " did not finish";
    // At the end, every trial in the top 1/divisor of a rung below its top was promoted, every
    // trial ran, and none went past its bracket's rungs.
    for (const SearchTrial& t : d.trials) {
      EXPECT_TRUE(t.started);
      EXPECT_LE(t.search.results.size(), t.search.rungs.size());
      for (size_t k = 0; k + 1 < t.search.rungs.size() && k < t.search.results.size(); ++k) {
        if (t.search.results[k] && InTop(d.trials, t.search.bracket, k, t.id, p.divisor)) {
          EXPECT_GT(t.search.target, static_cast<int>(k))
              << "trial " << t.id << " is in the top of rung " << k << " but was never promoted";
        }
      }
    }
  }
  // The interesting cases happened.
  EXPECT_GT(promotions, 100);
  EXPECT_GT(continues, 100);
  EXPECT_GT(tops, 100);
}

}  // namespace
}  // namespace phalanx::master::search
