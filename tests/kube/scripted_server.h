// A loopback HTTP/1.1 server for protocol unit tests of kube::Client and kube::Informer: a script
// answers each request, and responses stream chunk by chunk, so tests can produce what a real
// apiserver does only rarely (410 Gone mid-watch, 5xx, lines split across reads).
#ifndef PHALANX_TESTS_KUBE_SCRIPTED_SERVER_H_
#define PHALANX_TESTS_KUBE_SCRIPTED_SERVER_H_

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/time.h"

namespace phalanx::testing {

struct ScriptedRequest {
  std::string method;
  std::string target;                // Path and query.
  std::vector<std::string> headers;  // "Name: value".
  std::string body;
};

struct ScriptedResponse {
  int code = 200;
  std::vector<std::string> chunks;             // Written one at a time, a few milliseconds apart.
  absl::Duration hold = absl::ZeroDuration();  // Keeps the stream open after the chunks.
};

class ScriptedServer {
 public:
  using Script = std::function<ScriptedResponse(const ScriptedRequest&)>;

  explicit ScriptedServer(Script script);
  ~ScriptedServer();  // Ends held streams and joins every thread.

  std::string url() const;  // "http://127.0.0.1:<port>"
  std::vector<ScriptedRequest> requests() const;

 private:
  void Accept();
  void Serve(int fd);

  Script script_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<ScriptedRequest> requests_;  // Guarded by mu_.
  std::vector<std::thread> connections_;   // Guarded by mu_.
  std::thread acceptor_;
};

}  // namespace phalanx::testing

#endif  // PHALANX_TESTS_KUBE_SCRIPTED_SERVER_H_
