// kube::Informer's error paths against a scripted server: a failed list backs off and retries,
// 410 Gone mid-watch relists and drops objects that disappeared, undecodable objects are counted
// (and keep their last good version), and Stop() ends held watches promptly.
#include "kube/informer.h"

#include <atomic>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/kube/scripted_server.h"
#include "tests/testing/fixtures.h"

namespace phalanx::kube {
namespace {

using testing::ScriptedRequest;
using testing::ScriptedResponse;
using testing::ScriptedServer;

std::string Node(const std::string& name, const std::string& version) {
  return absl::StrCat(R"({"metadata":{"name":")", name, R"(","resourceVersion":")", version,
                      R"("},"status":{"allocatable":{"cpu":"4","nvidia.com/gpu":"8"}}})");
}

std::string Pod(const std::string& name, const std::string& cpu, const std::string& node) {
  return absl::StrCat(R"({"metadata":{"name":")", name, R"(","namespace":"ns","uid":"uid-)", name,
                      R"("},"spec":{"nodeName":")", node,
                      R"(","containers":[{"resources":{"requests":{"cpu":")", cpu,
                      R"("}}}]},"status":{"phase":"Running"}})");
}

std::string List(const std::string& version, const std::string& items) {
  return absl::StrCat(R"({"kind":"List","metadata":{"resourceVersion":")", version,
                      R"("},"items":[)", items, "]}");
}

constexpr absl::string_view kGone =
    R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}})"
    "\n";

bool Eventually(const std::function<bool()>& ok) {
  for (absl::Time end = absl::Now() + absl::Seconds(10); absl::Now() < end;) {
    if (ok()) return true;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return ok();
}

TEST(KubeInformerTest, RetriesFailedListsRelistsAfterGoneAndCountsDecodeErrors) {
  std::atomic<int> node_lists{0};
  std::atomic<int> pod_lists{0};
  ScriptedServer server([&](const ScriptedRequest& r) {
    const bool watch = absl::StrContains(r.target, "watch=true");
    if (absl::StartsWith(r.target, "/api/v1/nodes")) {
      if (!watch) {
        return ++node_lists == 1
                   ? ScriptedResponse{200, {List("10", Node("a", "3") + "," + Node("b", "4"))}}
                   : ScriptedResponse{200, {List("20", Node("b", "4"))}};
      }
      if (absl::StrContains(r.target, "resourceVersion=10")) {
        return ScriptedResponse{200, {std::string(kGone)}};
      }
      return ScriptedResponse{200, {}, absl::Seconds(30)};
    }
    if (!watch) {
      if (++pod_lists == 1) return ScriptedResponse{500, {"etcd is sad"}};
      return ScriptedResponse{200, {List("5", Pod("p1", "1", "b") + "," + Pod("bad", "x", "b"))}};
    }
    return ScriptedResponse{200, {}, absl::Seconds(30)};
  });
  Client client(Config{.server = server.url()});
  InformerOptions options;
  options.initial_backoff = absl::Milliseconds(10);
  Informer informer(client, options);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Seconds(10)));
  ASSERT_TRUE(Eventually([&] { return informer.counters().relists == 1 && node_lists == 2; }));
  ASSERT_TRUE(Eventually([&] { return informer.Snapshot()->node_count() == 1; }));

  std::shared_ptr<const core::ClusterSnapshot> s = informer.Snapshot();
  ASSERT_EQ(s->node(0).name, "b");
  EXPECT_EQ(s->used(0), testing::PodRequests(1000, 0, 0));
  EXPECT_EQ(s->pod_count(), 1u);
  EXPECT_NE(s->FindPod("uid-p1"), nullptr);
  InformerCounters c = informer.counters();
  EXPECT_EQ(c.nodes, 1);
  EXPECT_EQ(c.pods, 1);
  EXPECT_EQ(c.errors, 1);  // The failed pod list.
  EXPECT_EQ(c.decode_errors, 1);
  EXPECT_TRUE(
      absl::StrContains(c.last_error, "pod ns/bad: spec.containers[0].resources.requests.cpu"))
      << c.last_error;
  EXPECT_GE(c.watch_restarts, 1);

  absl::Time start = absl::Now();
  informer.Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
}

// A pod whose update no longer decodes keeps its last good version (its capacity stays used),
// after a watch event and after the relist that follows 410 Gone alike; a pod never decoded stays
// out.
TEST(KubeInformerTest, ObjectsThatStopDecodingKeepTheirLastGoodVersion) {
  std::atomic<int> pod_lists{0};
  ScriptedServer server([&](const ScriptedRequest& r) {
    const bool watch = absl::StrContains(r.target, "watch=true");
    if (absl::StartsWith(r.target, "/api/v1/nodes")) {
      if (!watch) return ScriptedResponse{200, {List("1", Node("a", "1"))}};
      return ScriptedResponse{200, {}, absl::Seconds(30)};
    }
    if (!watch) {
      if (++pod_lists == 1) return ScriptedResponse{200, {List("5", Pod("p", "1", "a"))}};
      return ScriptedResponse{200, {List("6", Pod("p", "x", "a") + "," + Pod("q", "x", "a"))}};
    }
    if (absl::StrContains(r.target, "resourceVersion=5&")) {
      return ScriptedResponse{
          200,
          {absl::StrCat(R"({"type":"MODIFIED","object":)", Pod("p", "x", "a"), "}\n"),
           std::string(kGone)}};
    }
    return ScriptedResponse{200, {}, absl::Seconds(30)};
  });
  Client client(Config{.server = server.url()});
  Informer informer(client);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Seconds(10)));
  // One from the event, two from the relist.
  ASSERT_TRUE(Eventually([&] { return informer.counters().decode_errors == 3; }));
  std::shared_ptr<const core::ClusterSnapshot> s = informer.Snapshot();
  EXPECT_EQ(s->used(0), testing::PodRequests(1000, 0, 0));
  EXPECT_EQ(s->pod_count(), 1u);
  EXPECT_NE(s->FindPod("uid-p"), nullptr);
  InformerCounters c = informer.counters();
  EXPECT_EQ(c.relists, 1);
  EXPECT_EQ(c.pods, 1);
}

// A server that ends every watch at once, with no event, is not watched again in a tight loop.
TEST(KubeInformerTest, WatchesThatEndAtOnceAreBackedOff) {
  std::atomic<int> node_watches{0};
  ScriptedServer server([&](const ScriptedRequest& r) {
    const bool watch = absl::StrContains(r.target, "watch=true");
    if (absl::StartsWith(r.target, "/api/v1/nodes")) {
      if (!watch) return ScriptedResponse{200, {List("1", Node("a", "1"))}};
      ++node_watches;
      return ScriptedResponse{200, {}};
    }
    if (!watch) return ScriptedResponse{200, {List("1", "")}};
    return ScriptedResponse{200, {}, absl::Seconds(30)};
  });
  Client client(Config{.server = server.url()});
  Informer informer(client);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Seconds(10)));
  absl::SleepFor(absl::Milliseconds(1500));
  informer.Stop();
  // 100 ms doubling: about 5 watches in 1.5 s; without the back-off, hundreds.
  EXPECT_GE(node_watches.load(), 2);
  EXPECT_LE(node_watches.load(), 10);
}

TEST(KubeInformerTest, WatchEventsUpdateTheSnapshotAndVersion) {
  std::atomic<bool> go = false;  // The watch's events wait until the synced version is read.
  ScriptedServer server([&](const ScriptedRequest& r) {
    const bool watch = absl::StrContains(r.target, "watch=true");
    if (absl::StartsWith(r.target, "/api/v1/nodes")) {
      if (!watch) return ScriptedResponse{200, {List("1", Node("a", "1"))}};
      return ScriptedResponse{200, {}, absl::Seconds(30)};
    }
    if (!watch) return ScriptedResponse{200, {List("1", "")}};
    if (!absl::StrContains(r.target, "resourceVersion=1&")) {
      return ScriptedResponse{200, {}, absl::Seconds(30)};
    }
    Eventually([&] { return go.load(); });
    return ScriptedResponse{
        200,
        {absl::StrCat(R"({"type":"ADDED","object":)", Pod("p", "2", "a"), "}\n"),
         absl::StrCat(R"({"type":"MODIFIED","object":)", Pod("p", "3", "a"), "}\n"),
         absl::StrCat(R"({"type":"ADDED","object":)", Pod("q", "1", "a"), "}\n"),
         absl::StrCat(R"({"type":"DELETED","object":)", Pod("q", "1", "a"), "}\n")},
        absl::Seconds(30)};
  });
  Client client(Config{.server = server.url()});
  Informer informer(client);
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(absl::Seconds(10)));
  uint64_t seen = informer.version();
  go = true;
  ASSERT_TRUE(Eventually([&] { return informer.counters().events == 4; }));
  EXPECT_GT(informer.WaitForChange(seen, absl::Seconds(1)), seen);
  std::shared_ptr<const core::ClusterSnapshot> s = informer.Snapshot();
  EXPECT_EQ(s->used(0), testing::PodRequests(3000, 0, 0));
  EXPECT_EQ(s->pod_count(), 1u);
  EXPECT_EQ(s->FindPod("uid-q"), nullptr);
  EXPECT_EQ(informer.Snapshot(), s);  // Nothing changed: the same snapshot.
}

}  // namespace
}  // namespace phalanx::kube
