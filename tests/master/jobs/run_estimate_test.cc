// A run's expected duration: the sources in order (searcher budget with a measured pace, the
// configured expected_runtime, none), each with its basis, on figures worked by hand.
#include "master/jobs/run_estimate.h"

#include <gtest/gtest.h>

namespace phalanx::master {
namespace {

SearcherConfig Searcher(nlohmann::json max_length) {
  SearcherConfig s;
  s.max_length = std::move(max_length);
  return s;
}

TEST(RunEstimateTest, BudgetInBatchesOnly) {
  const TrialRecord trial;
  EXPECT_EQ(BudgetOf(Searcher(1000), trial)->run_target, 1000);
  EXPECT_EQ(BudgetOf(Searcher({{"batches", 500}}), trial)->max_length, 500);
  EXPECT_FALSE(BudgetOf(Searcher({{"epochs", 3}}), trial));
  EXPECT_FALSE(BudgetOf(Searcher(nullptr), trial));
  EXPECT_FALSE(BudgetOf(Searcher(-4), trial));
}

// adaptive_asha: a trial trains to its target rung in this run.
TEST(RunEstimateTest, AshaTrainsToItsRung) {
  SearcherConfig s = Searcher(300);
  s.kind = SearcherConfig::Kind::kAdaptiveAsha;
  TrialRecord trial;
  trial.searcher_state = R"({"bracket":0,"rungs":[18,75,300],"target":1,"results":[0.5]})";
  std::optional<SearcherBudget> b = BudgetOf(s, trial);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->run_target, 75);
  EXPECT_EQ(b->max_length, 300);
  trial.searcher_state = "{not json";
  EXPECT_FALSE(BudgetOf(s, trial));
}

// 1000 batches, 400 done, 2 batches/s measured: 300 s, whatever expected_runtime says.
TEST(RunEstimateTest, MeasuredPaceComesFirst) {
  ResourcesConfig r;
  r.expected_runtime = absl::Hours(5);
  const SearcherBudget budget{1000, 1000};
  std::optional<RunEstimate> e = EstimateRun(
      r, budget, 400,
      MeasuredPace{.source = MeasuredPace::Source::kExperiment, .steps_per_second = 2}, "mnist");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->seconds, 300);
  EXPECT_EQ(e->basis, "600 batches left at 2 batches/s measured on this experiment's trials");
  // The owner's other experiments come after expected_runtime, and stand in without it.
  const MeasuredPace history{.source = MeasuredPace::Source::kOwnerHistory, .steps_per_second = 3};
  e = EstimateRun(r, budget, 0, history, "mnist");
  EXPECT_EQ(e->seconds, 5 * 3600);
  e = EstimateRun({}, budget, 0, history, "mnist");
  EXPECT_EQ(e->seconds, 334);  // 1000 / 3, rounded up.
  EXPECT_EQ(e->basis,
            "1000 batches left at 3 batches/s measured on the owner's recent experiments named "
            "\"mnist\"");
}

// Without a pace: expected_runtime, scaled to what is left of max_length when the budget is
// known (a 75-batch rung of 300, 18 done: 57 / 300 of 2 h = 1368 s).
TEST(RunEstimateTest, ExpectedRuntimeScaledToWhatIsLeft) {
  ResourcesConfig r;
  r.expected_runtime = absl::Hours(2);
  std::optional<RunEstimate> e = EstimateRun(r, SearcherBudget{75, 300}, 18, std::nullopt, "x");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->seconds, 1368);
  EXPECT_EQ(e->basis, "resources.expected_runtime for 300 batches, 57 left");
  e = EstimateRun(r, std::nullopt, 0, std::nullopt, "x");
  EXPECT_EQ(e->seconds, 7200);
  EXPECT_EQ(e->basis, "resources.expected_runtime");
  // The largest figures stay in range: 366 days for 10^12 batches, all left.
  r.expected_runtime = kMaxExpectedRuntime;
  e = EstimateRun(r, SearcherBudget{1'000'000'000'000, 1'000'000'000'000}, 0, std::nullopt, "x");
  EXPECT_EQ(e->seconds, absl::ToInt64Seconds(kMaxExpectedRuntime));
}

// Nothing known: no estimate; a pace too slow for the bound falls back to the next source.
TEST(RunEstimateTest, UnknownRatherThanInvented) {
  EXPECT_FALSE(EstimateRun({}, SearcherBudget{1000, 1000}, 0, std::nullopt, "x"));
  EXPECT_FALSE(EstimateRun({}, std::nullopt, 0, MeasuredPace{.steps_per_second = 5}, "x"));
  EXPECT_FALSE(EstimateRun({}, SearcherBudget{1'000'000'000'000, 1'000'000'000'000}, 0,
                           MeasuredPace{.steps_per_second = 1e-9}, "x"));
}

}  // namespace
}  // namespace phalanx::master
