// phalanx-extender's filter + prioritize over HTTP keep-alive at 5000 nodes (NodeNames mode) with
// 100k cached pods: p50 and p99 service time per verb, each divided by the time to merely parse
// the same request body (the floor), measured side by side in one run: one of each in turn. The
// client sends what kube-scheduler's Go client sends (keep-alive, TCP_NODELAY, gzip accepted).
// For scale, the transport rows time the same request answered with a canned reply of each verb's
// size by a bare cpp-httplib server: HTTP alone, with no parsing and no decision.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "httplib.h"
#include "scheduler_extender/server.h"
#include "scheduler_extender/wire.h"
#include "tests/testing/fixtures.h"

namespace phalanx {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kNodes = 5000;
constexpr int kPods = 100'000;
constexpr int kRequests = 2000;

std::shared_ptr<const core::ClusterSnapshot> Cluster() {
  core::SnapshotBuilder b;
  for (int i = 0; i < kNodes; ++i) b.UpsertNode(testing::GpuNode(absl::StrCat("node-", i), 8));
  for (int i = 0; i < kPods; ++i) {
    core::PodInfo p;
    p.ns = "bench";
    p.uid = p.name = absl::StrCat("pod-", i);
    p.node = absl::StrCat("node-", i % kNodes);
    p.phase = core::PodPhase::kRunning;
    p.requests = core::Resources(100, 1 << 20, i % 20 == 0 ? 1 : 0);
    b.UpsertPod(std::move(p));
  }
  return b.Build();
}

std::string RequestBody() {
  std::vector<std::string> names;
  for (int i = 0; i < kNodes; ++i) names.push_back(absl::StrCat("\"node-", i, "\""));
  return absl::StrCat(
      "{\"Pod\":{\"metadata\":{\"name\":\"trial-0\",\"namespace\":\"ml\",\"uid\":\"u-1\","
      "\"creationTimestamp\":\"2025-03-04T09:12:41Z\",\"labels\":{\"app\":\"x\"}},\"spec\":{"
      "\"containers\":[{\"name\":\"phalanx-container\",\"image\":\"i\",\"resources\":{\"requests\":"
      "{\"cpu\":\"4\",\"memory\":\"16Gi\",\"nvidia.com/gpu\":\"2\"}}}],"
      "\"schedulerName\":\"phalanx\",\"priority\":50},\"status\":{\"phase\":\"Pending\"}},"
      "\"Nodes\":null,\"NodeNames\":[",
      absl::StrJoin(names, ","), "]}");
}

struct Stats {
  double p50_us;
  double p99_us;
};

Stats Percentiles(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[us.size() * 99 / 100]};
}

template <typename Fn>
double TimeUs(Fn fn) {
  auto start = Clock::now();
  fn();
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

template <typename Fn>
Stats Measure(Fn fn) {
  std::vector<double> us;
  for (int i = 0; i < kRequests; ++i) us.push_back(TimeUs(fn));
  return Percentiles(std::move(us));
}

httplib::Client KeepAliveClient(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_keep_alive(true);
  // As kube-scheduler's Go net/http client: TCP_NODELAY, and gzip accepted on every request.
  client.set_tcp_nodelay(true);
  client.set_default_headers({{"Accept-Encoding", "gzip"}});
  return client;
}

// `body` posted to a bare server (keep-alive, TCP_NODELAY like the extender's) that answers
// `reply`.
Stats Transport(const std::string& body, const std::string& reply) {
  httplib::Server server;
  server.set_keep_alive_max_count(100000);
  server.set_tcp_nodelay(true);
  server.Post("/",
              [&](const auto&, auto& res) { res.set_content(reply, extender::kJsonContentType); });
  int port = server.bind_to_any_port("127.0.0.1");
  std::thread thread([&] { server.listen_after_bind(); });
  httplib::Client client = KeepAliveClient(port);
  Stats s = Measure([&] {
    httplib::Result r = client.Post("/", body, "application/json");
    if (!r || r->status != 200) std::abort();
  });
  server.stop();
  thread.join();
  return s;
}

int Main() {
  auto snap = Cluster();
  std::string body = RequestBody();
  extender::ReservationBook book;
  extender::Verbs verbs(gang::SlotPolicy{}, 30'000, &book);
  extender::Metrics metrics;
  extender::ExtenderServer server(
      extender::ServerOptions{.host = "127.0.0.1", .port = 0},
      extender::ServerDeps{.verbs = &verbs,
                           .metrics = &metrics,
                           .snapshot = [&] { return snap; },
                           .ready = [] { return true; },
                           .debug_queue = [] { return std::string("{}"); },
                           .now_ms = [] { return int64_t{0}; }});
  if (!server.Start().ok()) return 1;
  httplib::Client client = KeepAliveClient(server.port());
  auto post = [&](const char* path) {
    httplib::Result r = client.Post(path, body, "application/json");
    if (!r || r->status != 200) std::abort();
    return r->body;
  };
  for (int i = 0; i < 50; ++i) post("/filter");  // warm up
  const std::string filter_reply = post("/filter");
  const std::string prioritize_reply = post("/prioritize");
  // One of each in turn, so that a noisy moment of the machine falls on all three alike.
  std::vector<double> floor_us, filter_us, prioritize_us;
  for (int i = 0; i < kRequests; ++i) {
    floor_us.push_back(TimeUs([&] {
      if (!extender::ParseExtenderArgs(body).ok()) std::abort();
    }));
    filter_us.push_back(TimeUs([&] { post("/filter"); }));
    prioritize_us.push_back(TimeUs([&] { post("/prioritize"); }));
  }
  Stats floor = Percentiles(floor_us), filter = Percentiles(filter_us);
  Stats prioritize = Percentiles(prioritize_us);
  server.Stop();
  Stats filter_transport = Transport(body, filter_reply);
  Stats prioritize_transport = Transport(body, prioritize_reply);
  std::printf(
      "extender over HTTP keep-alive: %d nodes (NodeNames), %d cached pods, body %zu bytes, "
      "%d requests each\n",
      kNodes, kPods, body.size(), kRequests);
  std::printf("%-12s %10s %10s %12s %12s\n", "", "p50 us", "p99 us", "p50/floor", "p99/floor");
  std::printf("%-12s %10.0f %10.0f %12s %12s\n", "parse floor", floor.p50_us, floor.p99_us, "1.0",
              "1.0");
  for (auto [name, s] : {std::pair{"filter", filter}, std::pair{"prioritize", prioritize}}) {
    std::printf("%-12s %10.0f %10.0f %12.2f %12.2f\n", name, s.p50_us, s.p99_us,
                s.p50_us / floor.p50_us, s.p99_us / floor.p99_us);
  }
  std::printf("transport only (canned replies of %zu and %zu bytes):\n", filter_reply.size(),
              prioritize_reply.size());
  for (auto [name, s] :
       {std::pair{"filter", filter_transport}, std::pair{"prioritize", prioritize_transport}}) {
    std::printf("%-12s %10.0f %10.0f %12.2f %12.2f\n", name, s.p50_us, s.p99_us,
                s.p50_us / floor.p50_us, s.p99_us / floor.p99_us);
  }
  return 0;
}

}  // namespace
}  // namespace phalanx

int main() { return phalanx::Main(); }
