// A keep-alive HTTP client for tests and benchmarks (libcurl): every call reuses one connection.
#ifndef PHALANX_TESTS_TESTING_HTTP_CLIENT_H_
#define PHALANX_TESTS_TESTING_HTTP_CLIENT_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace phalanx::testing {

struct HttpReply {
  long status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // Names lowercased.

  // The header's value, empty when absent.
  std::string Header(const std::string& lowercase_name) const;
};

class HttpClient {
 public:
  // `base` is "http://host:port" or "https://host:port"; `ca_file`, when set, is the PEM the
  // server's certificate must chain to.
  explicit HttpClient(std::string base, std::string ca_file = "");
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Unavailable when no reply arrives.
  absl::StatusOr<HttpReply> Get(const std::string& path,
                                const std::map<std::string, std::string>& headers = {});
  absl::StatusOr<HttpReply> Post(const std::string& path, const std::string& body,
                                 const std::map<std::string, std::string>& headers = {});

 private:
  absl::StatusOr<HttpReply> Send(const std::string& path, const std::string* body,
                                 const std::map<std::string, std::string>& headers);

  std::string base_;
  std::string ca_file_;
  void* curl_;
};

}  // namespace phalanx::testing

#endif  // PHALANX_TESTS_TESTING_HTTP_CLIENT_H_
