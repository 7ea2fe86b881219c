// The extender's forecaster: runtimes read from the pods, the annotation texts and when they are
// due, and the way an outlook reaches the pods (phalanx.io/eta, phalanx.io/what-if through the
// admission loop, against a scripted API server), /debug/queue and the forecast gauges.
#include "scheduler_extender/forecaster.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "scheduler_extender/admission_loop.h"
#include "tests/kube/scripted_server.h"
#include "tests/testing/fixtures.h"

namespace phalanx::extender {
namespace {

using phalanx::testing::ScriptedRequest;
using phalanx::testing::ScriptedResponse;
using phalanx::testing::ScriptedServer;

constexpr int64_t kNow = 1795953600000;  // 2026-11-29T12:00:00Z
constexpr int64_t kMin = 60'000;

// One 4-GPU node: `running` (4 GPUs, started 10 minutes ago, 30 minutes expected) and `waiting`
// (4 GPUs, 20 minutes expected), and `unknown` (4 GPUs, no runtime) behind it.
std::shared_ptr<const core::ClusterSnapshot> Example() {
  core::SnapshotBuilder b;
  b.UpsertNode(testing::GpuNode("n", 4));
  for (core::PodInfo p : testing::GatedGang({.name = "running", .gpus_per_pod = 4})) {
    p.gated = false;
    p.node = "n";
    p.phase = core::PodPhase::kRunning;
    p.start_ms = kNow - 10 * kMin;
    p.expected_runtime_ms = 30 * kMin;
    b.UpsertPod(p);
  }
  for (core::PodInfo p :
       testing::GatedGang({.name = "waiting", .gpus_per_pod = 4, .created_ms = 1})) {
    p.expected_runtime_ms = 20 * kMin;
    b.UpsertPod(p);
  }
  for (core::PodInfo p :
       testing::GatedGang({.name = "unknown", .gpus_per_pod = 4, .created_ms = 2})) {
    b.UpsertPod(p);
  }
  return b.Build();
}

TEST(ForecasterTest, RuntimesFromThePods) {
  const forecast::RuntimeModel m = RuntimesOf(*Example(), kNow);
  EXPECT_EQ(m.at("default/running"), 20 * kMin);  // 30 expected, 10 run.
  EXPECT_EQ(m.at("default/waiting"), 20 * kMin);
  EXPECT_FALSE(m.contains("default/unknown"));
  // Past its expected end a run's end is unknown: an overrun is no sign it is near.
  EXPECT_FALSE(RuntimesOf(*Example(), kNow + 21 * kMin).contains("default/running"));
}

// A refresh waits its interval, or three times what the last one took when that is longer.
TEST(ForecasterTest, RefreshesRestThreeTimesTheirOwnTime) {
  EXPECT_EQ(NextForecastMs(100'000, 15'000, 40), 115'000);
  EXPECT_EQ(NextForecastMs(100'000, 15'000, 5'000), 115'000);
  EXPECT_EQ(NextForecastMs(100'000, 15'000, 20'000), 160'000);
  EXPECT_EQ(NextForecastMs(100'000, 1'000, -5), 101'000);  // A clock that stepped back.
}

TEST(ForecasterTest, Texts) {
  forecast::GangEta eta{.start_ms = kNow + 90'500};
  EXPECT_EQ(EtaText(eta), "2026-11-29T12:01:30Z");
  EXPECT_EQ(EtaText({.none = forecast::NoEstimate::kUnknown}),
            "none: waits on work with no expected end");
  forecast::WhatIf w{
      .slots_now = 6, .priority_now = 70, .victims = {"a/b"}, .pool_now = "v\"1", .ahead = {"c/d"}};
  EXPECT_EQ(WhatIfJson(w),
            R"({"slots":6,"priority":70,"victims":["a/b"],"pool":"v\"1","ahead":["c/d"]})");
  EXPECT_EQ(WhatIfJson({}), R"({"ahead":[]})");
}

// Writes are bounded: nothing while unchanged, at most once a minute, and an estimate only once
// it moved by more than max(5 minutes, a tenth of the wait).
TEST(ForecasterTest, OutlookDueOnlyWhenItMovedEnough) {
  GangOutlook o{.eta = {.start_ms = kNow + 100 * kMin}};
  std::optional<WrittenOutlook> first = OutlookDue({}, o, kNow, false);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->eta, EtaText(o.eta));
  EXPECT_FALSE(OutlookDue(*first, o, kNow + 2 * kMin, false));  // Unchanged.
  o.eta.start_ms = kNow + 109 * kMin;                           // Moved 9 < 10 (a tenth).
  EXPECT_FALSE(OutlookDue(*first, o, kNow + 2 * kMin, false));
  o.eta.start_ms = kNow + 111 * kMin;                           // Moved 11 > 10.
  EXPECT_FALSE(OutlookDue(*first, o, kNow + kMin / 2, false));  // But within the minute.
  EXPECT_TRUE(OutlookDue(*first, o, kNow + kMin / 2, true));    // Unless the reason is written.
  std::optional<WrittenOutlook> moved = OutlookDue(*first, o, kNow + 2 * kMin, false);
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->eta_ms, kNow + 111 * kMin);
  o.eta = {.none = forecast::NoEstimate::kUnknown};  // An estimate that goes is due at once.
  EXPECT_TRUE(OutlookDue(*moved, o, kNow + 4 * kMin, false));
}

// The outlook of one forecast on the pods, in /debug/queue and in the gauges: `waiting` starts
// when `running` ends, in 20 minutes, and `unknown` 20 minutes after it; the default steps apply
// each end a step later, but a gang starts when the end that freed its node happened (forecast.h).
// What-if: fewer slots cannot help; a higher priority preempts `running`.
TEST(ForecasterTest, OutlookReachesPodsQueueAndGauges) {
  std::shared_ptr<const core::ClusterSnapshot> snap = Example();
  Metrics metrics;
  preemption::AdmissionOptions admission;
  admission.slots.max_slots_per_pod = 4;
  admission.rules.patience_ms = 0;  // `running` has lost 10 minutes: a patient gang would wait.
  Forecaster forecaster(
      admission, 15'000, 16,
      ForecasterDeps{
          .snapshot = [&] { return snap; }, .now_ms = [] { return kNow; }, .metrics = &metrics});
  forecaster.RunOnce(snap);
  std::shared_ptr<const Outlook> o = forecaster.Latest();
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->gangs.at("default/waiting").eta.start_ms, kNow + 20 * kMin);
  EXPECT_EQ(o->gangs.at("default/unknown").eta.start_ms, kNow + 40 * kMin);
  ASSERT_TRUE(o->gangs.at("default/waiting").what_if);
  EXPECT_FALSE(o->gangs.at("default/waiting").what_if->slots_now);
  EXPECT_EQ(o->gangs.at("default/waiting").what_if->priority_now, 51);
  const std::string exposition = metrics.Serialize();
  EXPECT_TRUE(absl::StrContains(
      exposition, R"(phalanx_extender_forecast_queue_delay_seconds{pool="",priority="50"} 2400)"))
      << exposition;
  EXPECT_TRUE(
      absl::StrContains(exposition, R"(phalanx_extender_forecast_gangs{estimate="yes"} 2)"));

  ScriptedServer server([](const ScriptedRequest&) {
    return ScriptedResponse{200, {R"({"kind":"Pod"})"}};
  });
  kube::Client client(kube::Config{.server = server.url()});
  AdmissionLoop loop(admission, 1000,
                     LoopDeps{.client = &client,
                              .snapshot = [&] { return snap; },
                              .now_ms = [] { return kNow; },
                              .outlook = [&] { return forecaster.Latest(); }},
                     Refusals(0, 60'000));
  loop.RunOnce(*snap);
  std::string waiting_patch;
  for (const ScriptedRequest& r : server.requests()) {
    if (absl::StrContains(r.target, "/pods/waiting-0")) waiting_patch = r.body;
  }
  EXPECT_TRUE(absl::StrContains(waiting_patch, R"("phalanx.io/eta":"2026-11-29T12:20:00Z")"))
      << waiting_patch;
  EXPECT_TRUE(absl::StrContains(waiting_patch, R"("phalanx.io/what-if":"{\"priority\":51)"))
      << waiting_patch;
  EXPECT_TRUE(absl::StrContains(loop.DebugQueueJson(), R"("eta":"2026-11-29T12:40:00Z")"))
      << loop.DebugQueueJson();
}

}  // namespace
}  // namespace phalanx::extender
