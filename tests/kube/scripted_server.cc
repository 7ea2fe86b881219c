// Sockets, request parsing and chunked responses for ScriptedServer.
#include "tests/kube/scripted_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace phalanx::testing {
namespace {

bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

ScriptedServer::ScriptedServer(Script script) : script_(std::move(script)) {
  listener_ = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (listener_ < 0 || bind(listener_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      listen(listener_, 16) != 0 ||
      getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::abort();
  }
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { Accept(); });
}

ScriptedServer::~ScriptedServer() {
  stop_ = true;
  acceptor_.join();
  close(listener_);
  std::vector<std::thread> connections;
  {
    std::lock_guard<std::mutex> lock(mu_);
    connections.swap(connections_);
  }
  for (std::thread& t : connections) t.join();
}

std::string ScriptedServer::url() const { return absl::StrCat("http://127.0.0.1:", port_); }

std::vector<ScriptedRequest> ScriptedServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void ScriptedServer::Accept() {
  while (!stop_) {
    pollfd p{listener_, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    int fd = accept(listener_, nullptr, nullptr);
    if (fd < 0) continue;
    std::lock_guard<std::mutex> lock(mu_);
    connections_.emplace_back([this, fd] { Serve(fd); });
  }
}

void ScriptedServer::Serve(int fd) {
  std::string in;
  char buf[4096];
  size_t header_end;
  while ((header_end = in.find("\r\n\r\n")) == std::string::npos) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      close(fd);
      return;
    }
    in.append(buf, static_cast<size_t>(n));
  }
  ScriptedRequest request;
  std::vector<std::string> lines = absl::StrSplit(in.substr(0, header_end), "\r\n");
  std::vector<std::string> first = absl::StrSplit(lines[0], ' ');
  request.method = first[0];
  request.target = first.size() > 1 ? first[1] : "";
  size_t length = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    request.headers.push_back(lines[i]);
    absl::string_view line = lines[i];
    if (absl::StartsWithIgnoreCase(line, "content-length:")) {
      (void)absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(15)), &length);
    }
  }
  request.body = in.substr(header_end + 4);
  while (request.body.size() < length) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    request.body.append(buf, static_cast<size_t>(n));
  }
  ScriptedResponse response = script_(request);
  {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(std::move(request));
  }
  bool ok = SendAll(fd, absl::StrCat("HTTP/1.1 ", response.code, " Scripted\r\n",
                                     "Content-Type: application/json\r\n",
                                     "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"));
  for (const std::string& chunk : response.chunks) {
    if (!ok) break;
    ok = SendAll(fd, absl::StrFormat("%x\r\n%s\r\n", chunk.size(), chunk));
    absl::SleepFor(absl::Milliseconds(10));
  }
  for (absl::Time end = absl::Now() + response.hold; ok && !stop_ && absl::Now() < end;) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  if (ok) SendAll(fd, "0\r\n\r\n");
  close(fd);
}

}  // namespace phalanx::testing
