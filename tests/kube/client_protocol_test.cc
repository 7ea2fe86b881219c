// kube::Client's wire protocol against a scripted server: methods, headers, query strings and
// bodies; watch streams split across reads, bookmarks, ERROR events; HTTP and transport errors.
#include <atomic>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kube/client.h"
#include "kube/status.h"
#include "tests/kube/scripted_server.h"

namespace phalanx::kube {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using testing::ScriptedRequest;
using testing::ScriptedResponse;
using testing::ScriptedServer;

Config ConfigFor(const ScriptedServer& server) {
  Config config;
  config.server = server.url();
  config.token = "s3cret";
  return config;
}

TEST(KubeClientProtocolTest, RequestsCarryMethodPathHeadersAndBodies) {
  ScriptedServer server([](const ScriptedRequest& r) {
    return ScriptedResponse{r.method == "POST" ? 201 : 200, {R"({"kind":"Pod"})"}};
  });
  Client client(ConfigFor(server));
  ASSERT_TRUE(client.Get(kNodes, "ignored", "n1").ok());
  ListOptions list;
  list.label_selector = "a=b,c!=d";
  list.limit = 7;
  list.continue_token = "tok/en+";
  ASSERT_TRUE(client.List(kPods, "ns", list).ok());
  ASSERT_TRUE(client.Create(kPods, "ns", R"({"x":1})").ok());
  for (PatchType type : {PatchType::kMerge, PatchType::kStrategicMerge, PatchType::kJson}) {
    ASSERT_TRUE(client.Patch(kPods, "ns", "p", type, "{}", "status").ok());
  }
  DeleteOptions now;
  now.grace_period_seconds = 0;
  now.uid_precondition = "u-1";
  ASSERT_TRUE(client.Delete(kPods, "ns", "p", now).ok());
  ASSERT_TRUE(client.Bind("ns", "p", "node-1", "u-1").ok());

  std::vector<ScriptedRequest> r = server.requests();
  ASSERT_EQ(r.size(), 8u);
  std::vector<std::pair<std::string, std::string>> calls;
  for (const ScriptedRequest& req : r) calls.emplace_back(req.method, req.target);
  EXPECT_THAT(calls, ElementsAre(Pair("GET", "/api/v1/nodes/n1"),
                                 Pair("GET",
                                      "/api/v1/namespaces/ns/pods?labelSelector=a%3Db%2Cc%21%3Dd"
                                      "&limit=7&continue=tok%2Fen%2B"),
                                 Pair("POST", "/api/v1/namespaces/ns/pods"),
                                 Pair("PATCH", "/api/v1/namespaces/ns/pods/p/status"),
                                 Pair("PATCH", "/api/v1/namespaces/ns/pods/p/status"),
                                 Pair("PATCH", "/api/v1/namespaces/ns/pods/p/status"),
                                 Pair("DELETE", "/api/v1/namespaces/ns/pods/p"),
                                 Pair("POST", "/api/v1/namespaces/ns/pods/p/binding")));
  EXPECT_THAT(r[0].headers, Contains("Authorization: Bearer s3cret"));
  EXPECT_THAT(r[0].headers, Contains("Accept: application/json"));
  EXPECT_THAT(r[2].headers, Contains("Content-Type: application/json"));
  EXPECT_EQ(r[2].body, R"({"x":1})");
  EXPECT_THAT(r[3].headers, Contains("Content-Type: application/merge-patch+json"));
  EXPECT_THAT(r[4].headers, Contains("Content-Type: application/strategic-merge-patch+json"));
  EXPECT_THAT(r[5].headers, Contains("Content-Type: application/json-patch+json"));
  EXPECT_EQ(r[6].body, R"({"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0,)"
                       R"("preconditions":{"uid":"u-1"}})");
  EXPECT_EQ(r[7].body,
            R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":"p","namespace":"ns",)"
            R"("uid":"u-1"},"target":{"apiVersion":"v1","kind":"Node","name":"node-1"}})");
}

// An empty name never reaches the server: DELETE on the collection's path would delete every
// object in it.
// kubeconfig proxy-url: every request goes through the proxy, in absolute form.
TEST(KubeClientProtocolTest, RequestsGoThroughTheProxyUrl) {
  ScriptedServer proxy([](const ScriptedRequest&) {
    return ScriptedResponse{200, {R"({"kind":"Node"})"}};
  });
  Client client(Config{.server = "http://kube.invalid:6443", .proxy_url = proxy.url()});
  ASSERT_TRUE(client.Get(kNodes, "", "n1").ok());
  std::vector<ScriptedRequest> r = proxy.requests();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].target, "http://kube.invalid:6443/api/v1/nodes/n1");
}

TEST(KubeClientProtocolTest, CallsOnOneObjectRefuseAnEmptyName) {
  ScriptedServer server([](const ScriptedRequest&) { return ScriptedResponse{200, {"{}"}}; });
  Client client(ConfigFor(server));
  absl::Status deleted = client.Delete(kNodes, "", "");
  EXPECT_EQ(deleted.code(), absl::StatusCode::kInvalidArgument) << deleted;
  EXPECT_EQ(deleted.message(), "name: required for one nodes object");
  EXPECT_EQ(client.Delete(kPods, "default", "").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client.Get(kPods, "default", "").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client.Patch(kPods, "ns", "", PatchType::kMerge, "{}").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client.Bind("ns", "", "node-1").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(server.requests().empty());
}

// A 409 to a binding is success when the pod turns out bound to that node (a resent POST whose
// first send bound it), and stays an error when it is bound elsewhere or is another pod.
TEST(KubeClientProtocolTest, BindConflictIsSuccessWhenThePodIsOnThatNode) {
  ScriptedServer server([](const ScriptedRequest& r) {
    if (r.method == "POST") {
      return ScriptedResponse{
          409,
          {R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Conflict",)"
           R"("message":"pod p is already assigned to node \"node-1\"","code":409})"}};
    }
    return ScriptedResponse{
        200,
        {R"({"kind":"Pod","metadata":{"name":"p","uid":"u-1"},"spec":{"nodeName":"node-1"}})"}};
  });
  Client client(ConfigFor(server));
  EXPECT_TRUE(client.Bind("ns", "p", "node-1").ok());
  EXPECT_TRUE(client.Bind("ns", "p", "node-1", "u-1").ok());
  absl::Status elsewhere = client.Bind("ns", "p", "node-2");
  EXPECT_EQ(elsewhere.code(), absl::StatusCode::kAborted) << elsewhere;
  EXPECT_THAT(elsewhere.message(), HasSubstr("already assigned"));
  EXPECT_EQ(client.Bind("ns", "p", "node-1", "u-2").code(), absl::StatusCode::kAborted);
  EXPECT_EQ(server.requests().at(1).target, "/api/v1/namespaces/ns/pods/p");
}

TEST(KubeClientProtocolTest, WatchReassemblesSplitLinesAndFollowsBookmarks) {
  ScriptedServer server([](const ScriptedRequest&) {
    return ScriptedResponse{
        200,
        {R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"11"}}})"
         "\n"
         R"({"type":"MODI)",
         R"(FIED","object":{"metadata":{"name":"a","resourceVersion":"12"}}})"
         "\n",
         R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"15"}}})"
         "\n"}};
  });
  Client client(ConfigFor(server));
  WatchOptions options;
  options.resource_version = "10";
  options.label_selector = "app=x";
  std::vector<std::pair<EventType, std::string>> events;
  WatchResult result =
      client.Watch(kPods, "", options, [&](EventType type, simdjson::dom::element object) {
        std::string_view name;
        EXPECT_EQ(object["metadata"]["name"].get(name), simdjson::SUCCESS);
        events.emplace_back(type, std::string(name));
        return true;
      });
  EXPECT_TRUE(result.status.ok()) << result.status;
  EXPECT_EQ(result.resource_version, "15");
  EXPECT_THAT(events, ElementsAre(Pair(EventType::kAdded, "a"), Pair(EventType::kModified, "a")));
  EXPECT_EQ(server.requests().at(0).target,
            "/api/v1/pods?watch=true&allowWatchBookmarks=true&labelSelector=app%3Dx"
            "&resourceVersion=10&timeoutSeconds=300");
}

TEST(KubeClientProtocolTest, WatchErrorEventAndErrorResponseAreGone) {
  const std::string gone =
      R"json({"kind":"Status","apiVersion":"v1","status":"Failure",)json"
      R"json("message":"too old resource version: 3 (20)","reason":"Expired","code":410})json";
  ScriptedServer server([&](const ScriptedRequest& r) {
    if (absl::StrContains(r.target, "resourceVersion=3")) return ScriptedResponse{410, {gone}};
    return ScriptedResponse{
        200,
        {R"({"type":"DELETED","object":{"metadata":{"name":"a","resourceVersion":"11"}}})"
         "\n",
         absl::StrCat(R"({"type":"ERROR","object":)", gone, "}\n")}};
  });
  Client client(ConfigFor(server));
  WatchOptions options;
  options.resource_version = "10";
  int events = 0;
  auto count = [&](EventType, simdjson::dom::element) { return ++events > 0; };
  WatchResult mid_stream = client.Watch(kPods, "", options, count);
  EXPECT_TRUE(IsGone(mid_stream.status)) << mid_stream.status;
  EXPECT_THAT(mid_stream.status.message(), HasSubstr("too old resource version"));
  EXPECT_EQ(mid_stream.resource_version, "11");
  EXPECT_EQ(events, 1);

  options.resource_version = "3";
  WatchResult at_start = client.Watch(kPods, "", options, count);
  EXPECT_TRUE(IsGone(at_start.status)) << at_start.status;
  EXPECT_EQ(at_start.resource_version, "3");
}

TEST(KubeClientProtocolTest, HandlerAndStopFlagEndAWatch) {
  ScriptedServer server([](const ScriptedRequest&) {
    return ScriptedResponse{
        200,
        {R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"2"}}})"
         "\n"},
        absl::Seconds(30)};
  });
  Client client(ConfigFor(server));
  WatchResult by_handler =
      client.Watch(kPods, "", {}, [](EventType, simdjson::dom::element) { return false; });
  EXPECT_TRUE(by_handler.status.ok()) << by_handler.status;
  EXPECT_EQ(by_handler.resource_version, "2");

  std::atomic<bool> stop{false};
  WatchOptions options;
  options.stop = &stop;
  std::thread stopper([&] {
    absl::SleepFor(absl::Milliseconds(200));
    stop = true;
  });
  absl::Time start = absl::Now();
  WatchResult by_flag =
      client.Watch(kPods, "", options, [](EventType, simdjson::dom::element) { return true; });
  stopper.join();
  EXPECT_TRUE(by_flag.status.ok()) << by_flag.status;
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
}

// Informer::RestartWatches while a list is in flight sets `stop` before the watch is answered: the
// stop is ours, not the server's failure, so the informer must not back off.
TEST(KubeClientProtocolTest, AWatchStoppedBeforeItsResponseIsOk) {
  ScriptedServer server([](const ScriptedRequest&) {
    return ScriptedResponse{200, {}, absl::Seconds(30)};
  });
  Client client(ConfigFor(server));
  std::atomic<bool> stop{true};
  WatchOptions options;
  options.resource_version = "7";
  options.stop = &stop;
  WatchResult result =
      client.Watch(kPods, "", options, [](EventType, simdjson::dom::element) { return true; });
  EXPECT_TRUE(result.status.ok()) << result.status;
  EXPECT_EQ(result.resource_version, "7");
}

// A dead connection (a crashed apiserver, a NAT that dropped the flow) sends nothing, not even the
// bookmarks of a healthy watch: the watch ends as if the server had closed it, to be resumed.
TEST(KubeClientProtocolTest, AWatchThatGoesQuietEnds) {
  ScriptedServer server([](const ScriptedRequest& r) {
    if (!absl::StrContains(r.target, "resourceVersion=1&")) {
      return ScriptedResponse{200, {}, absl::Seconds(30)};  // Headers, then silence.
    }
    ScriptedResponse busy{200};  // A bookmark every 10 ms for a second: never quiet.
    for (int v = 2; v <= 100; ++v) {
      busy.chunks.push_back(absl::StrCat(
          R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":")", v, "\"}}}\n"));
    }
    return busy;
  });
  Client client(ConfigFor(server), ClientOptions{.watch_idle_timeout = absl::Milliseconds(500)});
  auto any = [](EventType, simdjson::dom::element) { return true; };
  WatchOptions options;
  options.resource_version = "5";
  absl::Time start = absl::Now();
  WatchResult quiet = client.Watch(kPods, "", options, any);
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  EXPECT_TRUE(quiet.status.ok()) << quiet.status;
  EXPECT_EQ(quiet.resource_version, "5");

  options.resource_version = "1";
  WatchResult busy = client.Watch(kPods, "", options, any);
  EXPECT_TRUE(busy.status.ok()) << busy.status;
  EXPECT_EQ(busy.resource_version, "100");  // Not cut short.
}

TEST(KubeClientProtocolTest, HttpAndTransportErrors) {
  ScriptedServer server([](const ScriptedRequest&) {
    return ScriptedResponse{503, {"upstream connect error"}};
  });
  Client client(ConfigFor(server));
  absl::Status unavailable = client.Get(kPods, "ns", "p").status();
  EXPECT_EQ(unavailable.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(HttpCode(unavailable), 503);
  EXPECT_THAT(unavailable.message(),
              HasSubstr("GET /api/v1/namespaces/ns/pods/p: HTTP 503: upstream connect error"));

  Config closed;
  closed.server = "http://127.0.0.1:1";
  Client nobody(closed);
  absl::Status refused = nobody.Get(kNodes, "", "n").status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  EXPECT_EQ(HttpCode(refused), 0);
}

}  // namespace
}  // namespace phalanx::kube
