// phalanx-extender's filter + prioritize over HTTP keep-alive at 5000 nodes (NodeNames mode) with
// 100k cached pods: p50 and p99 service time per verb, each divided by the time to merely parse
// the same request body (the floor), measured side by side in one run: one of each in turn. The
// client does what kube-scheduler's Go net/http client does: keep-alive, TCP_NODELAY, gzip
// accepted, the request's first 4 KB written from its buffer and the rest in writes of up to 32 KB
// (io.Copy into the connection), the reply read with reads as large as it
// (Go's JSON decoder grows its buffer, and a large read bypasses the 4 KB bufio.Reader). The same
// verbs are also timed through cpp-httplib's client, which polls before each 4 KB read. For scale,
// the transport rows time the same request answered with a canned reply of each verb's size by a
// bare cpp-httplib server: HTTP alone, with no parsing and no decision. The in-process rows time
// what the server's handlers do with the body (ServeFilter, ServePrioritize) without HTTP. The
// machine line gives the share of CPU time the hypervisor took (steal) during the run: the p99s
// follow it.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
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

httplib::Client KeepAliveClient(int port) {
  httplib::Client client("127.0.0.1", port);
  client.set_keep_alive(true);
  client.set_tcp_nodelay(true);
  client.set_default_headers({{"Accept-Encoding", "gzip"}});
  return client;
}

// One keep-alive connection used as kube-scheduler's Go client uses its own (see the top).
class GoLikeClient {
 public:
  explicit GoLikeClient(int port) : fd_(socket(AF_INET, SOCK_STREAM, 0)), buf_(1 << 20, '\0') {
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) std::abort();
  }
  ~GoLikeClient() { close(fd_); }

  // The reply's body; aborts unless the reply is a 200 with a Content-Length.
  std::string Post(const std::string& path, const std::string& body) {
    const std::string request = absl::StrCat(
        "POST ", path, " HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: Go-http-client/1.1",
        "\r\nContent-Length: ", body.size(),
        "\r\nContent-Type: application/json\r\nAccept-Encoding: gzip\r\n\r\n", body);
    // net/http flushes its 4 KB bufio.Writer (the head and the body's start), then io.Copy hands
    // the rest to the connection in reads of up to 32 KB.
    for (size_t at = 0; at < request.size();) {
      const size_t chunk = at == 0 ? 4096 : 32768;
      ssize_t n = send(fd_, request.data() + at, std::min(chunk, request.size() - at), 0);
      if (n <= 0) std::abort();
      at += n;
    }
    size_t got = 0, head = 0, length = 0;
    while (head == 0 || got < head + length) {
      ssize_t n = recv(fd_, buf_.data() + got, buf_.size() - got, 0);
      if (n <= 0) std::abort();
      got += n;
      if (head == 0) head = ParseHead(absl::string_view(buf_.data(), got), &length);
    }
    return buf_.substr(head, length);
  }

 private:
  // The size of the reply's head once it is complete (0 before), and its Content-Length.
  static size_t ParseHead(absl::string_view data, size_t* length) {
    size_t end = data.find("\r\n\r\n");
    if (end == absl::string_view::npos) return 0;
    std::vector<absl::string_view> lines = absl::StrSplit(data.substr(0, end), "\r\n");
    if (!absl::StartsWith(lines[0], "HTTP/1.1 200 ")) std::abort();
    for (absl::string_view line : lines) {
      std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(line, ": ");
      if (absl::EqualsIgnoreCase(kv.first, "Content-Length") &&
          absl::SimpleAtoi(kv.second, length)) {
        return end + 4;
      }
    }
    std::abort();
  }

  int fd_;
  std::string buf_;
};

// CPU time ticks from /proc/stat: those the hypervisor took (steal) and all those not idle.
struct CpuTicks {
  int64_t steal = 0;
  int64_t busy = 0;
};

CpuTicks ReadCpuTicks() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  std::array<int64_t, 8> t{};  // user nice system idle iowait irq softirq steal
  stat >> cpu;
  for (int64_t& v : t) stat >> v;
  return {t[7], t[0] + t[1] + t[2] + t[5] + t[6] + t[7]};
}

std::string HttplibPost(httplib::Client& client, const char* path, const std::string& body) {
  httplib::Result r = client.Post(path, body, "application/json");
  if (!r || r->status != 200) std::abort();
  return r->body;
}

// Service times of the same request through each client, one of each in turn.
struct ByClient {
  Stats go_like;
  Stats httplib;
};

// `body` posted to a bare server (keep-alive, TCP_NODELAY like the extender's) that answers
// `reply`.
ByClient Transport(const std::string& body, const std::string& reply) {
  httplib::Server server;
  server.set_keep_alive_max_count(100000);
  server.set_tcp_nodelay(true);
  server.Post("/",
              [&](const auto&, auto& res) { res.set_content(reply, extender::kJsonContentType); });
  int port = server.bind_to_any_port("127.0.0.1");
  std::thread thread([&] { server.listen_after_bind(); });
  GoLikeClient go(port);
  httplib::Client client = KeepAliveClient(port);
  std::vector<double> go_us, httplib_us;
  for (int i = 0; i < kRequests; ++i) {
    go_us.push_back(TimeUs([&] { go.Post("/", body); }));
    httplib_us.push_back(TimeUs([&] { HttplibPost(client, "/", body); }));
  }
  server.stop();
  thread.join();
  return {Percentiles(go_us), Percentiles(httplib_us)};
}

void PrintRow(const char* name, Stats s, Stats floor) {
  std::printf("%-12s %10.0f %10.0f %12.2f %12.2f\n", name, s.p50_us, s.p99_us,
              s.p50_us / floor.p50_us, s.p99_us / floor.p99_us);
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
  GoLikeClient go(server.port());
  httplib::Client client = KeepAliveClient(server.port());
  for (int i = 0; i < 50; ++i) {  // Warm up.
    go.Post("/filter", body);
    HttplibPost(client, "/filter", body);
  }
  const std::string filter_reply = go.Post("/filter", body);
  const std::string prioritize_reply = go.Post("/prioritize", body);
  if (HttplibPost(client, "/prioritize", body) != prioritize_reply) std::abort();
  const CpuTicks before = ReadCpuTicks();
  // One of each in turn, so that a noisy moment of the machine falls on all alike.
  std::vector<double> floor_us, filter_us, prioritize_us, httplib_filter_us, httplib_prioritize_us;
  std::vector<double> handle_filter_us, handle_prioritize_us;
  for (int i = 0; i < kRequests; ++i) {
    floor_us.push_back(TimeUs([&] {
      if (!extender::ParseExtenderArgs(body).ok()) std::abort();
    }));
    handle_filter_us.push_back(TimeUs([&] {
      if (!extender::ServeFilter(verbs, *snap, body, 0).ok()) std::abort();
    }));
    handle_prioritize_us.push_back(TimeUs([&] {
      if (!extender::ServePrioritize(verbs, *snap, body, 0).ok()) std::abort();
    }));
    filter_us.push_back(TimeUs([&] { go.Post("/filter", body); }));
    prioritize_us.push_back(TimeUs([&] { go.Post("/prioritize", body); }));
    httplib_filter_us.push_back(TimeUs([&] { HttplibPost(client, "/filter", body); }));
    httplib_prioritize_us.push_back(TimeUs([&] { HttplibPost(client, "/prioritize", body); }));
  }
  server.Stop();
  const ByClient filter_transport = Transport(body, filter_reply);
  const ByClient prioritize_transport = Transport(body, prioritize_reply);
  const CpuTicks after = ReadCpuTicks();
  const Stats floor = Percentiles(floor_us);
  std::printf(
      "extender over HTTP keep-alive: %d nodes (NodeNames), %d cached pods, body %zu bytes, "
      "%d requests each\n",
      kNodes, kPods, body.size(), kRequests);
  std::printf(
      "machine: %u cores; the hypervisor took %.0f%% of the CPU time the run used\n",
      std::thread::hardware_concurrency(),
      100.0 * (after.steal - before.steal) / std::max<int64_t>(1, after.busy - before.busy));
  std::printf("%-12s %10s %10s %12s %12s\n", "", "p50 us", "p99 us", "p50/floor", "p99/floor");
  std::printf("%-12s %10.0f %10.0f %12s %12s\n", "parse floor", floor.p50_us, floor.p99_us, "1.0",
              "1.0");
  std::printf("in-process handling (what a handler does: parse, decide, encode; no HTTP):\n");
  PrintRow("filter", Percentiles(handle_filter_us), floor);
  PrintRow("prioritize", Percentiles(handle_prioritize_us), floor);
  std::printf("Go-like client:\n");
  PrintRow("filter", Percentiles(filter_us), floor);
  PrintRow("prioritize", Percentiles(prioritize_us), floor);
  std::printf("cpp-httplib client:\n");
  PrintRow("filter", Percentiles(httplib_filter_us), floor);
  PrintRow("prioritize", Percentiles(httplib_prioritize_us), floor);
  std::printf("transport only (canned replies of %zu and %zu bytes), Go-like client:\n",
              filter_reply.size(), prioritize_reply.size());
  PrintRow("filter", filter_transport.go_like, floor);
  PrintRow("prioritize", prioritize_transport.go_like, floor);
  std::printf("transport only, cpp-httplib client:\n");
  PrintRow("filter", filter_transport.httplib, floor);
  PrintRow("prioritize", prioritize_transport.httplib, floor);
  return 0;
}

}  // namespace
}  // namespace phalanx

int main() { return phalanx::Main(); }
