// Following kube-scheduler's Lease (leadership.h): parsing the Lease, when a replica leads, the
// record aging out when reads fail, and an admission round that stops at its next write when it
// loses the lead. The takeover itself runs on the real test cluster
// (tests/e2e/extender_ha_test.cc).
#include "scheduler_extender/leadership.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "scheduler_extender/admission_loop.h"
#include "tests/kube/scripted_server.h"
#include "tests/testing/fixtures.h"

namespace phalanx::extender {
namespace {

using phalanx::testing::ScriptedRequest;
using phalanx::testing::ScriptedResponse;
using phalanx::testing::ScriptedServer;

// 2026-12-07T12:00:00Z in Unix ms.
constexpr int64_t kRenewMs = 1'796'644'800'000;

std::string LeaseJson(const std::string& holder, int seconds = 4,
                      const std::string& renew = "2026-12-07T12:00:00.000000Z") {
  return absl::StrCat(
      R"({"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"phalanx-scheduler","namespace":"kube-system"},)",
      R"("spec":{"holderIdentity":")", holder, R"(","leaseDurationSeconds":)", seconds,
      R"(,"acquireTime":"2026-12-07T11:00:00.000000Z","renewTime":")", renew,
      R"(","leaseTransitions":3}})");
}

TEST(LeaseTest, ParsesWhatKubeSchedulerWrites) {
  absl::StatusOr<LeaseRecord> l = ParseLease(LeaseJson("sched-a_6f1c2f3e-1111"));
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->holder, "sched-a_6f1c2f3e-1111");
  EXPECT_EQ(l->renew_ms, kRenewMs);
  EXPECT_EQ(l->duration_ms, 4000);
  // Without renewTime, acquireTime counts.
  l = ParseLease(LeaseJson("x", 4, ""));
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ(l->renew_ms, kRenewMs - 3'600'000);
}

TEST(LeaseTest, BadLeasesNameTheField) {
  EXPECT_NE(ParseLease("not json").status().message().find("not JSON"), absl::string_view::npos);
  EXPECT_NE(ParseLease(LeaseJson("x", 4, "yesterday")).status().message().find("renewTime"),
            absl::string_view::npos);
  EXPECT_NE(ParseLease(LeaseJson("x", -1)).status().message().find("leaseDurationSeconds"),
            absl::string_view::npos);
  EXPECT_NE(
      ParseLease(R"({"spec":{"holderIdentity":7}})").status().message().find("holderIdentity"),
      absl::string_view::npos);
}

TEST(LeaseTest, HeldWhileRenewedWithinHalfItsDuration) {
  const LeaseRecord lease{"sched-a_uuid", kRenewMs, 4000};
  EXPECT_TRUE(HeldBy(lease, "sched-a_", kRenewMs, 0));
  EXPECT_TRUE(HeldBy(lease, "sched-a_", kRenewMs + 1999, 1999));
  EXPECT_FALSE(HeldBy(lease, "sched-a_", kRenewMs + 2000, 0)) << "stale: the holder may be gone";
  EXPECT_FALSE(HeldBy(lease, "sched-a_", kRenewMs, 2000))
      << "renewed in this host's future, but unchanged for half its duration";
  EXPECT_FALSE(HeldBy(lease, "sched-b_", kRenewMs, 0));
  EXPECT_FALSE(HeldBy(lease, "sched-a_1", kRenewMs, 0)) << "another host's name";
  EXPECT_FALSE(HeldBy(lease, "", kRenewMs, 0)) << "an empty prefix names nobody";
  EXPECT_FALSE(HeldBy(LeaseRecord{"sched-a_uuid", -1, 4000}, "sched-a_", kRenewMs, 0));
  EXPECT_FALSE(HeldBy(LeaseRecord{"sched-a_uuid", kRenewMs, 0}, "sched-a_", kRenewMs, 0));
  EXPECT_FALSE(HeldBy(LeaseRecord{"", kRenewMs, 4000}, "sched-a_", kRenewMs, 0)) << "released";
}

TEST(LeaseTest, DefaultPrefixIsTheHostName) {
  const std::string prefix = DefaultHolderPrefix();
  ASSERT_GT(prefix.size(), 1u);
  EXPECT_TRUE(absl::EndsWith(prefix, "_"));
}

TEST(LeaseTest, TheHolderPrefixIsThePodsOwnName) {
  EXPECT_EQ(*HolderPrefix("", "sched-7d9f-x2k4q_", "sched-7d9f-x2k4q"), "sched-7d9f-x2k4q_");
  EXPECT_EQ(*HolderPrefix("", "laptop_", ""), "laptop_") << "outside a pod";
  EXPECT_EQ(*HolderPrefix("ha-b_", "vm_", "anything"), "ha-b_") << "configured";
  // A pod name over 63 characters: its host name is cut, and may be another replica's too.
  const std::string pod(67, 'p');
  absl::StatusOr<std::string> cut = HolderPrefix("", std::string(63, 'p') + "_", pod);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("lease_holder_prefix"), absl::string_view::npos);
  EXPECT_FALSE(HolderPrefix("", "_", "").ok()) << "no host name";
}

TEST(LeadershipTest, FollowsTheLeaseAndAgesOutWhenItCannotBeRead) {
  std::atomic<int> mode = 0;  // 0: ours, 1: read fails, 2: another holder, 3: no lease.
  ScriptedServer server([&](const ScriptedRequest& r) {
    EXPECT_EQ(r.target, "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/sched");
    switch (mode.load()) {
      case 0:
        return ScriptedResponse{200, {LeaseJson("me_1")}};
      case 1:
        return ScriptedResponse{500, {R"({"kind":"Status","code":500})"}};
      case 2:
        return ScriptedResponse{200, {LeaseJson("other_2")}};
      default:
        return ScriptedResponse{404, {R"({"kind":"Status","code":404,"reason":"NotFound"})"}};
    }
  });
  kube::Client client(kube::Config{.server = server.url()});
  int64_t now = kRenewMs + 100;
  Leadership lead({.lease_namespace = "kube-system", .lease_name = "sched", .holder_prefix = "me_"},
                  &client, [&] { return now; });
  EXPECT_FALSE(lead.Leads()) << "nothing read yet";
  lead.Poll();
  EXPECT_TRUE(lead.Leads());
  EXPECT_EQ(lead.Holder(), "me_1");
  mode = 1;
  lead.Poll();
  EXPECT_TRUE(lead.Leads()) << "a failed read keeps the last record while it is fresh";
  now = kRenewMs + 2000;
  EXPECT_FALSE(lead.Leads()) << "and it ages out";
  now = kRenewMs + 100;
  mode = 2;
  lead.Poll();
  EXPECT_FALSE(lead.Leads());
  mode = 0;
  lead.Poll();
  EXPECT_TRUE(lead.Leads());
  mode = 3;
  lead.Poll();
  EXPECT_FALSE(lead.Leads());
  EXPECT_EQ(lead.Holder(), "");
}

TEST(LeadershipTest, ARoundStopsWritingWhenItLosesTheLead) {
  core::SnapshotBuilder b;
  b.UpsertNode(testing::GpuNode("n", 16));
  for (const char* name : {"first", "second"}) {
    for (core::PodInfo p : testing::GatedGang(
             {.name = name, .gpus_per_pod = 4, .created_ms = name[0] == 'f' ? 1 : 2})) {
      b.UpsertPod(p);
    }
  }
  std::shared_ptr<const core::ClusterSnapshot> snap = b.Build();
  std::atomic<bool> leads = true;
  ScriptedServer server([&](const ScriptedRequest& r) {
    if (absl::StrContains(r.target, "/pods/first-")) leads = false;  // Lost while writing.
    return ScriptedResponse{200, {R"({"kind":"Pod"})"}};
  });
  kube::Client client(kube::Config{.server = server.url()});
  ReservationBook book;
  AdmissionLoop loop(preemption::AdmissionOptions{}, /*resync_ms=*/1000,
                     LoopDeps{.client = &client,
                              .reservations = &book,
                              .snapshot = [&] { return snap; },
                              .now_ms = [] { return int64_t{0}; },
                              .leads = [&] { return leads.load(); }},
                     Refusals(0, 60'000));
  preemption::RoundResult r = loop.RunOnce(*snap);
  ASSERT_EQ(r.decisions.size(), 2u);
  EXPECT_EQ(r.decisions[1].verdict, preemption::Verdict::kAdmit);
  int writes = 0;
  for (const ScriptedRequest& req : server.requests()) {
    ++writes;
    EXPECT_TRUE(absl::StrContains(req.target, "/pods/first-")) << "written: " << req.target;
  }
  EXPECT_EQ(writes, 1) << "writes went on after the lead was lost during the first";
}

}  // namespace
}  // namespace phalanx::extender
