// The victim policy of issue 27 through the real kube-scheduler and phalanx-extender: a
// same-priority gang backfilled provisionally on the nodes a blocked head holds is taken back by
// that head once it could start; a run that checkpointed a minute ago is the victim rather than an
// equal one that never did; a freshly started run is not a victim while an older one frees
// enough, and is one when nothing else does.
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "kube/decode.h"
#include "kube/json.h"
#include "tests/extender_e2e/harness.h"

namespace phalanx::e2e {
namespace {

using Nodes = std::vector<std::string>;

std::string Rfc3339(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

class PolicyE2e : public ExtenderE2eTest {
 protected:
  bool AnyMarked() {
    for (const PodState& p : Pods()) {
      if (p.info.preempt_requested) return true;
    }
    return false;
  }

  // Plays the kubelet of a run that began at `start`: status.startTime of every live pod of the
  // gang. (kwok writes it once, when the pod starts running, and leaves it alone afterwards.)
  void SetStartTime(const std::string& gang, absl::Time start) {
    for (const PodState& p : GangPods(gang)) {
      absl::StatusOr<std::string> r = client_->Patch(
          kube::kPods, ns_, p.info.name, kube::PatchType::kMerge,
          absl::StrCat(R"({"status":{"startTime":")", Rfc3339(start), R"("}})"), "status");
      ASSERT_TRUE(r.ok()) << r.status();
    }
  }

  // Writes annotation `key` = `value` on every live pod of the gang, as phalanx-master does.
  void Annotate(const std::string& gang, absl::string_view key, const std::string& value) {
    for (const PodState& p : GangPods(gang)) {
      absl::StatusOr<std::string> r = client_->Patch(
          kube::kPods, ns_, p.info.name, kube::PatchType::kMerge,
          absl::StrCat(R"({"metadata":{"annotations":{)", kube::EncodeJsonString(key), ":",
                       kube::EncodeJsonString(value), "}}}"));
      ASSERT_TRUE(r.ok()) << r.status();
    }
  }

  // How long the gang's run has gone on, from its first member's status.startTime.
  absl::Duration RunAge(const std::string& gang) {
    const std::vector<PodState> pods = GangPods(gang);
    if (pods.empty() || pods[0].info.start_ms == 0) return absl::ZeroDuration();
    return absl::Now() - absl::FromUnixMillis(pods[0].info.start_ms);
  }
};

// A head blocked by running work of its own priority holds both nodes as they drain; a
// preemptible peer of that priority behind it runs on the free one as the head's to take back
// (phalanx.io/backfilled names the head). It is not marked while the head could not start anyway;
// once the blocking work ends, the head marks it, and runs on both nodes when it is gone.
TEST_F(PolicyE2e, ProvisionalBackfillIsReclaimedByTheHeadItPassed) {
  AddNodes("n", 2, 4);
  Submit({.name = "blocker", .gpus = 4, .priority = 50, .position = 1});
  StartExtender(4);
  ASSERT_TRUE(WaitUntil([&] { return Running("blocker"); }));
  const std::string blocked = BoundNodes("blocker").at(0);
  const std::string other = blocked == NodeName("n", 0) ? NodeName("n", 1) : NodeName("n", 0);

  Submit({.name = "head", .pods = 2, .gpus = 4, .priority = 50, .position = 2});
  ASSERT_TRUE(WaitUntil([&] { return Queued("head").state == "WAIT"; }))
      << "head is " << Queued("head").state << ": " << Queued("head").reason;
  Submit({.name = "peer", .gpus = 4, .priority = 50, .position = 3});
  ASSERT_TRUE(WaitUntil([&] { return Running("peer"); })) << "peer never backfilled";
  EXPECT_EQ(BoundNodes("peer"), Nodes{other});
  EXPECT_EQ(GangPods("peer").at(0).info.backfilled_behind, Key("head"));
  Holds(
      "peer is not marked while blocker runs", [&] { return !AnyMarked() && Gated("head"); },
      absl::Seconds(3));

  Finish("blocker");
  ASSERT_TRUE(WaitUntil([&] { return Marked("peer"); })) << "head never took peer back";
  EXPECT_EQ(PreemptedBy("peer"), Key("head"));
  EXPECT_EQ(Queued("head").state, "PREEMPT");
  EXPECT_EQ(RequeueVictims(), Nodes{"peer"});
  ASSERT_TRUE(WaitUntil([&] { return Running("head"); }));
  EXPECT_EQ(BoundNodes("head"), (Nodes{NodeName("n", 0), NodeName("n", 1)}));
  Settle();
  EXPECT_TRUE(Gated("peer"));
}

// Two equal runs of ten minutes (the test reports both as started then, as their kubelet would):
// "saved" checkpointed a minute ago and loses a minute of work, "unsaved" never did and loses ten.
// Without the checkpoint, unsaved would be the victim (equal lost work: it is on the first node and
// the newer), so the head takes saved's node.
TEST_F(PolicyE2e, CheckpointedRunIsTheCheaperVictim) {
  AddNodes("n", 2, 4);
  StartExtender(4);
  Submit({.name = "saved",
          .gpus = 4,
          .priority = 40,
          .position = 1,
          .affinity_host = NodeName("n", 1)});
  ASSERT_TRUE(WaitUntil([&] { return Running("saved"); }));
  Submit({.name = "unsaved",
          .gpus = 4,
          .priority = 40,
          .position = 2,
          .affinity_host = NodeName("n", 0)});
  // Once kwok has written each run's start, so that it cannot overwrite the one set below.
  ASSERT_TRUE(WaitUntil([&] {
    return Running("unsaved") && RunAge("saved") > absl::ZeroDuration() &&
           RunAge("unsaved") > absl::ZeroDuration();
  }));
  const absl::Time now = absl::Now();
  ASSERT_NO_FATAL_FAILURE(SetStartTime("saved", now - absl::Minutes(10)));
  ASSERT_NO_FATAL_FAILURE(SetStartTime("unsaved", now - absl::Minutes(10)));
  ASSERT_NO_FATAL_FAILURE(
      Annotate("saved", kube::kCheckpointedAtAnnotation, Rfc3339(now - absl::Minutes(1))));
  const PodState saved = GangPods("saved").at(0);
  EXPECT_EQ(saved.info.start_ms, absl::ToUnixMillis(now - absl::Minutes(10)) / 1000 * 1000);
  EXPECT_EQ(saved.info.checkpoint_ms, absl::ToUnixMillis(now - absl::Minutes(1)) / 1000 * 1000);

  Submit({.name = "head", .gpus = 4, .priority = 60, .position = 3});
  ASSERT_TRUE(WaitUntil([&] { return AnyMarked(); }));
  EXPECT_TRUE(Marked("saved"));
  EXPECT_EQ(PreemptedBy("saved"), Key("head"));
  Holds(
      "unsaved is not marked", [&] { return !Marked("unsaved"); }, absl::Seconds(3));
  EXPECT_EQ(RequeueVictims(), Nodes{"saved"});
  ASSERT_TRUE(WaitUntil([&] { return Running("head"); }));
  EXPECT_EQ(BoundNodes("head"), Nodes{NodeName("n", 1)});
  EXPECT_TRUE(Running("unsaved"));
}

// With min_run_before_preemption_ms at 2 min: "old" has run 3 min (the test reports it started
// then, as its kubelet would; less than the 5 min patience allows losing) when "fresh" starts;
// fresh has lost less work, yet the head takes old, which frees enough. A second head of the same
// priority then finds only fresh to take back, and takes it while it is still young.
TEST_F(PolicyE2e, FreshRunIsAVictimOnlyWhenNoOlderOneFreesEnough) {
  constexpr absl::Duration kMinRun = absl::Minutes(2);
  AddNodes("n", 2, 4);
  StartExtender(
      4, {absl::StrCat("--min-run-before-preemption-ms=", absl::ToInt64Milliseconds(kMinRun))});
  Submit({.name = "old", .gpus = 4, .priority = 40, .position = 1});
  ASSERT_TRUE(WaitUntil([&] { return Running("old") && RunAge("old") > absl::ZeroDuration(); }));
  const Nodes old_node = BoundNodes("old");
  ASSERT_NO_FATAL_FAILURE(SetStartTime("old", absl::Now() - kMinRun - absl::Minutes(1)));
  Submit({.name = "fresh", .gpus = 4, .priority = 40, .position = 2});
  ASSERT_TRUE(
      WaitUntil([&] { return Running("fresh") && RunAge("fresh") > absl::ZeroDuration(); }));
  const Nodes fresh_node = BoundNodes("fresh");

  Submit({.name = "head", .gpus = 4, .priority = 60, .position = 3});
  ASSERT_TRUE(WaitUntil([&] { return AnyMarked(); }));
  EXPECT_TRUE(Marked("old"));
  EXPECT_EQ(PreemptedBy("old"), Key("head"));
  EXPECT_EQ(RequeueVictims(), Nodes{"old"});
  ASSERT_TRUE(WaitUntil([&] { return Running("head"); }));
  EXPECT_EQ(BoundNodes("head"), old_node);
  EXPECT_FALSE(Marked("fresh"));

  Submit({.name = "head2", .gpus = 4, .priority = 60, .position = 4});
  ASSERT_TRUE(WaitUntil([&] { return Marked("fresh"); })) << "head2 never took fresh back";
  EXPECT_LT(RunAge("fresh"), kMinRun) << "fresh was no longer young when it was marked";
  EXPECT_EQ(PreemptedBy("fresh"), Key("head2"));
  EXPECT_EQ(RequeueVictims(), Nodes{"fresh"});
  ASSERT_TRUE(WaitUntil([&] { return Running("head2"); }));
  EXPECT_EQ(BoundNodes("head2"), fresh_node);
}

}  // namespace
}  // namespace phalanx::e2e
