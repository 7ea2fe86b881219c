// The preemption rules, a table per rule: who may reclaim whom, what a victim costs, which runs
// are protected, and what may pass a waiting head on its node.
#include "preemption/rules.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace phalanx::preemption {
namespace {

constexpr int64_t kMinute = 60'000;
constexpr int64_t kNow = 100 * kMinute;

core::Gang Running(std::string key, int32_t priority, int64_t start_ms) {
  return {.key = std::move(key),
          .priority = priority,
          .start_ms = start_ms,
          .total = core::Resources(1000, 1 << 30, 2)};
}

TEST(RulesTest, Reclaimable) {
  const core::Gang by = Running("ns/head", 50, 0);
  struct Row {
    std::string name;
    int32_t priority;
    bool preemptible;
    std::string behind;
    bool want;
  };
  for (const Row& row : std::vector<Row>{
           {.name = "lower", .priority = 40, .preemptible = true, .want = true},
           {.name = "lower pinned", .priority = 40, .preemptible = false, .want = false},
           {.name = "same", .priority = 50, .preemptible = true, .want = false},
           {.name = "same behind it",
           .priority = 50,
           .preemptible = true,
           .behind = "ns/head",
           .want = true},
           {.name = "same behind another",
           .priority = 50,
           .preemptible = true,
           .behind = "ns/other",
           .want = false},
           {.name = "higher behind it",
           .priority = 60,
           .preemptible = true,
           .behind = "ns/head",
           .want = true},
           {.name = "pinned behind it",
           .priority = 50,
           .preemptible = false,
           .behind = "ns/head",
           .want = false}}) {
    core::Gang v = Running("ns/v", row.priority, kNow - kMinute);
    v.preemptible = row.preemptible;
    v.backfilled_behind = row.behind;
    EXPECT_EQ(Reclaimable(v, by), row.want) << row.name;
  }
}

TEST(RulesTest, CostCountsWorkSinceTheLastCheckpointPlusTheRestart) {
  const gang::SlotPolicy slots;
  const PreemptionRules rules{.restart_overhead_ms = kMinute};
  struct Row {
    std::string name;
    int64_t start_ms;
    int64_t checkpoint_ms;
    int64_t want_lost_slot_s;
  };
  for (const Row& row : std::vector<Row>{
           {"never checkpointed", kNow - 10 * kMinute, 0, 2 * (600 + 60)},
           {"checkpointed a minute ago", kNow - 10 * kMinute, kNow - kMinute, 2 * (60 + 60)},
           {"checkpoint of an earlier run", kNow - 10 * kMinute, kNow - 20 * kMinute,
            2 * (600 + 60)},
           {"not started", 0, 0, 2 * 60}}) {
    core::Gang g = Running("ns/g", 10, row.start_ms);
    g.checkpoint_ms = row.checkpoint_ms;
    EXPECT_EQ(CostOf(g, slots, rules, kNow).lost_slot_s, row.want_lost_slot_s) << row.name;
  }
}

TEST(RulesTest, CostOrdersBackfilledThenLostWorkThenPriorityThenNewestThenKey) {
  const gang::SlotPolicy slots;
  const PreemptionRules rules;
  core::Gang base = Running("ns/b", 10, kNow - 10 * kMinute);
  base.creation_ms = 5;
  core::Gang backfilled = base;
  backfilled.backfilled = true;
  backfilled.start_ms = kNow - 60 * kMinute;  // Dearer, but backfilled.
  core::Gang cheaper = base;
  cheaper.start_ms = kNow - 5 * kMinute;
  core::Gang lower = base;
  lower.priority = 5;
  core::Gang newer = base;
  newer.creation_ms = 6;
  core::Gang key_a = base;
  key_a.key = "ns/a";
  auto cost = [&](const core::Gang& g) { return CostOf(g, slots, rules, kNow); };
  EXPECT_LT(cost(backfilled), cost(cheaper));
  EXPECT_LT(cost(cheaper), cost(base));
  EXPECT_LT(cost(lower), cost(base));
  EXPECT_LT(cost(newer), cost(base));
  EXPECT_LT(cost(key_a), cost(base));
}

TEST(RulesTest, ProtectionTier) {
  const core::Gang by = Running("ns/head", 90, 0);
  const PreemptionRules rules{
      .min_run_ms = 5 * kMinute, .max_preemptions = 2, .window_ms = 60 * kMinute};
  struct Row {
    std::string name;
    int64_t start_ms;
    std::vector<int64_t> preempted;
    std::string behind;
    int want;
  };
  for (const Row& row : std::vector<Row>{
           {"old, never preempted", kNow - 60 * kMinute, {}, "", 0},
           {"young", kNow - 4 * kMinute, {}, "", 1},
           {"just old enough", kNow - 5 * kMinute, {}, "", 0},
           {"preempted once in the window", kNow - 60 * kMinute, {kNow - kMinute}, "", 0},
           {"twice in the window",
            kNow - 60 * kMinute,
            {kNow - 30 * kMinute, kNow - kMinute},
            "",
            1},
           {"twice, once before the window",
            kNow - 60 * kMinute,
            {kNow - 61 * kMinute, kNow - kMinute},
            "",
            0},
           {"young, backfilled behind the preemptor",
            kNow - kMinute,
            {kNow - 30 * kMinute, kNow - kMinute},
            "ns/head",
            0}}) {
    core::Gang v = Running("ns/v", 10, row.start_ms);
    v.preempted_ms = row.preempted;
    v.backfilled_behind = row.behind;
    EXPECT_EQ(ProtectionTier(v, by, rules, kNow), row.want) << row.name;
  }
  core::Gang often = Running("ns/v", 10, 0);
  often.preempted_ms = {kNow - 2 * kMinute, kNow - kMinute};
  EXPECT_FALSE(MayBackfillProvisionally(often, rules, kNow));
  often.preempted_ms.pop_back();
  EXPECT_TRUE(MayBackfillProvisionally(often, rules, kNow));
  EXPECT_FALSE(MayBackfillProvisionally(often, {.provisional_backfill = false}, kNow));
}

TEST(RulesTest, APreemptionLimitIsHardAndTheDefaultWindowIsTheWholeLife) {
  const core::Gang by = Running("ns/head", 90, 0);
  core::Gang v = Running("ns/v", 10, kNow - 60 * kMinute);
  v.backfilled_behind = "ns/head";  // Even the head it passed may not take it back.
  const PreemptionRules rules{.max_preemptions = 2, .preemption_limit = 3};
  v.preempted_ms = {kNow - 90 * kMinute, kNow - 80 * kMinute, kNow - 70 * kMinute};
  EXPECT_EQ(RecentPreemptions(v, rules, kNow), 3);
  EXPECT_TRUE(AtPreemptionLimit(v, rules, kNow));
  EXPECT_TRUE(Thrashed(v, rules, kNow));
  EXPECT_EQ(ProtectionTier(v, by, rules, kNow), kNeverVictim);
  EXPECT_FALSE(MayBackfillProvisionally(v, rules, kNow));
  PreemptionRules hour = rules;
  hour.window_ms = 60 * kMinute;
  EXPECT_EQ(RecentPreemptions(v, hour, kNow), 0);
  EXPECT_EQ(ProtectionTier(v, by, hour, kNow), 0);
  PreemptionRules no_limit = rules;
  no_limit.preemption_limit = 0;
  EXPECT_FALSE(AtPreemptionLimit(v, no_limit, kNow));
  EXPECT_EQ(ProtectionTier(v, by, no_limit, kNow), 0);
  // The limit alone, without max_preemptions, also keeps the gang off held nodes.
  PreemptionRules limit_only = rules;
  limit_only.max_preemptions = 0;
  EXPECT_TRUE(Thrashed(v, limit_only, kNow));
  v.preempted_ms.pop_back();
  EXPECT_FALSE(Thrashed(v, limit_only, kNow));
}

TEST(RulesTest, MayPassOnTakesNothingTheHeadIsShortOf) {
  const core::Resources head(4000, 16LL << 30, 8);  // Per member.
  struct Row {
    std::string name;
    core::Resources takes;
    core::Resources free;
    bool want;
  };
  for (const Row& row : std::vector<Row>{
           {"CPU task, GPUs short", {1000, 1LL << 30, 0}, {60000, 400LL << 30, 2}, true},
           {"GPU task, GPUs short", {1000, 1LL << 30, 1}, {60000, 400LL << 30, 2}, false},
           {"CPU task leaving too little CPU",
            {57000, 1LL << 30, 0},
            {60000, 400LL << 30, 2},
            false},
           {"GPU task leaving a member's GPUs",
            {1000, 1LL << 30, 2},
            {60000, 400LL << 30, 10},
            true},
           {"memory task, memory short", {0, 8LL << 30, 0}, {60000, 10LL << 30, 8}, false}}) {
    EXPECT_EQ(MayPassOn(row.takes, head, row.free), row.want) << row.name;
  }
}

}  // namespace
}  // namespace phalanx::preemption
