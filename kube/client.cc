// libcurl transport for Client: a pool of easy handles (one per concurrent request; each keeps its
// connections alive), bearer / client-certificate auth, paging and newline-delimited watch streams.
#include "kube/client.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "kube/json.h"
#include "kube/status.h"

namespace phalanx::kube {
namespace {

constexpr size_t kMaxIdleHandles = 16;
constexpr absl::Duration kTokenRefresh = absl::Minutes(1);
constexpr int64_t kListPageSize = 500;
// A watch whose server-side timeout passed this long ago is considered dead.
constexpr absl::Duration kWatchSlack = absl::Seconds(30);
// TCP keepalive probes start after this much silence and repeat this often: with the kernel's 9
// probes a dead peer is noticed in about a minute (curl's 60 s defaults take 10 minutes).
constexpr long kKeepaliveIdleSeconds = 15;     // NOLINT(runtime/int): libcurl's type.
constexpr long kKeepaliveIntervalSeconds = 5;  // NOLINT(runtime/int)

// Percent-encodes all but RFC 3986's unreserved characters.
std::string QueryEscape(absl::string_view s) {
  constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : s) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(c);
    } else {
      auto byte = static_cast<unsigned char>(c);
      out += {'%', kHex[byte >> 4], kHex[byte & 15]};
    }
  }
  return out;
}

// Appends "&key=value" (or "?key=value" first) when value is not empty.
void AddParam(std::string& url, absl::string_view key, absl::string_view value) {
  if (value.empty()) return;
  absl::StrAppend(&url, url.find('?') == std::string::npos ? "?" : "&", key, "=",
                  QueryEscape(value));
}

// The collection's path.
std::string Path(const Resource& r, absl::string_view ns) {
  std::string path(r.api);
  if (r.namespaced && !ns.empty()) absl::StrAppend(&path, "/namespaces/", ns);
  absl::StrAppend(&path, "/", r.plural);
  return path;
}

// One object's path. An empty name is an error: the collection's path in its place would make a
// DELETE delete every object of the collection.
absl::StatusOr<std::string> Path(const Resource& r, absl::string_view ns, absl::string_view name) {
  if (name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("name: required for one ", r.plural, " object"));
  }
  return absl::StrCat(Path(r, ns), "/", name);
}

absl::string_view ContentType(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
  }
  return "";
}

// Transfer state shared with libcurl's callbacks.
struct Transfer {
  CURL* curl = nullptr;
  const std::function<bool(absl::string_view)>* sink = nullptr;
  const std::atomic<bool>* stop = nullptr;
  absl::Duration idle_timeout = absl::InfiniteDuration();
  std::string body;            // The response, or the error body of a streamed request.
  bool stopped_by_us = false;  // The sink or `stop` ended the transfer.
  bool idle = false;           // Nothing arrived for idle_timeout.
  curl_off_t received = 0;     // Body bytes, as of the last progress call.
  std::chrono::steady_clock::time_point last_received = std::chrono::steady_clock::now();

  // Sets and returns `idle`, given the body bytes received so far.
  bool CheckIdle(curl_off_t now_received) {
    auto now = std::chrono::steady_clock::now();
    if (now_received != received) {
      received = now_received;
      last_received = now;
    }
    idle = now - last_received > absl::ToChronoNanoseconds(idle_timeout);
    return idle;
  }
};

size_t OnWrite(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  long code = 0;  // NOLINT(runtime/int): libcurl's type.
  curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
  if (t->sink == nullptr || code < 200 || code >= 300) {
    t->body.append(data, size * n);
  } else if (!(*t->sink)(absl::string_view(data, size * n))) {
    t->stopped_by_us = true;
    return 0;
  }
  return size * n;
}

// Called about once a second, and as data arrives; non-zero aborts the transfer.
int OnProgress(void* user, curl_off_t, curl_off_t received, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (t->stop != nullptr && t->stop->load()) {
    t->stopped_by_us = true;
    return 1;
  }
  return t->CheckIdle(received) ? 1 : 0;
}

// What a finished transfer returns. One that we ended (`stop`, the sink) is OK even before a
// response, and so is a 2xx stream that went idle (as if the server had closed it).
absl::StatusOr<std::string> Outcome(absl::string_view what, CURLcode rc, long code,  // NOLINT
                                    const char* error, Transfer& t) {
  if (t.stopped_by_us) return std::move(t.body);
  if (rc != CURLE_OK && !t.idle) {
    std::string detail = error[0] != '\0' ? error : curl_easy_strerror(rc);
    if (rc == CURLE_OPERATION_TIMEDOUT) {
      return absl::DeadlineExceededError(absl::StrCat(what, ": ", detail));
    }
    return absl::UnavailableError(absl::StrCat(what, ": ", detail));
  }
  if (code == 0) {
    return absl::UnavailableError(
        absl::StrCat(what, ": no response",
                     t.idle ? absl::StrCat(" in ", absl::FormatDuration(t.idle_timeout)) : ""));
  }
  if (code < 200 || code >= 300) return ResponseError(what, static_cast<int>(code), t.body);
  return std::move(t.body);
}

// Whether `pod_json` (a v1 Pod) is bound to `node` and, when `uid` is given, has that uid.
bool IsBoundTo(const std::string& pod_json, absl::string_view node, absl::string_view uid) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(pod_json).get(root) != simdjson::SUCCESS) return false;
  absl::StatusOr<JsonObject> pod = JsonObject::Of(root, "");
  if (!pod.ok()) return false;
  absl::StatusOr<JsonObject> spec = pod->Object("spec"), meta = pod->Object("metadata");
  if (!spec.ok() || !meta.ok()) return false;
  absl::StatusOr<std::string_view> bound = spec->String("nodeName");
  absl::StatusOr<std::string_view> got_uid = meta->String("uid");
  return bound.ok() && got_uid.ok() && Sv(*bound) == node && (uid.empty() || Sv(*got_uid) == uid);
}

// The URL base, and curl's CONNECT_TO entry, that make curl check the certificate of `server`
// ("https://host[:port][/prefix]", host perhaps a bracketed IPv6 address) against `name` while it
// connects to host.
std::pair<std::string, std::string> ServerNameOverride(absl::string_view server,
                                                       absl::string_view name) {
  const absl::string_view rest = absl::StripPrefix(server, "https://");
  const size_t slash = std::min(rest.find('/'), rest.size());
  const absl::string_view authority = rest.substr(0, slash);
  const size_t colon = authority.rfind(':');
  const bool has_port =
      colon != absl::string_view::npos && authority.find(']', colon) == absl::string_view::npos;
  const absl::string_view host = has_port ? authority.substr(0, colon) : authority;
  const absl::string_view port = has_port ? authority.substr(colon + 1) : "443";
  return {absl::StrCat("https://", name, ":", port, rest.substr(slash)),
          absl::StrCat(name, ":", port, ":", host, ":", port)};
}

}  // namespace

struct Client::State {
  // config.server, or with tls_server_name as its host; then the connect-to mapping from that name
  // to the server's own host (curl's CONNECT_TO), so that the certificate is checked against it.
  std::string base_url;
  curl_slist* connect_to = nullptr;
  std::mutex mu;
  std::vector<CURL*> idle;  // Guarded by mu.
  std::string token;        // Guarded by mu.
  absl::Time token_read = absl::InfinitePast();
};

struct Client::Request {
  absl::string_view method;
  std::string path;  // With the query string.
  absl::string_view content_type;
  absl::string_view body;
  absl::Duration timeout;
  // Streaming: receives the 2xx body chunk by chunk; false ends the transfer.
  std::function<bool(absl::string_view)> sink;
  const std::atomic<bool>* stop = nullptr;
  absl::Duration idle_timeout = absl::InfiniteDuration();  // See Transfer::idle.
};

Client::Client(Config config, ClientOptions options)
    : config_(std::move(config)), options_(std::move(options)), state_(std::make_unique<State>()) {
  static std::once_flag curl_init;
  std::call_once(curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  state_->token = config_.token;
  state_->base_url = config_.server;
  if (!config_.tls_server_name.empty()) {
    auto [base, connect_to] = ServerNameOverride(config_.server, config_.tls_server_name);
    state_->base_url = std::move(base);
    state_->connect_to = curl_slist_append(nullptr, connect_to.c_str());
  }
}

Client::~Client() {
  for (CURL* curl : state_->idle) curl_easy_cleanup(curl);
  curl_slist_free_all(state_->connect_to);
}

std::string Client::BearerToken() {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (!config_.token_file.empty() && absl::Now() - state_->token_read > kTokenRefresh) {
    absl::StatusOr<std::string> token = ReadFile(config_.token_file);
    if (token.ok()) state_->token = std::string(absl::StripAsciiWhitespace(*token));
    state_->token_read = absl::Now();
  }
  return state_->token;
}

absl::StatusOr<std::string> Client::Send(const Request& request) {
  CURL* curl = nullptr;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (!state_->idle.empty()) {
      curl = state_->idle.back();
      state_->idle.pop_back();
    }
  }
  if (curl == nullptr) curl = curl_easy_init();
  if (curl == nullptr) return absl::InternalError("curl_easy_init failed");

  const std::string url = state_->base_url + request.path;
  const std::string what = absl::StrCat(request.method, " ", request.path);
  std::string token = BearerToken();
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Accept: application/json");
  headers = curl_slist_append(headers, "Expect:");
  if (!token.empty()) {
    headers = curl_slist_append(headers, absl::StrCat("Authorization: Bearer ", token).c_str());
  }
  if (!request.content_type.empty()) {
    headers =
        curl_slist_append(headers, absl::StrCat("Content-Type: ", request.content_type).c_str());
  }
  auto blob = [](const std::string& pem) {
    return curl_blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_NOCOPY};
  };
  curl_blob ca = blob(config_.ca_pem), cert = blob(config_.client_cert_pem),
            key = blob(config_.client_key_pem);
  char error[CURL_ERROR_SIZE] = "";
  Transfer transfer{curl, request.sink ? &request.sink : nullptr, request.stop,
                    request.idle_timeout};

  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, std::string(request.method).c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, options_.user_agent.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPIDLE, kKeepaliveIdleSeconds);
  curl_easy_setopt(curl, CURLOPT_TCP_KEEPINTVL, kKeepaliveIntervalSeconds);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(absl::ToInt64Milliseconds(options_.connect_timeout)));
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS,
                   static_cast<long>(absl::ToInt64Milliseconds(request.timeout)));
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, OnWrite);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, &transfer);
  if (!request.body.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
  }
  if (!config_.ca_pem.empty()) {  // The cluster's CA alone: not also the system's CA file or dir.
    curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &ca);
    curl_easy_setopt(curl, CURLOPT_CAINFO, nullptr);
    curl_easy_setopt(curl, CURLOPT_CAPATH, nullptr);
  }
  if (!config_.client_cert_pem.empty()) {
    curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(curl, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
    curl_easy_setopt(curl, CURLOPT_SSLKEY_BLOB, &key);
  }
  if (config_.insecure_skip_tls_verify) {
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (state_->connect_to != nullptr) curl_easy_setopt(curl, CURLOPT_CONNECT_TO, state_->connect_to);
  if (!config_.proxy_url.empty()) curl_easy_setopt(curl, CURLOPT_PROXY, config_.proxy_url.c_str());

  CURLcode rc = curl_easy_perform(curl);
  long code = 0;  // NOLINT(runtime/int): libcurl's type.
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
  curl_slist_free_all(headers);
  curl_easy_reset(curl);  // Keeps live connections for the next request.
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->idle.size() < kMaxIdleHandles) {
      state_->idle.push_back(curl);
      curl = nullptr;
    }
  }
  if (curl != nullptr) curl_easy_cleanup(curl);

  return Outcome(what, rc, code, error, transfer);
}

absl::StatusOr<std::string> Client::Get(const Resource& r, absl::string_view ns,
                                        absl::string_view name) {
  KUBE_ASSIGN_OR_RETURN(std::string path, Path(r, ns, name));
  return Send({"GET", std::move(path), "", "", options_.request_timeout});
}

absl::Status Client::GetStream(const Resource& r, absl::string_view ns, absl::string_view name,
                               absl::string_view subresource,
                               const std::vector<std::pair<std::string, std::string>>& params,
                               absl::Duration timeout, const std::atomic<bool>* stop,
                               const std::function<bool(absl::string_view)>& sink) {
  KUBE_ASSIGN_OR_RETURN(std::string path, Path(r, ns, name));
  absl::StrAppend(&path, "/", subresource);
  for (const auto& [key, value] : params) AddParam(path, key, value);
  Request request{"GET", std::move(path), "", "", timeout};
  request.stop = stop;
  request.sink = sink;
  return Send(request).status();
}

absl::StatusOr<std::string> Client::List(const Resource& r, absl::string_view ns,
                                         const ListOptions& options) {
  std::string path = Path(r, ns);
  AddParam(path, "labelSelector", options.label_selector);
  AddParam(path, "fieldSelector", options.field_selector);
  AddParam(path, "resourceVersion", options.resource_version);
  if (options.limit > 0) AddParam(path, "limit", absl::StrCat(options.limit));
  AddParam(path, "continue", options.continue_token);
  return Send({"GET", std::move(path), "", "", options_.request_timeout});
}

absl::StatusOr<std::string> Client::ListAll(
    const Resource& r, absl::string_view ns, ListOptions options,
    const std::function<absl::Status(simdjson::dom::element item)>& on_item) {
  if (options.limit <= 0) options.limit = kListPageSize;
  simdjson::dom::parser parser;
  while (true) {
    KUBE_ASSIGN_OR_RETURN(std::string page, List(r, ns, options));
    simdjson::dom::element doc;
    if (auto err = parser.parse(page).get(doc); err != simdjson::SUCCESS) {
      return absl::InternalError(
          absl::StrCat("list ", r.plural, ": ", simdjson::error_message(err)));
    }
    KUBE_ASSIGN_OR_RETURN(JsonObject list, JsonObject::Of(doc, std::string(r.plural)));
    KUBE_ASSIGN_OR_RETURN(JsonObject meta, list.Object("metadata"));
    KUBE_ASSIGN_OR_RETURN(std::string_view version, meta.String("resourceVersion"));
    KUBE_ASSIGN_OR_RETURN(std::string_view next, meta.String("continue"));
    simdjson::dom::array items;
    if (std::optional<simdjson::dom::element> e = list.Get("items")) {
      if (e->get(items) != simdjson::SUCCESS) {
        return absl::InternalError(absl::StrCat("list ", r.plural, ": items is not an array"));
      }
      for (simdjson::dom::element item : items) KUBE_RETURN_IF_ERROR(on_item(item));
    }
    if (next.empty()) return std::string(version);
    options.continue_token = std::string(next);
    options.resource_version.clear();
  }
}

WatchResult Client::Watch(
    const Resource& r, absl::string_view ns, const WatchOptions& options,
    const std::function<bool(EventType type, simdjson::dom::element object)>& on_event) {
  std::string path = Path(r, ns);
  AddParam(path, "watch", "true");
  AddParam(path, "allowWatchBookmarks", "true");
  AddParam(path, "labelSelector", options.label_selector);
  AddParam(path, "fieldSelector", options.field_selector);
  AddParam(path, "resourceVersion", options.resource_version);
  AddParam(path, "timeoutSeconds", absl::StrCat(options.timeout_seconds));

  WatchResult result{absl::OkStatus(), options.resource_version};
  const absl::Time start = absl::Now();
  simdjson::dom::parser parser;
  std::string pending;  // A partial line.
  const std::string what = absl::StrCat("watch ", r.plural);
  // One event: true to go on. Sets result.status on a malformed event or an ERROR event.
  auto handle = [&](absl::string_view line) {
    simdjson::dom::element event;
    std::string_view type;
    simdjson::dom::element object;
    if (parser.parse(line.data(), line.size()).get(event) != simdjson::SUCCESS ||
        event["type"].get(type) != simdjson::SUCCESS ||
        event["object"].get(object) != simdjson::SUCCESS) {
      result.status = absl::InternalError(absl::StrCat(what, ": malformed event"));
      return false;
    }
    if (type == "ERROR") {
      result.status = StatusObjectError(what, object);
      return false;
    }
    ++result.events;
    std::string_view version;
    if (object["metadata"]["resourceVersion"].get(version) == simdjson::SUCCESS) {
      result.resource_version = std::string(version);
    }
    if (type == "ADDED") return on_event(EventType::kAdded, object);
    if (type == "MODIFIED") return on_event(EventType::kModified, object);
    if (type == "DELETED") return on_event(EventType::kDeleted, object);
    return true;  // BOOKMARK, or a type this client does not know.
  };
  Request request{"GET", std::move(path), "", "",
                  absl::Seconds(options.timeout_seconds) + kWatchSlack};
  request.stop = options.stop;
  request.idle_timeout = options_.watch_idle_timeout;
  request.sink = [&](absl::string_view chunk) {
    pending.append(chunk.data(), chunk.size());
    size_t start = 0;
    for (size_t end; (end = pending.find('\n', start)) != std::string::npos; start = end + 1) {
      absl::string_view line(pending.data() + start, end - start);
      if (!absl::StripAsciiWhitespace(line).empty() && !handle(line)) return false;
    }
    pending.erase(0, start);
    return true;
  };
  absl::StatusOr<std::string> sent = Send(request);
  if (!sent.ok()) result.status = sent.status();
  result.lasted = absl::Now() - start;
  return result;
}

absl::StatusOr<std::string> Client::Create(const Resource& r, absl::string_view ns,
                                           absl::string_view json) {
  return Send({"POST", Path(r, ns), "application/json", json, options_.request_timeout});
}

absl::StatusOr<std::string> Client::Patch(const Resource& r, absl::string_view ns,
                                          absl::string_view name, PatchType type,
                                          absl::string_view patch, absl::string_view subresource) {
  KUBE_ASSIGN_OR_RETURN(std::string path, Path(r, ns, name));
  if (!subresource.empty()) absl::StrAppend(&path, "/", subresource);
  return Send({"PATCH", std::move(path), ContentType(type), patch, options_.request_timeout});
}

absl::Status Client::Delete(const Resource& r, absl::string_view ns, absl::string_view name,
                            const DeleteOptions& options) {
  std::string body = R"({"kind":"DeleteOptions","apiVersion":"v1")";
  if (options.grace_period_seconds) {
    absl::StrAppend(&body, ",\"gracePeriodSeconds\":", *options.grace_period_seconds);
  }
  if (!options.uid_precondition.empty()) {
    absl::StrAppend(
        &body, ",\"preconditions\":{\"uid\":", EncodeJsonString(options.uid_precondition), "}");
  }
  body += "}";
  KUBE_ASSIGN_OR_RETURN(std::string path, Path(r, ns, name));
  return Send({"DELETE", std::move(path), "application/json", body, options_.request_timeout})
      .status();
}

absl::Status Client::Bind(absl::string_view ns, absl::string_view pod, absl::string_view node,
                          absl::string_view uid) {
  std::string body = absl::StrCat(
      R"({"apiVersion":"v1","kind":"Binding","metadata":{"name":)", EncodeJsonString(pod),
      ",\"namespace\":", EncodeJsonString(ns),
      uid.empty() ? "" : absl::StrCat(",\"uid\":", EncodeJsonString(uid)),
      R"(},"target":{"apiVersion":"v1","kind":"Node","name":)", EncodeJsonString(node), "}}");
  KUBE_ASSIGN_OR_RETURN(std::string path, Path(kPods, ns, pod));
  path += "/binding";
  absl::Status s =
      Send({"POST", std::move(path), "application/json", body, options_.request_timeout}).status();
  if (!absl::IsAborted(s)) return s;
  // 409: the pod is bound, or is not the pod `uid` names. Bound to this node is success: libcurl
  // sends a request again when the connection it reused died before any answer, and the first
  // send may have bound the pod.
  absl::StatusOr<std::string> current = Get(kPods, ns, pod);
  return current.ok() && IsBoundTo(*current, node, uid) ? absl::OkStatus() : s;
}

}  // namespace phalanx::kube
