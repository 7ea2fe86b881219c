// Golden tests of the extender wire protocol over real HTTP (keep-alive): every verb in both
// cache modes from the reference's JSON examples, lowercase keys, malformed and oversized bodies,
// unknown paths, health and metrics.
#include "scheduler_extender/server.h"

#include <gtest/gtest.h>

#include <fstream>
#include <mutex>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "simdjson.h"
#include "tests/extender/cluster_fixture.h"
#include "tests/testing/http_client.h"
#include "tests/testing/promtool.h"

namespace phalanx::extender {
namespace {

std::string Testdata(const std::string& name) {
  std::ifstream in(std::string(PHALANX_EXTENDER_TESTDATA) + "/" + name);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(s.str().empty()) << name;
  return s.str();
}

// Whether a TCP socket on local `port` is closing (FIN_WAIT1, FIN_WAIT2 or TIME_WAIT), per
// /proc/net/tcp: such a socket keeps the port bound for a plain bind.
bool ClosingSocketOn(int port) {
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);  // The header.
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    const int local_port = std::stoi(local.substr(local.find(':') + 1), nullptr, 16);
    if (local_port == port && (state == "04" || state == "05" || state == "06")) return true;
  }
  return false;
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerDeps deps{.verbs = &verbs_,
                    .metrics = &metrics_,
                    .snapshot = [this] { return snap_; },
                    .ready = [this] { return ready_; },
                    .debug_queue = [] { return std::string("{\"gangs\":[]}"); },
                    .bind =
                        [this](const BindArgs& b) {
                          bound_ = b;
                          return absl::OkStatus();
                        },
                    .now_ms = [] { return int64_t{1000}; }};
    server_ = std::make_unique<ExtenderServer>(
        ServerOptions{.host = "127.0.0.1", .port = 0, .max_body_bytes = 64 * 1024}, deps);
    ASSERT_TRUE(server_->Start().ok());
    client_ = NewClient(server_->port());
  }
  void TearDown() override {
    client_.reset();
    server_->Stop();
  }

  static std::unique_ptr<testing::HttpClient> NewClient(int port) {
    return std::make_unique<testing::HttpClient>(absl::StrCat("http://127.0.0.1:", port));
  }
  absl::StatusOr<testing::HttpReply> Post(const std::string& path, const std::string& body) {
    return client_->Post(path, body);
  }

  std::shared_ptr<const core::ClusterSnapshot> snap_ = ExtenderTestCluster();
  ReservationBook book_;
  // Every fitting node passes (no best-fit narrowing): the goldens are the reference's examples.
  Verbs verbs_{gang::SlotPolicy{}, 30'000, &book_, 0};
  Metrics metrics_;
  bool ready_ = true;
  BindArgs bound_;
  std::unique_ptr<ExtenderServer> server_;
  std::unique_ptr<testing::HttpClient> client_;
};

constexpr char kFilterNames[] =
    "{\"Nodes\":null,\"NodeNames\":[\"gpu-node-01\",\"gpu-node-03\"],"
    "\"FailedNodes\":{\"gpu-node-02\":\"insufficient nvidia.com/gpu after reservations\"},"
    "\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}";

TEST_F(ServerTest, FilterNodeNames) {
  absl::StatusOr<testing::HttpReply> r = Post("/filter", Testdata("filter_node_names.json"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, kFilterNames);
}

TEST_F(ServerTest, FilterLowercaseKeys) {
  absl::StatusOr<testing::HttpReply> r = Post("/filter", Testdata("filter_lowercase.json"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, kFilterNames);
}

TEST_F(ServerTest, FilterNodeListReturnsNodesUnchanged) {
  std::string request = Testdata("filter_node_list.json");
  absl::StatusOr<testing::HttpReply> r = Post("/filter", request);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, 200);
  simdjson::dom::parser parser;
  simdjson::dom::element reply = parser.parse(r->body);
  EXPECT_TRUE(reply["NodeNames"].is_null());
  simdjson::dom::array items = reply["Nodes"]["items"];
  ASSERT_EQ(items.size(), 2u);
  simdjson::dom::parser parser2;
  simdjson::dom::array sent = parser2.parse(request)["Nodes"]["items"];
  // gpu-node-01 and gpu-node-03 come back byte for byte as sent (minified).
  EXPECT_EQ(simdjson::minify(items.at(0)), simdjson::minify(sent.at(0)));
  EXPECT_EQ(simdjson::minify(items.at(1)), simdjson::minify(sent.at(2)));
  EXPECT_EQ(std::string_view(reply["FailedNodes"]["gpu-node-02"]),
            "insufficient nvidia.com/gpu after reservations");
}

// gpu-node-03 has room for one pod (allocatable "pods"), and holds one: the filtered pod, decoded
// from the request, would be one too many there (kube-scheduler's "Too many pods").
TEST_F(ServerTest, FilterFailsANodeWithoutRoomForAnotherPod) {
  core::SnapshotBuilder b(snap_);
  core::Node full = testing::GpuNode("gpu-node-03", 8);
  full.allocatable.Set(core::kPods, 1);
  b.UpsertNode(full);
  snap_ = b.Build();
  absl::StatusOr<testing::HttpReply> r = Post("/filter", Testdata("filter_node_names.json"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body,
            "{\"Nodes\":null,\"NodeNames\":[\"gpu-node-01\"],"
            "\"FailedNodes\":{\"gpu-node-02\":\"insufficient nvidia.com/gpu after reservations\","
            "\"gpu-node-03\":\"too many pods after reservations\"},"
            "\"FailedAndUnresolvableNodes\":{},\"Error\":\"\"}");
}

TEST_F(ServerTest, PrioritizePacks) {
  absl::StatusOr<testing::HttpReply> r = Post("/prioritize", Testdata("filter_node_names.json"));
  ASSERT_TRUE(r.ok()) << r.status();
  // Used GPUs after placing 2, out of 8, times 10: (0+2)*10/8 = 2; (7+2) -> 11, capped at 10;
  // (2+2)*10/8 = 5.
  EXPECT_EQ(r->body,
            "[{\"Host\":\"gpu-node-01\",\"Score\":2},{\"Host\":\"gpu-node-02\",\"Score\":10},"
            "{\"Host\":\"gpu-node-03\",\"Score\":5}]");
  absl::StatusOr<testing::HttpReply> list = Post("/prioritize", Testdata("filter_node_list.json"));
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->body, r->body);
  absl::StatusOr<testing::HttpReply> lower = Post("/prioritize", Testdata("filter_lowercase.json"));
  ASSERT_TRUE(lower.ok()) << lower.status();
  EXPECT_EQ(lower->body, r->body);
}

// Go's client, kube-scheduler's, accepts gzip on every request; a compressed reply costs the
// extender far more CPU than the bytes cost in-cluster, so replies go out plain.
TEST_F(ServerTest, RepliesStayUncompressedWhenTheClientAcceptsGzip) {
  absl::StatusOr<testing::HttpReply> r = client_->Post(
      "/prioritize", Testdata("filter_node_names.json"), {{"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->headers.count("content-encoding"), 0u);
  EXPECT_EQ(r->Header("content-type"), "application/json; charset=utf-8");
  EXPECT_EQ(r->body.front(), '[');
}

// Node names never need escaping, but any other name is still valid JSON.
TEST(WireTest, HostPrioritiesEscapeNamesThatNeedIt) {
  EXPECT_EQ(EncodeHostPriorities({"a\"b", "n-1"}, {10, 0}),
            "[{\"Host\":\"a\\\"b\",\"Score\":10},{\"Host\":\"n-1\",\"Score\":0}]");
  EXPECT_EQ(EncodeHostPriorities({}, {}), "[]");
}

// Every character that needs escaping, at every position of names of every length up to 19, among
// characters that do not (space, DEL, the neighbours of '"' and '\\'), and UTF-8 names: the reply
// parses, and each host comes back as it was, with its score (-1 to 11: one digit or more).
TEST(WireTest, HostPrioritiesRoundTripEveryNameWhereverItsSpecialCharacterSits) {
  constexpr char kPlain[] =
      " !#[]~\x7f"
      "A";  // Split: "\x7fA" would be one escape.
  std::vector<std::string> hosts;
  for (char special : {'"', '\\', '\x01', '\x1f', '\n'}) {
    for (size_t len = 1; len < 20; ++len) {
      for (size_t at = 0; at < len; ++at) {
        std::string name;
        for (size_t i = 0; i < len; ++i) name += kPlain[i % 8];
        name[at] = special;
        hosts.push_back(name);
      }
    }
  }
  for (size_t len = 0; len < 20; ++len) hosts.push_back(std::string(len, '#'));
  hosts.push_back("n\xc5\x93ud-\xc3\xa9t\xc3\xa9-01");
  std::vector<int64_t> scores;
  for (size_t i = 0; i < hosts.size(); ++i) scores.push_back(static_cast<int64_t>(i % 13) - 1);
  const std::string reply = EncodeHostPriorities(hosts, scores);
  simdjson::dom::parser parser;
  simdjson::dom::array list;
  ASSERT_EQ(parser.parse(reply).get(list), simdjson::SUCCESS) << reply;
  ASSERT_EQ(list.size(), hosts.size());
  size_t i = 0;
  for (simdjson::dom::element e : list) {
    EXPECT_EQ(std::string_view(e["Host"]), hosts[i]) << i;
    EXPECT_EQ(int64_t(e["Score"]), scores[i]) << i;
    ++i;
  }
}

constexpr char kPreempt[] =
    "{\"NodeNameToMetaVictims\":{\"gpu-node-02\":{\"Pods\":[{\"UID\":\"low-a-0\"},"
    "{\"UID\":\"low-a-1\"}],\"NumPDBViolations\":0}}}";

TEST_F(ServerTest, PreemptWidensToGangsAndDropsNonPreemptible) {
  absl::StatusOr<testing::HttpReply> r = Post("/preempt", Testdata("preempt_meta.json"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, kPreempt);
}

TEST_F(ServerTest, PreemptLowercaseKeys) {
  absl::StatusOr<testing::HttpReply> r = Post("/preempt", Testdata("preempt_lowercase.json"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, kPreempt);
}

TEST_F(ServerTest, PreemptWithFullVictimPods) {
  absl::StatusOr<testing::HttpReply> r = Post("/preempt", Testdata("preempt_full_pods.json"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, kPreempt);
}

// Victims the cache has not seen yet (kube-scheduler's cache may be ahead of it): preempt waits
// for the cache instead of dropping their node.
TEST_F(ServerTest, PreemptWaitsForTheCacheToSeeItsVictims) {
  std::mutex mu;
  std::shared_ptr<const core::ClusterSnapshot> current = core::SnapshotBuilder().Build();
  int waits = 0;
  ServerDeps deps{.verbs = &verbs_,
                  .metrics = &metrics_,
                  .snapshot =
                      [&] {
                        std::lock_guard<std::mutex> lock(mu);
                        return current;
                      },
                  .await_cache =
                      [&](int64_t) {
                        std::lock_guard<std::mutex> lock(mu);
                        ++waits;
                        current = snap_;  // The cache catches up.
                      },
                  .ready = [] { return true; },
                  .debug_queue = [] { return std::string("{}"); },
                  .now_ms = [] { return int64_t{1000}; }};
  ExtenderServer server(ServerOptions{.host = "127.0.0.1", .port = 0}, deps);
  ASSERT_TRUE(server.Start().ok());
  absl::StatusOr<testing::HttpReply> r =
      NewClient(server.port())->Post("/preempt", Testdata("preempt_meta.json"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, kPreempt);
  EXPECT_EQ(waits, 1);
  server.Stop();
}

// Victims the cache never sees: their node is dropped, and the log says so.
TEST_F(ServerTest, PreemptLogsNodesDroppedForVictimsTheCacheNeverSaw) {
  int waits = 0;
  ServerDeps deps{.verbs = &verbs_,
                  .metrics = &metrics_,
                  .snapshot = [] { return core::SnapshotBuilder().Build(); },
                  .await_cache = [&](int64_t) { ++waits; },
                  .ready = [] { return true; },
                  .debug_queue = [] { return std::string("{}"); },
                  .now_ms = [] { return int64_t{1000}; }};
  ExtenderServer server(ServerOptions{.host = "127.0.0.1", .port = 0}, deps);
  ASSERT_TRUE(server.Start().ok());
  ::testing::internal::CaptureStderr();
  absl::StatusOr<testing::HttpReply> r =
      NewClient(server.port())->Post("/preempt", Testdata("preempt_meta.json"));
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body.find("gpu-node-02"), std::string::npos) << r->body;
  EXPECT_EQ(waits, 20);
  EXPECT_NE(log.find("drops nodes whose victims the cache has not seen: gpu-node-02"),
            std::string::npos)
      << log;
  server.Stop();
}

TEST_F(ServerTest, Bind) {
  absl::StatusOr<testing::HttpReply> r = Post("/bind", Testdata("bind.json"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "{\"Error\":\"\"}");
  EXPECT_EQ(bound_.pod_name, "resnet-train-0-x7k2p");
  EXPECT_EQ(bound_.pod_namespace, "ml");
  EXPECT_EQ(bound_.pod_uid, "4f1c2a7e-9b3d-4e2a-8f61-0c5d7a9e1b23");
  EXPECT_EQ(bound_.node, "gpu-node-01");
  bound_ = BindArgs{};
  r = Post("/bind", Testdata("bind_lowercase.json"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "{\"Error\":\"\"}");
  EXPECT_EQ(bound_.pod_uid, "4f1c2a7e-9b3d-4e2a-8f61-0c5d7a9e1b23");
  EXPECT_EQ(bound_.node, "gpu-node-01");
}

TEST_F(ServerTest, MalformedBodiesAre400WithAMessage) {
  absl::StatusOr<testing::HttpReply> r = Post("/filter", "{not json");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("invalid JSON"), std::string::npos) << r->body;
  r = Post("/filter", "{\"NodeNames\":[\"a\"]}");
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("missing Pod"), std::string::npos) << r->body;
  r = Post("/bind", "{\"PodName\":\"x\"}");
  EXPECT_EQ(r->status, 400);
  EXPECT_NE(r->body.find("PodNamespace"), std::string::npos) << r->body;
  r = Post("/preempt", "[1,2]");
  EXPECT_EQ(r->status, 400);
}

TEST_F(ServerTest, OversizedBodiesAre413) {
  absl::StatusOr<testing::HttpReply> r = Post("/filter", std::string(65 * 1024, ' '));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 413);
}

TEST_F(ServerTest, UnknownVerbsAre404) {
  absl::StatusOr<testing::HttpReply> r = Post("/schedule", "{}");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->body, "unknown path /schedule\n");
}

TEST_F(ServerTest, HealthReadinessAndMetrics) {
  EXPECT_EQ(client_->Get("/healthz")->status, 200);
  EXPECT_EQ(client_->Get("/readyz")->status, 200);
  ready_ = false;
  EXPECT_EQ(client_->Get("/readyz")->status, 503);
  ready_ = true;
  ASSERT_EQ(Post("/filter", Testdata("filter_node_names.json"))->status, 200);
  ASSERT_EQ(Post("/filter", "{").value().status, 400);
  std::string metrics = client_->Get("/metrics")->body;
  EXPECT_NE(metrics.find("phalanx_extender_requests_total{code=\"200\",verb=\"filter\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("phalanx_extender_requests_total{code=\"400\",verb=\"filter\"} 1"),
            std::string::npos);
  EXPECT_NE(metrics.find("phalanx_extender_request_duration_seconds_count{verb=\"filter\"} 2"),
            std::string::npos);
  EXPECT_EQ(client_->Get("/debug/queue")->body, "{\"gangs\":[]}");
}

// Until the cache has listed nodes and pods, the capacity planned gangs hold is unknown: filter
// fails the pod (kube-scheduler retries it) instead of passing it on a partial picture.
TEST_F(ServerTest, FilterFailsThePodUntilTheCacheIsSynced) {
  ready_ = false;
  absl::StatusOr<testing::HttpReply> r = Post("/filter", Testdata("filter_node_names.json"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body,
            "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{},"
            "\"FailedAndUnresolvableNodes\":{},\"Error\":\"informer cache not synced\"}");
  ready_ = true;
  EXPECT_EQ(Post("/filter", Testdata("filter_node_names.json"))->body, kFilterNames);
}

// Gauges fed from elsewhere (the informer's counters) are refreshed when /metrics is read, also
// while no admission round runs (before the first sync, say).
TEST_F(ServerTest, MetricsAreRefreshedWhenRead) {
  ServerDeps deps{.verbs = &verbs_,
                  .metrics = &metrics_,
                  .snapshot = [this] { return snap_; },
                  .ready = [] { return false; },
                  .refresh_metrics = [this] { metrics_.SetWatchRestarts(7); },
                  .debug_queue = [] { return std::string("{}"); },
                  .now_ms = [] { return int64_t{1000}; }};
  ExtenderServer server(ServerOptions{.host = "127.0.0.1", .port = 0}, deps);
  ASSERT_TRUE(server.Start().ok());
  std::string metrics = NewClient(server.port())->Get("/metrics")->body;
  EXPECT_NE(metrics.find("phalanx_extender_watch_restarts_total 7"), std::string::npos) << metrics;
}

TEST_F(ServerTest, RequestsTheServerRefusesAreCounted) {
  ASSERT_EQ(Post("/filter", std::string(65 * 1024, ' '))->status, 413);
  ASSERT_EQ(client_->Get("/prioritize")->status, 405);
  ASSERT_EQ(Post("/schedule", "{}")->status, 404);
  std::string metrics = client_->Get("/metrics")->body;
  for (const char* line : {R"(phalanx_extender_requests_total{code="413",verb="filter"} 1)",
                           R"(phalanx_extender_requests_total{code="405",verb="prioritize"} 1)",
                           R"(phalanx_extender_requests_total{code="404",verb="other"} 1)"}) {
    EXPECT_NE(metrics.find(line), std::string::npos) << line << "\n" << metrics;
  }
}

// Every metric family, after traffic on each verb and code, passes the real promtool linter.
TEST_F(ServerTest, MetricsPassPromtool) {
  ASSERT_EQ(Post("/filter", Testdata("filter_node_names.json"))->status, 200);
  ASSERT_EQ(Post("/preempt", Testdata("preempt_meta.json"))->status, 200);
  ASSERT_EQ(Post("/filter", "{").value().status, 400);
  metrics_.ObserveRound(0.003);
  metrics_.SetGangs("pending", 2);
  metrics_.AddPreemptions(1);
  metrics_.AddReplans(1);
  metrics_.SetCacheObjects("pods", 7);
  metrics_.SetWatchRestarts(1);
  absl::StatusOr<testing::HttpReply> r = client_->Get("/metrics");
  ASSERT_EQ(r->status, 200);
  EXPECT_EQ(r->Header("content-type").rfind("text/plain", 0), 0u);
  absl::Status lint = testing::PromtoolCheck(r->body);
  EXPECT_TRUE(lint.ok()) << lint << "\n" << r->body;
}

// The status listener serves the GET endpoints (for Prometheus and probes), never the verbs.
TEST_F(ServerTest, StatusListenerServesOnlyTheGets) {
  ServerDeps deps{.verbs = &verbs_,
                  .metrics = &metrics_,
                  .snapshot = [this] { return snap_; },
                  .ready = [this] { return ready_; },
                  .debug_queue = [] { return std::string("{\"gangs\":[]}"); },
                  .now_ms = [] { return int64_t{1000}; }};
  ExtenderServer server(
      ServerOptions{.host = "127.0.0.1", .port = 0, .status_host = "127.0.0.1", .status_port = 0},
      deps);
  ASSERT_TRUE(server.Start().ok());
  ASSERT_GT(server.status_port(), 0);
  ASSERT_NE(server.status_port(), server.port());
  std::unique_ptr<testing::HttpClient> status = NewClient(server.status_port());
  EXPECT_EQ(status->Get("/healthz")->status, 200);
  ready_ = false;
  EXPECT_EQ(status->Get("/readyz")->status, 503);
  EXPECT_NE(status->Get("/metrics")->body.find("phalanx_extender_admission_round"),
            std::string::npos);
  EXPECT_EQ(status->Get("/debug/queue")->body, "{\"gangs\":[]}");
  EXPECT_EQ(status->Post("/filter", "{}")->status, 404);
  EXPECT_NE(NewClient(server.port())->Post("/filter", "{}")->status, 404);
  server.Stop();
}

// A restarted extender binds its port again at once although the previous one's connection is
// still closing there (FIN_WAIT or TIME_WAIT), and a second extender cannot share a port in use.
TEST_F(ServerTest, RestartBindsOverTimeWaitButNotOverALiveServer) {
  const int port = server_->port();
  ASSERT_EQ(client_->Get("/healthz")->status, 200);  // A connection the server will close.
  server_->Stop();  // The server closes first: its side of the connection is closing.
  ASSERT_TRUE(ClosingSocketOn(port));
  ServerDeps deps{.verbs = &verbs_,
                  .metrics = &metrics_,
                  .snapshot = [this] { return snap_; },
                  .ready = [] { return true; },
                  .debug_queue = [] { return std::string("{}"); },
                  .now_ms = [] { return int64_t{0}; }};
  server_ = std::make_unique<ExtenderServer>(
      ServerOptions{.host = "127.0.0.1", .port = port, .max_body_bytes = 1024}, deps);
  absl::Status again = server_->Start();
  ASSERT_TRUE(again.ok()) << again;
  ExtenderServer second(ServerOptions{.host = "127.0.0.1", .port = port}, deps);
  EXPECT_FALSE(second.Start().ok());
  client_ = NewClient(port);
  EXPECT_EQ(client_->Get("/healthz")->status, 200);
}

}  // namespace
}  // namespace phalanx::extender
