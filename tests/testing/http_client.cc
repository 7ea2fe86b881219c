// A keep-alive HTTP client for tests and benchmarks (see http_client.h).
#include "tests/testing/http_client.h"

#include <curl/curl.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace phalanx::testing {
namespace {

size_t AppendBody(char* data, size_t size, size_t count, void* out) {
  static_cast<HttpReply*>(out)->body.append(data, size * count);
  return size * count;
}

// Keeps "name: value" lines; a new status line (after a 100 Continue) starts over.
size_t AppendHeader(char* data, size_t size, size_t count, void* out) {
  auto* reply = static_cast<HttpReply*>(out);
  absl::string_view line(data, size * count);
  if (absl::StartsWith(line, "HTTP/")) reply->headers.clear();
  size_t colon = line.find(':');
  if (colon != absl::string_view::npos) {
    reply->headers[absl::AsciiStrToLower(line.substr(0, colon))] =
        std::string(absl::StripAsciiWhitespace(line.substr(colon + 1)));
  }
  return size * count;
}

}  // namespace

std::string HttpReply::Header(const std::string& lowercase_name) const {
  auto it = headers.find(lowercase_name);
  return it == headers.end() ? "" : it->second;
}

HttpClient::HttpClient(std::string base, std::string ca_file)
    : base_(std::move(base)), ca_file_(std::move(ca_file)), curl_(curl_easy_init()) {}

HttpClient::~HttpClient() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

absl::StatusOr<HttpReply> HttpClient::Get(const std::string& path,
                                          const std::map<std::string, std::string>& headers) {
  return Send(path, nullptr, headers);
}

absl::StatusOr<HttpReply> HttpClient::Post(const std::string& path, const std::string& body,
                                           const std::map<std::string, std::string>& headers) {
  return Send(path, &body, headers);
}

absl::StatusOr<HttpReply> HttpClient::Send(const std::string& path, const std::string* body,
                                           const std::map<std::string, std::string>& headers) {
  CURL* curl = static_cast<CURL*>(curl_);
  curl_easy_reset(curl);  // Keeps the open connection.
  HttpReply reply;
  const std::string url = base_ + path;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &AppendBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &AppendHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &reply);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 30L);
  curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
  if (!ca_file_.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, ca_file_.c_str());
  curl_slist* list = nullptr;
  for (const auto& [name, value] : headers) {
    list = curl_slist_append(list, absl::StrCat(name, ": ", value).c_str());
  }
  if (body != nullptr) {
    list = curl_slist_append(list, "Content-Type: application/json");
    list = curl_slist_append(list, "Expect:");  // Send the body at once, as Go's client does.
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, list);
  CURLcode code = curl_easy_perform(curl);
  curl_slist_free_all(list);
  if (code != CURLE_OK) {
    return absl::UnavailableError(absl::StrCat(url, ": ", curl_easy_strerror(code)));
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &reply.status);
  return reply;
}

}  // namespace phalanx::testing
