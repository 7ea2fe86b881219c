// The embedded HTTP server's bounds against a hostile client, over real loopback sockets: a flood
// of idle connections from one address does not stop /healthz from another, and request bodies in
// flight together stay within their budget (503 past it) while a normal request still succeeds and
// the bodies already accepted are answered in full.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "http/server.h"
#include "tests/testing/http_client.h"

namespace phalanx::http {
namespace {

using testing::HttpClient;
using testing::HttpReply;

// A TCP connection from `from` (a 127.0.0.0/8 address) to 127.0.0.1:`port`, not waited for; -1 if
// no socket could be made.
int ConnectFrom(const char* from, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  sockaddr_in source{.sin_family = AF_INET, .sin_port = 0};
  inet_pton(AF_INET, from, &source.sin_addr);
  sockaddr_in target{.sin_family = AF_INET, .sin_port = htons(static_cast<uint16_t>(port))};
  inet_pton(AF_INET, "127.0.0.1", &target.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&source), sizeof(source)) != 0) {
    close(fd);
    return -1;
  }
  connect(fd, reinterpret_cast<sockaddr*>(&target), sizeof(target));  // EINPROGRESS
  return fd;
}

// A blocking connection to 127.0.0.1:`port` with 2 s receive timeouts.
int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in target{.sin_family = AF_INET, .sin_port = htons(static_cast<uint16_t>(port))};
  target.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{.tv_sec = 2, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  if (connect(fd, reinterpret_cast<sockaddr*>(&target), sizeof(target)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string& data) {
  return send(fd, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size());
}

// What arrives on `fd` until the peer closes it, `enough` bytes have come, or 2 s pass quietly.
std::string ReadSome(int fd, size_t enough = 1 << 20) {
  std::string reply;
  char buffer[4096];
  for (ssize_t n; reply.size() < enough && (n = recv(fd, buffer, sizeof(buffer), 0)) > 0;) {
    reply.append(buffer, static_cast<size_t>(n));
  }
  return reply;
}

// 2,000 idle connections from 127.0.0.2, which never send a byte, and /healthz from 127.0.0.1
// still answers at once. (A thread-per-connection server without a per-peer bound stops accepting
// at its total limit; at 120 s of idle time that lasts two minutes.)
TEST(HttpLimitsTest, IdleConnectionsFromOnePeerDoNotStopProbes) {
  Server server(ServerOptions{});
  server.Route("GET", "/healthz", [](const Request&, Response& res) { res.body = "ok\n"; });
  ASSERT_TRUE(server.Start().ok());
  std::vector<int> idle;
  for (int i = 0; i < 2000; ++i) {
    const int fd = ConnectFrom("127.0.0.2", server.port());
    ASSERT_GE(fd, 0) << "connection " << i << ": " << strerror(errno);
    idle.push_back(fd);
  }
  absl::SleepFor(absl::Milliseconds(500));  // The server has taken (or refused) them by now.
  HttpClient client(absl::StrCat("http://127.0.0.1:", server.port()));
  const absl::Time start = absl::Now();
  absl::StatusOr<HttpReply> r = client.Get("/healthz");
  const absl::Duration took = absl::Now() - start;
  for (int fd : idle) close(fd);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "ok\n");
  EXPECT_LT(took, absl::Seconds(1));
}

// Over one peer's limit, its further connections are closed at once; others' are not.
TEST(HttpLimitsTest, ConnectionsPastThePeerLimitAreClosed) {
  Server server(ServerOptions{.limits = {.max_connections_per_peer = 2}});
  server.Route("GET", "/healthz", [](const Request&, Response& res) { res.body = "ok\n"; });
  ASSERT_TRUE(server.Start().ok());
  std::vector<int> held;
  for (int i = 0; i < 2; ++i) held.push_back(Connect(server.port()));
  const int third = Connect(server.port());
  ASSERT_GE(third, 0);
  SendAll(third, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");  // May find it closed already.
  EXPECT_EQ(ReadSome(third), "");                              // Closed without an answer.
  close(third);
  ASSERT_TRUE(SendAll(held[0], "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  EXPECT_TRUE(absl::StartsWith(ReadSome(held[0]), "HTTP/1.1 200")) << "a held one still serves";
  for (int fd : held) close(fd);
}

// Three requests each declaring a 400 KB body, sent in part, against a 1 MiB budget for bodies in
// flight: the third is answered 503 with Retry-After before its body is read; a small request
// still succeeds; the first two, once their bodies are in, are served in full.
TEST(HttpLimitsTest, BodiesInFlightAreBoundedInTotal) {
  Server server(
      ServerOptions{.max_body_bytes = 512 << 10, .limits = {.max_inflight_body_bytes = 1 << 20}});
  server.Route("POST", "/size", [](const Request& req, Response& res) {
    res.body = absl::StrCat(req.body.size(), "\n");
  });
  ASSERT_TRUE(server.Start().ok());
  constexpr size_t kBody = 400'000;
  const std::string head = absl::StrCat(
      "POST /size HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: ", kBody, "\r\n\r\n");
  const std::string part(1000, 'a');
  std::vector<int> partial;
  for (int i = 0; i < 2; ++i) {
    partial.push_back(Connect(server.port()));
    ASSERT_GE(partial.back(), 0);
    ASSERT_TRUE(SendAll(partial.back(), head + part));
    absl::SleepFor(absl::Milliseconds(100));  // Its head is in before the next one's.
  }
  const int refused = Connect(server.port());
  ASSERT_GE(refused, 0);
  ASSERT_TRUE(SendAll(refused, head + part));
  const std::string busy = ReadSome(refused);
  close(refused);
  EXPECT_TRUE(absl::StartsWith(busy, "HTTP/1.1 503")) << busy;
  EXPECT_TRUE(absl::StrContains(busy, "Retry-After: 1\r\n")) << busy;

  HttpClient client(absl::StrCat("http://127.0.0.1:", server.port()));
  absl::StatusOr<HttpReply> small = client.Post("/size", std::string(100, 'b'));
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(small->status, 200);
  EXPECT_EQ(small->body, "100\n");

  for (int fd : partial) {
    ASSERT_TRUE(SendAll(fd, std::string(kBody - part.size(), 'a')));
    const std::string reply = ReadSome(fd);
    EXPECT_TRUE(absl::StartsWith(reply, "HTTP/1.1 200")) << reply;
    EXPECT_TRUE(absl::EndsWith(reply, "\r\n\r\n400000\n")) << reply;
    close(fd);
  }
  // Their budget is back: a full-size body fits again.
  absl::StatusOr<HttpReply> again = client.Post("/size", std::string(kBody, 'c'));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->status, 200);
}

// A chunked body (no Content-Length) is charged as it arrives: past the budget it is dropped and
// answered 503 once it ends.
TEST(HttpLimitsTest, ChunkedBodiesCountAsTheyArrive) {
  Server server(
      ServerOptions{.max_body_bytes = 512 << 10, .limits = {.max_inflight_body_bytes = 300'000}});
  server.Route("POST", "/size", [](const Request& req, Response& res) {
    res.body = absl::StrCat(req.body.size(), "\n");
  });
  ASSERT_TRUE(server.Start().ok());
  const int held = Connect(server.port());
  ASSERT_TRUE(SendAll(held,
                      "POST /size HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                      "Content-Length: 200000\r\n\r\n"));
  absl::SleepFor(absl::Milliseconds(100));
  const int chunked = Connect(server.port());
  const std::string chunk =
      absl::StrCat(absl::Hex(150'000), "\r\n", std::string(150'000, 'x'), "\r\n");
  ASSERT_TRUE(SendAll(chunked,
                      "POST /size HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                      "Transfer-Encoding: chunked\r\n\r\n" +
                          chunk + "0\r\n\r\n"));
  const std::string reply = ReadSome(chunked);
  EXPECT_TRUE(absl::StartsWith(reply, "HTTP/1.1 503")) << reply;
  close(chunked);
  ASSERT_TRUE(SendAll(held, std::string(200'000, 'h')));
  EXPECT_TRUE(absl::EndsWith(ReadSome(held), "\r\n\r\n200000\n"));
  close(held);
}

}  // namespace
}  // namespace phalanx::http
