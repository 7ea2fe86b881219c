// phalanx-extender's filter + prioritize over HTTP keep-alive at 5000 nodes (NodeNames mode) with
// 100k cached pods: p50 and p99 service time per verb, each divided by the time to merely parse
// the same request body (the floor), measured side by side in one run: one of each in turn. The
// client does what kube-scheduler's Go net/http client does: keep-alive, TCP_NODELAY, gzip
// accepted, the request's first 4 KB written from its buffer and the rest in writes of up to 32 KB
// (io.Copy into the connection), the reply read with reads as large as it
// (Go's JSON decoder grows its buffer, and a large read bypasses the 4 KB bufio.Reader). The same
// verbs are also timed through libcurl's client. For scale, the transport rows time the same
// request answered with a canned reply of each verb's size: by a bare http::Server (HTTP
// alone, with no parsing and no decision), and by a bare socket loop that reads until the body is
// in and answers with one send (what the kernel and the machine cost any HTTP server). The
// in-process rows time what the server's handlers do with the body (ServeFilter,
// ServePrioritize) without HTTP. One more row times filter requests sent after 5 or 15 ms of idle,
// as at a live arrival rate. The machine line gives the share of CPU time the hypervisor took
// (steal) during the run: the p99s follow it.
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
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "http/server.h"
#include "scheduler_extender/server.h"
#include "kube/placement_key.h"
#include "scheduler_extender/wire.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/http_client.h"

namespace phalanx {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kNodes = 5000;
constexpr int kPods = 100'000;
constexpr int kRequests = 2000;
constexpr int kSpacedRequests = 400;  // About 4 s of idle gaps.

std::shared_ptr<const core::ClusterSnapshot> Cluster() {
  core::SnapshotBuilder b;
  for (int i = 0; i < kNodes; ++i) b.UpsertNode(testing::GpuNode(absl::StrCat("node-", i), 8));
  for (int i = 0; i < kPods; ++i) {
    core::PodInfo p;
    p.ns = "bench";
    p.uid = p.name = absl::StrCat("pod-", i);
    p.node = absl::StrCat("node-", i % kNodes);
    p.phase = core::PodPhase::kRunning;
    p.requests = testing::PodRequests(100, 1 << 20, i % 20 == 0 ? 1 : 0);
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

testing::HttpClient KeepAliveClient(int port) {
  return testing::HttpClient(absl::StrCat("http://127.0.0.1:", port));
}

// The size of an HTTP message's head once it is complete (0 before), and its Content-Length;
// aborts when the head has none.
size_t HeadSize(absl::string_view data, size_t* length) {
  size_t end = data.find("\r\n\r\n");
  if (end == absl::string_view::npos) return 0;
  for (absl::string_view line : absl::StrSplit(data.substr(0, end), "\r\n")) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(line, ": ");
    if (absl::EqualsIgnoreCase(kv.first, "Content-Length") && absl::SimpleAtoi(kv.second, length)) {
      return end + 4;
    }
  }
  std::abort();
}

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

void NoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// Reads one HTTP message from `fd` into `buf`: the size of its head and of its body, or nullopt
// when the peer closed the connection.
std::optional<std::pair<size_t, size_t>> ReadMessage(int fd, std::string& buf) {
  size_t got = 0, head = 0, length = 0;
  while (head == 0 || got < head + length) {
    ssize_t n = recv(fd, buf.data() + got, buf.size() - got, 0);
    if (n <= 0) return std::nullopt;
    got += n;
    if (head == 0) head = HeadSize(absl::string_view(buf.data(), got), &length);
  }
  return std::make_pair(head, length);
}

// One keep-alive connection used as kube-scheduler's Go client uses its own (see the top).
class GoLikeClient {
 public:
  explicit GoLikeClient(int port) : fd_(socket(AF_INET, SOCK_STREAM, 0)), buf_(1 << 20, '\0') {
    NoDelay(fd_);
    sockaddr_in addr = Loopback(port);
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
    std::optional<std::pair<size_t, size_t>> reply = ReadMessage(fd_, buf_);
    if (!reply || !absl::StartsWith(buf_, "HTTP/1.1 200 ")) std::abort();
    return buf_.substr(reply->first, reply->second);
  }

 private:
  int fd_;
  std::string buf_;
};

// Answers each request of one keep-alive connection with `reply` in a single send, once the
// request's head and body are in: HTTP with nothing but what the kernel does.
class BareServer {
 public:
  explicit BareServer(const std::string& reply)
      : fd_(socket(AF_INET, SOCK_STREAM, 0)),
        out_(absl::StrCat("HTTP/1.1 200 OK\r\nContent-Type: ", extender::kJsonContentType,
                          "\r\nContent-Length: ", reply.size(), "\r\n\r\n", reply)) {
    sockaddr_in addr = Loopback(0);
    socklen_t size = sizeof(addr);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), size) != 0 || listen(fd_, 1) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &size) != 0) {
      std::abort();
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  // Returns once the client has closed its connection.
  ~BareServer() {
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }

 private:
  void Serve() {
    const int conn = accept(fd_, nullptr, nullptr);
    NoDelay(conn);
    std::string buf(1 << 20, '\0');
    while (ReadMessage(conn, buf)) {
      if (send(conn, out_.data(), out_.size(), 0) != static_cast<ssize_t>(out_.size())) break;
    }
    close(conn);
  }

  int fd_;
  std::string out_;
  int port_ = 0;
  std::thread thread_;
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

std::string CurlPost(testing::HttpClient& client, const char* path, const std::string& body) {
  absl::StatusOr<testing::HttpReply> r = client.Post(path, body, {{"Accept-Encoding", "gzip"}});
  if (!r.ok() || r->status != 200) std::abort();
  return r->body;
}

// Service times of the same request through each client and server, one of each in turn.
struct TransportTimes {
  Stats go_like;  // Go-like client, bare http::Server.
  Stats curl;     // libcurl client, bare http::Server.
  Stats socket;   // Go-like client, bare socket server.
};

// `body` posted to bare servers (keep-alive, TCP_NODELAY like the extender's) that answer `reply`.
TransportTimes Transport(const std::string& body, const std::string& reply) {
  BareServer bare(reply);  // Declared first: it waits for its client to go.
  http::Server server(http::ServerOptions{});
  server.Route("POST", "/", [&](const http::Request&, http::Response& res) {
    res.content_type = extender::kJsonContentType;
    res.body = reply;
  });
  if (!server.Start().ok()) std::abort();
  GoLikeClient go(server.port()), go_bare(bare.port());
  testing::HttpClient client = KeepAliveClient(server.port());
  std::vector<double> go_us, curl_us, socket_us;
  for (int i = 0; i < kRequests; ++i) {
    go_us.push_back(TimeUs([&] { go.Post("/", body); }));
    curl_us.push_back(TimeUs([&] { CurlPost(client, "/", body); }));
    socket_us.push_back(TimeUs([&] { go_bare.Post("/", body); }));
  }
  return {Percentiles(go_us), Percentiles(curl_us), Percentiles(socket_us)};
}

// Service times of `post` with the client idle 5 or 15 ms before each (in turn), as when
// kube-scheduler calls at the rate pods arrive rather than through a backlog.
template <typename Fn>
Stats Spaced(Fn post) {
  std::vector<double> us;
  for (int i = 0; i < kSpacedRequests; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(i % 2 == 0 ? 15 : 5));
    us.push_back(TimeUs(post));
  }
  return Percentiles(us);
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
  const kube::PlacementKey key = kube::PlacementKey::Random();  // As the extender decodes pods.
  extender::ExtenderServer server(
      extender::ServerOptions{.host = "127.0.0.1", .port = 0},
      extender::ServerDeps{.verbs = &verbs,
                           .metrics = &metrics,
                           .snapshot = [&] { return snap; },
                           .ready = [] { return true; },
                           .debug_queue = [] { return std::string("{}"); },
                           .now_ms = [] { return int64_t{0}; },
                           .placement_key = &key});
  if (!server.Start().ok()) return 1;
  GoLikeClient go(server.port());
  testing::HttpClient client = KeepAliveClient(server.port());
  for (int i = 0; i < 50; ++i) {  // Warm up.
    go.Post("/filter", body);
    CurlPost(client, "/filter", body);
  }
  const std::string filter_reply = go.Post("/filter", body);
  const std::string prioritize_reply = go.Post("/prioritize", body);
  if (CurlPost(client, "/prioritize", body) != prioritize_reply) std::abort();
  const CpuTicks before = ReadCpuTicks();
  // One of each in turn, so that a noisy moment of the machine falls on all alike.
  std::vector<double> floor_us, filter_us, prioritize_us, curl_filter_us, curl_prioritize_us;
  std::vector<double> handle_filter_us, handle_prioritize_us;
  for (int i = 0; i < kRequests; ++i) {
    floor_us.push_back(TimeUs([&] {
      if (!extender::ParseExtenderArgs(body, &key).ok()) std::abort();
    }));
    handle_filter_us.push_back(TimeUs([&] {
      if (!extender::ServeFilter(verbs, *snap, body, 0, &key).ok()) std::abort();
    }));
    handle_prioritize_us.push_back(TimeUs([&] {
      if (!extender::ServePrioritize(verbs, *snap, body, 0, &key).ok()) std::abort();
    }));
    filter_us.push_back(TimeUs([&] { go.Post("/filter", body); }));
    prioritize_us.push_back(TimeUs([&] { go.Post("/prioritize", body); }));
    curl_filter_us.push_back(TimeUs([&] { CurlPost(client, "/filter", body); }));
    curl_prioritize_us.push_back(TimeUs([&] { CurlPost(client, "/prioritize", body); }));
  }
  const Stats spaced_filter = Spaced([&] { go.Post("/filter", body); });
  server.Stop();
  const TransportTimes filter_transport = Transport(body, filter_reply);
  const TransportTimes prioritize_transport = Transport(body, prioritize_reply);
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
  std::printf("Go-like client, each request after 5 or 15 ms idle (%d requests):\n",
              kSpacedRequests);
  PrintRow("filter", spaced_filter, floor);
  std::printf("libcurl client:\n");
  PrintRow("filter", Percentiles(curl_filter_us), floor);
  PrintRow("prioritize", Percentiles(curl_prioritize_us), floor);
  std::printf(
      "transport only (canned replies of %zu and %zu bytes), bare http::Server, Go-like "
      "client:\n",
      filter_reply.size(), prioritize_reply.size());
  PrintRow("filter", filter_transport.go_like, floor);
  PrintRow("prioritize", prioritize_transport.go_like, floor);
  std::printf("transport only, bare http::Server, libcurl client:\n");
  PrintRow("filter", filter_transport.curl, floor);
  PrintRow("prioritize", prioritize_transport.curl, floor);
  std::printf("transport only, bare socket server, Go-like client:\n");
  PrintRow("filter", filter_transport.socket, floor);
  PrintRow("prioritize", prioritize_transport.socket, floor);
  return 0;
}

}  // namespace
}  // namespace phalanx

int main() { return phalanx::Main(); }
