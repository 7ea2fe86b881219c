// The embedded HTTP server over real sockets: routing (404, 405 with Allow, before the body; HEAD),
// body limits with and without a Content-Length, keep-alive, handlers running at once, throwing
// handlers and hooks, a Stop that lets requests in flight finish, empty and IPv6 hosts, TLS with a
// certificate made for the test, start-up errors that say what failed, and later log lines.
#include "http/server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "http/log_throttle.h"
#include "tests/testing/http_client.h"

namespace phalanx::http {
namespace {

using testing::HttpClient;
using testing::HttpReply;

std::string Url(const Server& server) { return absl::StrCat("http://127.0.0.1:", server.port()); }

// Sends `request` as written on a new connection to 127.0.0.1:`port`; what comes back before the
// server closes the connection or nothing more arrives for 2 s.
std::string Exchange(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{.sin_family = AF_INET, .sin_port = htons(static_cast<uint16_t>(port))};
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{.tv_sec = 2, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  std::string reply;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
    char buffer[4096];
    for (ssize_t n; (n = recv(fd, buffer, sizeof(buffer), 0)) > 0;) reply.append(buffer, n);
  }
  close(fd);
  return reply;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Route("POST", "/echo", [](const Request& req, Response& res) {
      res.content_type = "application/json";
      res.body = absl::StrCat(req.method, " ", req.path, " ", req.body);
    });
    server_.Route("GET", "/status", [](const Request&, Response& res) {
      res.status = 503;
      res.body = "not yet\n";
    });
    server_.Route("GET", "/throw",
                  [](const Request&, Response&) { throw std::runtime_error("boom"); });
    server_.Route("GET", "/throw-int", [](const Request&, Response&) { throw 42; });
    ASSERT_TRUE(server_.Start().ok());
  }

  std::vector<std::string> Refused() {
    std::lock_guard<std::mutex> lock(mu_);
    return refused_;
  }

  std::mutex mu_;
  std::vector<std::string> refused_;
  Server server_{
      ServerOptions{.max_body_bytes = 1024, .on_refused = [this](const Request& req, int status) {
                      std::lock_guard<std::mutex> lock(mu_);
                      refused_.push_back(absl::StrCat(req.method, " ", req.path, " ", status));
                    }}};
};

TEST_F(HttpServerTest, RoutesByMethodAndPath) {
  HttpClient client(Url(server_));
  absl::StatusOr<HttpReply> r = client.Post("/echo", "{\"a\":1}");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "POST /echo {\"a\":1}");
  EXPECT_EQ(r->Header("content-type"), "application/json");
  r = client.Get("/status");
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->body, "not yet\n");
  EXPECT_EQ(r->Header("content-type"), "text/plain; charset=utf-8");
  r = client.Get("/echo");
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->body, "GET is not allowed on /echo\n");
  EXPECT_EQ(r->Header("allow"), "POST");
  r = client.Post("/nothing", "{}");
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->body, "unknown path /nothing\n");
}

// Every method the path has, HEAD with GET.
TEST_F(HttpServerTest, A405SaysWhichMethodsThePathAllows) {
  Server server(ServerOptions{});
  for (const char* method : {"GET", "POST", "PUT"}) {
    server.Route(method, "/thing", [](const Request&, Response&) {});
  }
  server.Route("POST", "/post", [](const Request&, Response&) {});
  ASSERT_TRUE(server.Start().ok());
  HttpClient client(Url(server));
  absl::StatusOr<HttpReply> r = client.Get("/post");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->Header("allow"), "POST");
  const std::string reply =
      Exchange(server.port(), "DELETE /thing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(absl::StartsWith(reply, "HTTP/1.1 405")) << reply;
  EXPECT_NE(reply.find("\r\nAllow: GET, HEAD, POST, PUT\r\n"), std::string::npos) << reply;
}

// 404 and 405 come as soon as the head is in: a body for no handler is neither waited for nor
// read, not even one over the limit.
TEST_F(HttpServerTest, UnroutedRequestsAreAnsweredBeforeTheirBody) {
  for (const char* head :
       {"POST /nothing HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n",
        "POST /nothing HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"}) {
    const std::string reply = Exchange(server_.port(), head);
    EXPECT_TRUE(absl::StartsWith(reply, "HTTP/1.1 404")) << head << reply;
  }
  const std::string reply = Exchange(
      server_.port(), "POST /status HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_TRUE(absl::StartsWith(reply, "HTTP/1.1 405")) << reply;
  HttpClient client(Url(server_));
  absl::StatusOr<HttpReply> r = client.Post("/status", std::string(4096, 'x'));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 405);  // Not 413.
  EXPECT_EQ(r->Header("allow"), "GET, HEAD");
  EXPECT_EQ(client.Post("/nothing", std::string(4096, 'x'))->status, 404);
  EXPECT_EQ(Refused(),
            (std::vector<std::string>{"POST /nothing 404", "POST /nothing 404", "POST /status 405",
                                      "POST /status 405", "POST /nothing 404"}));
}

// HEAD is GET without the body.
TEST_F(HttpServerTest, HeadIsServedByTheGetHandler) {
  const std::string reply =
      Exchange(server_.port(), "HEAD /status HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(absl::StartsWith(reply, "HTTP/1.1 503")) << reply;
  EXPECT_NE(reply.find("\r\nContent-Length: 8\r\n"), std::string::npos) << reply;
  EXPECT_TRUE(absl::EndsWith(reply, "\r\n\r\n")) << reply;  // No body.
  EXPECT_TRUE(absl::StartsWith(
      Exchange(server_.port(), "HEAD /echo HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
      "HTTP/1.1 405"));
}

TEST_F(HttpServerTest, EveryAnswerTheServerGivesItselfIsReported) {
  HttpClient client(Url(server_));
  ASSERT_TRUE(client.Post("/echo", "fine").ok());
  ASSERT_TRUE(client.Get("/echo").ok());
  ASSERT_TRUE(client.Post("/nothing", "{}").ok());
  ASSERT_TRUE(client.Get("/throw").ok());
  ASSERT_TRUE(client.Post("/echo", std::string(1025, 'x')).ok());
  ASSERT_TRUE(
      client.Post("/echo", std::string(5000, 'x'), {{"Transfer-Encoding", "chunked"}}).ok());
  EXPECT_EQ(Refused(),
            (std::vector<std::string>{"GET /echo 405", "POST /nothing 404", "GET /throw 500",
                                      "POST /echo 413", "POST /echo 413"}));
}

TEST_F(HttpServerTest, AThrowingHandlerIs500AndTheServerGoesOn) {
  HttpClient client(Url(server_));
  absl::StatusOr<HttpReply> r = client.Get("/throw");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(r->body, "internal error: boom\n");
  EXPECT_EQ(client.Post("/echo", "x")->status, 200);
}

// Nothing thrown reaches libmicrohttpd's C frames (std::terminate): not a non-std::exception from
// a handler, not an exception from the on_refused hook.
TEST_F(HttpServerTest, AnythingThrownIs500AndTheServerGoesOn) {
  HttpClient client(Url(server_));
  absl::StatusOr<HttpReply> r = client.Get("/throw-int");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(r->body, "internal error: unknown exception\n");
  EXPECT_EQ(Refused(), std::vector<std::string>{"GET /throw-int 500"});

  Server throwing_hook(
      ServerOptions{.on_refused = [](const Request&, int) { throw std::runtime_error("hook"); }});
  ASSERT_TRUE(throwing_hook.Start().ok());
  HttpClient hooked(Url(throwing_hook));
  r = hooked.Get("/nothing");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(r->body, "internal error\n");
  EXPECT_EQ(hooked.Get("/nothing")->status, 500);
}

TEST_F(HttpServerTest, BodiesOverTheLimitAre413WithOrWithoutALength) {
  HttpClient client(Url(server_));
  absl::StatusOr<HttpReply> r = client.Post("/echo", std::string(1024, 'x'));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);  // At the limit.
  r = client.Post("/echo", std::string(1025, 'x'));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(r->body, "request body too large\n");
  // Refused on its Content-Length, before it is sent: the client waits for 100 Continue. (A client
  // that sends a body at once may lose the 413 to the reset its unread body causes.)
  r = client.Post("/echo", std::string(8 << 20, 'x'), {{"Expect", "100-continue"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 413);
  // Chunked: no Content-Length to refuse up front, so the body is read and dropped.
  r = client.Post("/echo", std::string(5000, 'x'), {{"Transfer-Encoding", "chunked"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 413);
  r = client.Post("/echo", "small", {{"Transfer-Encoding", "chunked"}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "POST /echo small");
}

// A chunked body has no length to refuse up front: it is read and dropped to 1 MiB past the
// limit, then the connection closes.
TEST_F(HttpServerTest, AChunkedBodyFarOverTheLimitClosesTheConnection) {
  HttpClient client(Url(server_));
  EXPECT_FALSE(
      client.Post("/echo", std::string(3 << 20, 'x'), {{"Transfer-Encoding", "chunked"}}).ok());
  EXPECT_EQ(client.Post("/echo", "small")->status, 200);
}

// What libmicrohttpd logs while serving goes to stderr, through the throttle.
TEST_F(HttpServerTest, LogLinesGoToStderr) {
  ::testing::internal::CaptureStderr();
  // libmicrohttpd logs that the handler closed the connection.
  HttpClient(Url(server_))
      .Post("/echo", std::string(3 << 20, 'x'), {{"Transfer-Encoding", "chunked"}})
      .IgnoreError();
  server_.Stop();  // The server logs as it closes; its line is written once Stop returns.
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(
      absl::StartsWith(log, absl::StrCat("http server on 127.0.0.1:", server_.port(), ": ")))
      << log;
}

TEST(LogThrottleTest, WritesALineASecondAndCountsTheDropped) {
  LogThrottle throttle;
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_EQ(throttle.Admit(t0, "a"), "a");
  EXPECT_EQ(throttle.Admit(t0 + absl::Milliseconds(400), "b"), std::nullopt);
  EXPECT_EQ(throttle.Admit(t0 + absl::Milliseconds(999), "c"), std::nullopt);
  EXPECT_EQ(throttle.Admit(t0 + absl::Seconds(1), "d"), "d (2 lines before it dropped)");
  EXPECT_EQ(throttle.Admit(t0 + absl::Milliseconds(1500), "e"), std::nullopt);
  EXPECT_EQ(throttle.Admit(t0 + absl::Seconds(5), "f"), "f (1 line before it dropped)");
  EXPECT_EQ(throttle.Admit(t0 + absl::Seconds(7), "g"), "g");
}

// Stop lets a request in flight finish: its client gets the whole reply, and is told to not send
// another on the connection.
TEST_F(HttpServerTest, StopWaitsForRequestsInFlight) {
  Server server(ServerOptions{});
  std::atomic<bool> started{false};
  server.Route("GET", "/slow", [&](const Request&, Response& res) {
    started = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    res.body = "done\n";
  });
  ASSERT_TRUE(server.Start().ok());
  absl::StatusOr<HttpReply> r;
  std::thread caller([&, url = Url(server)] { r = HttpClient(url).Get("/slow"); });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const int port = server.port();
  server.Stop();
  caller.join();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "done\n");
  EXPECT_EQ(r->Header("connection"), "close");
  EXPECT_EQ(Exchange(port, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"), "");
}

// Every kind of request, answered, leaves nothing in flight: Stop does not wait, not even for an
// idle keep-alive connection.
TEST_F(HttpServerTest, StopWaitsForNothingWhenNoRequestIsInFlight) {
  HttpClient client(Url(server_));
  ASSERT_TRUE(client.Post("/echo", "fine").ok());
  ASSERT_TRUE(client.Get("/echo").ok());
  ASSERT_TRUE(client.Post("/nothing", "{}").ok());
  ASSERT_TRUE(client.Get("/throw").ok());
  ASSERT_TRUE(client.Post("/echo", std::string(8 << 10, 'x')).ok());
  ASSERT_TRUE(
      client.Post("/echo", std::string(5000, 'x'), {{"Transfer-Encoding", "chunked"}}).ok());
  ASSERT_TRUE(client.Get("/status").ok());
  const absl::Time start = absl::Now();
  server_.Stop();
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
}

// A slow request on one connection does not hold up another's.
TEST_F(HttpServerTest, ConnectionsAreServedAtOnce) {
  Server server(ServerOptions{});
  std::atomic<int> inside{0};
  std::atomic<bool> together{false};
  server.Route("GET", "/slow", [&](const Request&, Response&) {  // Waits for the other.
    ++inside;
    const absl::Time deadline = absl::Now() + absl::Seconds(5);
    while (inside.load() < 2 && absl::Now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (inside.load() == 2) together = true;
  });
  ASSERT_TRUE(server.Start().ok());
  std::vector<std::thread> callers;
  for (int i = 0; i < 2; ++i) {
    callers.emplace_back([&] { EXPECT_EQ(HttpClient(Url(server)).Get("/slow")->status, 200); });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_TRUE(together) << "one request was served only after the other";
}

// An empty host, as in Go's ":8888", is every interface.
TEST_F(HttpServerTest, AnEmptyHostIsEveryInterface) {
  Server server(ServerOptions{.host = ""});
  server.Route("GET", "/healthz", [](const Request&, Response& res) { res.body = "ok\n"; });
  absl::Status st = server.Start();
  ASSERT_TRUE(st.ok()) << st;
  absl::StatusOr<HttpReply> r = HttpClient(Url(server)).Get("/healthz");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "ok\n");
}

// The reason is libmicrohttpd's, and nothing but it.
TEST_F(HttpServerTest, AnAddressInUseSaysSo) {
  Server second(ServerOptions{.port = server_.port()});
  absl::Status st = second.Start();
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(st.message(),
            absl::StrCat("cannot listen on 127.0.0.1:", server_.port(), ": Failed to bind to port ",
                         server_.port(), ": Address already in use"));
}

// IPv6 listen addresses, where the machine has an IPv6 loopback.
class HttpServerIpv6Test : public ::testing::Test {
 protected:
  void SetUp() override {
    Server probe(ServerOptions{.host = "::1"});
    if (!probe.Start().ok()) GTEST_SKIP() << "no IPv6 loopback";
  }

  // Starts `server` with a /healthz route; what a client of `client_host` gets from it.
  static std::string Healthz(Server& server, const std::string& client_host) {
    server.Route("GET", "/healthz", [](const Request&, Response& res) { res.body = "ok\n"; });
    absl::Status st = server.Start();
    if (!st.ok()) return st.ToString();
    absl::StatusOr<HttpReply> r =
        HttpClient(absl::StrCat("http://", client_host, ":", server.port())).Get("/healthz");
    return r.ok() ? r->body : r.status().ToString();
  }
};

TEST_F(HttpServerIpv6Test, TheUnspecifiedAddressTakesIpv4ClientsToo) {
  Server server(ServerOptions{.host = "::"});
  EXPECT_EQ(Healthz(server, "127.0.0.1"), "ok\n");
}

TEST_F(HttpServerIpv6Test, AnEmptyHostTakesIpv6ClientsToo) {
  Server server(ServerOptions{.host = ""});
  EXPECT_EQ(Healthz(server, "[::1]"), "ok\n");
}

// As a URL writes it (http://[::1]:8888/).
TEST_F(HttpServerIpv6Test, AHostMayBeBracketed) {
  Server server(ServerOptions{.host = "[::1]"});
  EXPECT_EQ(Healthz(server, "[::1]"), "ok\n");
}

// A self-signed certificate for 127.0.0.1, made with the openssl command.
class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/phalanx-http-tls-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    const std::string make =
        absl::StrCat("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 ",
                     "-addext subjectAltName=IP:127.0.0.1 -keyout ", dir_, "/key.pem -out ", dir_,
                     "/cert.pem 2>/dev/null");
    ASSERT_EQ(std::system(make.c_str()), 0) << make;
  }
  void TearDown() override { std::system(absl::StrCat("rm -rf ", dir_).c_str()); }

  std::string dir_;
};

TEST_F(TlsTest, ServesHttpsWithTheGivenCertificate) {
  Server server(
      ServerOptions{.tls_cert_file = dir_ + "/cert.pem", .tls_key_file = dir_ + "/key.pem"});
  server.Route("GET", "/healthz", [](const Request&, Response& res) { res.body = "ok\n"; });
  absl::Status st = server.Start();
  ASSERT_TRUE(st.ok()) << st;
  const std::string base = absl::StrCat("https://127.0.0.1:", server.port());
  absl::StatusOr<HttpReply> r = HttpClient(base, dir_ + "/cert.pem").Get("/healthz");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "ok\n");
  // A client that does not trust the certificate is refused, and plain HTTP gets no reply.
  EXPECT_FALSE(HttpClient(base, "/etc/ssl/certs/ca-certificates.crt").Get("/healthz").ok());
  EXPECT_FALSE(HttpClient(Url(server)).Get("/healthz").ok());
}

TEST_F(TlsTest, UnreadableOrUnusableFilesAreErrors) {
  Server missing(
      ServerOptions{.tls_cert_file = dir_ + "/none.pem", .tls_key_file = dir_ + "/key.pem"});
  absl::Status st = missing.Start();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("tls_cert_file: cannot read"), std::string::npos) << st;
  std::ofstream(dir_ + "/junk.pem") << "not a key\n";
  Server junk(
      ServerOptions{.tls_cert_file = dir_ + "/cert.pem", .tls_key_file = dir_ + "/junk.pem"});
  st = junk.Start();
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(st.message().find("cannot listen on"), std::string::npos) << st;
  EXPECT_NE(st.message().find("GnuTLS failed to setup x509 certificate/key"), std::string::npos)
      << st;
  // The reason comes first: libmicrohttpd's last line only says TLS support failed.
  const std::string other_key = absl::StrCat(
      "openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out ", dir_, "/other.pem");
  ASSERT_EQ(std::system(absl::StrCat(other_key, " 2>/dev/null").c_str()), 0) << other_key;
  Server mismatched(
      ServerOptions{.tls_cert_file = dir_ + "/cert.pem", .tls_key_file = dir_ + "/other.pem"});
  st = mismatched.Start();
  EXPECT_EQ(st.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(st.message().find("The certificate and the given key do not match"), std::string::npos)
      << st;
}

}  // namespace
}  // namespace phalanx::http
